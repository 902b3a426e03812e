"""Benchmarks of the engines (``patchassoc bench``), kept apart from the library: timings are
measured here and printed, never asserted."""
