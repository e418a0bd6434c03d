"""Reading the files of profiles/: vessel profiles and weather presets, into the core's
frozen records."""
