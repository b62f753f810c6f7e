"""Benchmarks of connect-plugin: each module measures against its reference in one run."""
