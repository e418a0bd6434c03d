"""Reading the files of profiles/: vessel profiles and weather presets, into the core's
frozen records."""

from pathlib import Path

from hild.config import FileKind

BENCH_DIR = Path(__file__).resolve().parents[2] / "profiles" / "bench"  # the built-in benches
BENCHES = FileKind("bench", "name", BENCH_DIR, builtin="bench")
