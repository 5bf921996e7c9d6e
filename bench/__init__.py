"""Benchmarks that print ratios against peers (never timed assertions): `python -m bench`."""
