"""Device kinds: what each emulated device is (its role), by the type name device files give."""
