"""Benchmark scenarios: one module per scenario, discovered by bench/run.py.

Contract of a scenario module `bench/scenarios/<name>.py`:

    DESCRIPTION = "one line shown by `python -m bench.run --list`"
    DEFAULT = True          # optional: False keeps it out of the default run (name it to run it)
    ORDER = 50              # optional: lower runs first (properties is 10)

    def run(bench: bench.lib.Bench) -> list[bench.lib.Result]:
        ...

What `bench` offers (bench/lib.py):
- `bench.seed_ctx(env_id=None)` -> a machine Ctx bound to the throwaway PostgreSQL database as
  the service role; seed through pms.services with it (one env per scenario keeps them apart).
- `bench.app()` -> the service under gunicorn (`.base_url`), started once per run;
  `bench.headers(env_id, scopes=None)` -> Authorization + X-Platform-Env-Id for that env.
- `bench.wrk(url, method=, path=, headers=, body_template=, unique=, connections=)` -> the median
  Measurement of `bench.runs` wrk runs after a warm-up; `{{n}}` in `body_template` becomes a
  unique token per request, `unique=True` adds a fresh Idempotency-Key per request;
  `script=<path>` runs your own Lua script instead (it may `dofile()` bench/wrk/driver.lua,
  wrap its `request()`, and must keep the driver's `done()`, which prints the BENCHJSON line).
- `bench.count(calls, warmup=)` -> statements and round trips per request of
  `bench.statements.Call`s sent one by one through the real app in-process; merge
  `counts.extra()` into the Measurement's `extra` and the table shows them.
- `bench.repeat(fn, runs=None)` -> median of a custom measuring function returning Measurement.
- `bench.baseline("bare_falcon" | "pgbench_select_only" | "pgbench_tpcb_like")` -> a Result
  measured once per run (call it so it is measured and printed; then name it as `baseline=`).
- `bench.db.owner_url` / `.app_url`, `bench.settings`, `bench.duration`, `bench.runs`,
  `bench.connections`, `bench.broker_url` (the service's PMS_BROKER_URL, `--broker`),
  `bench.log(msg)`.
- `bench.server(target, env=...)`: another WSGI target under the same gunicorn settings.

Return `Result(name, measurement, baseline=<a baseline or another result's name>, goal=<min
ratio>)`; for goals that are not ratios set `goal_text` and `passed`. A scenario that measures
its own baseline (e.g. a raw pika publisher) returns it as a Result too and names it.
"""
