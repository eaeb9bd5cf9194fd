"""Benchmarks (`make bench` = `python -m bench.run [scenario ...]`): the service under gunicorn on
a throwaway PostgreSQL database, driven by wrk, beside baselines measured in the same run.
Results print as a table and are written to bench/out/ as JSON. See bench/scenarios/__init__.py
for how to add a scenario."""
