"""Online, per-session trajectory detectors and their registry."""
