"""Fault tests at full length: `make chaos` (pytest -m chaos)."""
