"""`python -m bench.run [scenario ...]`: run all default scenarios (or the named ones), print a
table with the medians and the ratios to the baselines, and write bench/out/bench-<time>.json
(and bench/out/latest.json). Options: --duration, --runs, --connections, --threads, --workers,
--gunicorn-threads, --worker-class, --pgbouncer-pool, --list, --keep-db.

Every line shows, beside the rate and latencies, the CPU per request of the server (gunicorn
master and workers) and of the database (the bench database's backends, and PgBouncer in its
scenario), sampled from /proc around each run (bench/cpu.py), and the statements and round trips
per request, counted exactly in a separate short in-process pass (bench/statements.py). The
`floor` scenario books the same stay by hand (bench/floor_app.py) and reports the service's
booking CPU over the floor's. The default run (3 runs x 5 s per figure) takes about 6 minutes on
the 2-core box; `--runs 5 --duration 10` for steadier figures.

Besides the modules in bench/scenarios, the built-in scenario `pgbouncer` (last) measures the
booking and `GET /v1/properties/{id}` through PgBouncer in transaction mode beside direct, in
alternating runs (direct, pooled, direct, ...), and reports pooled/direct and the ratios to the
same-run baselines."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import shutil
import signal
import subprocess
import sys
import time
import traceback
import uuid
from types import ModuleType, SimpleNamespace
from typing import Any

from bench import lib, scenarios


def discover() -> dict[str, ModuleType]:
    """Every importable module in bench/scenarios with a `run` function, in ORDER."""
    found: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(scenarios.__path__):
        try:
            module = importlib.import_module(f"bench.scenarios.{info.name}")
        except Exception as exc:  # noqa: BLE001 - one broken scenario must not stop the others
            print(f"! scenario {info.name} does not import: {exc}", file=sys.stderr)
            continue
        if callable(getattr(module, "run", None)):
            found[info.name] = module
    found["pgbouncer"] = PGBOUNCER  # type: ignore[assignment]
    return dict(sorted(found.items(), key=lambda kv: (getattr(kv[1], "ORDER", 50), kv[0])))


def run_through_pgbouncer(bench: lib.Bench) -> list[lib.Result]:
    """Bookings and property reads through PgBouncer (transaction mode) beside direct."""
    from bench.scenarios import properties, reservations

    bench.baseline("pgbench_tpcb_like")
    env_id = uuid.uuid4()
    property_id = properties.seed_property(bench, env_id)
    hotel_id, plan_id, type_ids, today = reservations.seed_hotel(bench, env_id)
    direct = bench.app()
    headers = bench.headers(env_id)
    booking = json.dumps({"room_type_id": "{{rt}}", "rate_plan_id": plan_id,
                          "arrival_date": "{{arr}}", "departure_date": "{{dep}}", "adults": 2,
                          "guest": {"first_name": "Ada", "last_name": "Pooled{{n}}"}})
    driver = reservations._driver(type_ids, today)
    get_path = f"/v1/properties/{property_id}"
    book_path = f"/v1/properties/{hotel_id}/reservations"
    with bench.pooled_app() as pooled:
        def get(srv: lib.Server) -> lib.Measurement:
            return bench.wrk_once(srv.base_url, path=get_path, headers=headers)

        def book(srv: lib.Server) -> lib.Measurement:
            return bench.wrk_once(srv.base_url, method="POST", path=book_path, headers=headers,
                                  body_template=booking, unique=True, script=driver)

        for srv in (direct, pooled):  # warm both (connections, caches)
            bench.wrk_once(srv.base_url, path=get_path, headers=headers,
                           duration=bench.warmup or 1)
        bench.log("GET /v1/properties/{id}: direct and through PgBouncer, alternating ...")
        get_direct, get_pooled, get_ratio = bench.paired(lambda: get(direct), lambda: get(pooled))
        bench.log("POST reservation: direct and through PgBouncer, alternating ...")
        book_direct, book_pooled, book_ratio = bench.paired(lambda: book(direct),
                                                            lambda: book(pooled))
    # statements and round trips do not depend on the pooler: counted once, direct, in-process
    from bench.statements import Call

    read = Call("GET", get_path, None, headers)
    get_counts = bench.count([read] * 5, warmup=[read]).extra()
    calls = reservations.booking_calls(hotel_id, plan_id, type_ids, today, headers, 8)
    book_counts = bench.count(calls[2:], warmup=calls[:2]).extra()
    for m in (get_direct, get_pooled):
        m.extra.update(get_counts)
    for m in (book_direct, book_pooled):
        m.extra.update(book_counts)
    note = "ratio: median of per-pair ratios (alternating runs)"
    return [
        lib.Result("GET /v1/properties/{id} direct (paired)", get_direct),
        lib.Result("GET /v1/properties/{id} through PgBouncer", get_pooled,
                   baseline="GET /v1/properties/{id} direct (paired)", paired_ratio=get_ratio,
                   note=note),
        lib.Result("POST reservation direct (paired)", book_direct,
                   baseline="pgbench_tpcb_like"),
        lib.Result("POST reservation through PgBouncer", book_pooled,
                   baseline="pgbench_tpcb_like"),
        lib.Result("POST reservation through PgBouncer / direct", book_pooled,
                   baseline="POST reservation direct (paired)", paired_ratio=book_ratio,
                   note=note),
    ]


PGBOUNCER = SimpleNamespace(
    run=run_through_pgbouncer, ORDER=90, DEFAULT=True,
    DESCRIPTION="booking and GET property through PgBouncer (transaction mode) beside direct")


def ensure_tools() -> None:
    """wrk comes from Debian's package; install it when it is missing and we may."""
    if shutil.which("wrk"):
        return
    print("wrk is missing; installing the Debian package ...", file=sys.stderr)
    try:
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True)
    except (OSError, subprocess.CalledProcessError):
        subprocess.run(["apt-get", "update", "-qq"], check=False)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=False)
    if not shutil.which("wrk"):
        sys.exit("wrk is required: apt-get install -y wrk")
    if not shutil.which("pgbench"):
        sys.exit("pgbench is required (postgresql-client)")


def ensure_pgbouncer() -> None:
    """pgbouncer comes from Debian's package; installed when missing and we may (its system
    service is never used: the bench starts its own on a free port)."""
    if shutil.which("pgbouncer") or os.path.exists("/usr/sbin/pgbouncer"):
        return
    print("pgbouncer is missing; installing the Debian package ...", file=sys.stderr)
    subprocess.run(["apt-get", "install", "-y", "-qq", "pgbouncer"], check=False)


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _cpu_per_request(extra: dict[str, Any]) -> float | None:
    """Server plus database CPU per request, when the harness could sample it."""
    parts = [extra.get("server_cpu_ms_per_req"), extra.get("db_cpu_ms_per_req")]
    present = [p for p in parts if p is not None]
    return sum(present) if present else None


COLUMNS = (  # (title, width, align)
    ("benchmark", 46, "<"), ("rate", 10, ">"), ("unit", 8, ">"), ("p50 ms", 8, ">"),
    ("p99 ms", 8, ">"), ("err", 4, ">"), ("srv ms", 7, ">"), ("db ms", 6, ">"),
    ("stmts", 6, ">"), ("RTs", 6, ">"), ("vs baseline", 26, "<"), ("ratio", 6, ">"),
    ("goal", 12, "<"),
)


def table_row(line: dict[str, Any]) -> list[str]:
    """One line of the summary table: rate, latency, CPU per request (server = gunicorn master
    and workers, db = the database's backends and PgBouncer), statements and round trips per
    request (the in-process pass), the baseline, the ratio and the goal's verdict."""
    m = line["measurement"]
    extra = m["extra"]
    goal = line["goal_text"] or (f">={line['goal']:.2f}" if line["goal"] is not None else "")
    verdict = {True: " ok", False: " MISSED", None: ""}[line["passed"]]
    return [line["name"], _fmt(m["rate"]), m["unit"], _fmt(m["p50_ms"], 2), _fmt(m["p99_ms"], 2),
            str(m["errors"]), _fmt(extra.get("server_cpu_ms_per_req"), 3),
            _fmt(extra.get("db_cpu_ms_per_req"), 3), _fmt(extra.get("statements_per_req"), 1),
            _fmt(extra.get("round_trips_per_req"), 1), line["baseline"] or "",
            _fmt(line["ratio"], 2), goal + verdict]


def format_table(report: dict[str, Any]) -> str:
    def cells(values: list[str]) -> str:
        out = []
        for i, (value, (_, width, align)) in enumerate(zip(values, COLUMNS, strict=True)):
            # long names are cut (the JSON has them whole); the last column (goal) never is
            fits = len(value) <= width or align == ">" or i == len(COLUMNS) - 1
            text = value if fits else value[:width - 1] + "~"
            out.append(f"{text:{align}{width}}")
        return " ".join(out).rstrip()

    header = cells([c[0] for c in COLUMNS])
    rows = [header, "-" * len(header)] + [cells(table_row(line)) for line in report["results"]]
    s = report["settings"]
    rows += ["", f"medians of {s['runs']} runs x {s['duration_s']} s, {s['connections']} "
             f"connections, {s['cpus']} CPUs, gunicorn {s['gunicorn']}, broker {s['broker_url']}, "
             f"load average {s['load_average_before'][0]} -> {s['load_average_after'][0]}"
             + (f", commit {report['commit']}" if report.get("commit") else ""),
             "srv/db ms = CPU per request of the gunicorn master+workers / of the bench "
             "database's backends (+ PgBouncer in its scenario), from /proc: steadier than req/s "
             "on a shared machine; relay and night audit: per event / per stay, of the process "
             "running them (the bench's own) / of the whole PostgreSQL server",
             "stmts/RTs = SQL statements / round trips per request, counted exactly in a separate "
             "in-process pass through the real app (bench/statements.py)"]
    return "\n".join(rows)


def print_table(report: dict[str, Any]) -> None:
    print("\n" + format_table(report) + "\n")


def git_commit() -> str | None:
    """The commit measured (with "+dirty" when the working tree has changes)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=lib.ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=lib.ROOT, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("scenario", nargs="*", help="scenario names (default: every DEFAULT one)")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per run")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2, help="wrk/pgbench threads")
    parser.add_argument("--workers", help="gunicorn workers (WEB_CONCURRENCY)")
    parser.add_argument("--gunicorn-threads", help="gunicorn threads per worker (PMS_THREADS)")
    parser.add_argument("--worker-class", help="gunicorn worker class (PMS_WORKER_CLASS)")
    parser.add_argument("--broker", default="stub://",
                        help="PMS_BROKER_URL of the service (default stub://: self-contained; "
                             "the embedded relay then publishes in-process)")
    parser.add_argument("--pgbouncer-pool", type=int, default=8,
                        help="server connections of the bench's PgBouncer (scenario pgbouncer)")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument("--keep-db", action="store_true", help="keep the throwaway database")
    args = parser.parse_args(argv)

    available = discover()
    if args.list:
        for name, module in available.items():
            flag = "" if getattr(module, "DEFAULT", True) else " (not in the default run)"
            print(f"{name:16} {getattr(module, 'DESCRIPTION', '')}{flag}")
        return 0
    unknown = [n for n in args.scenario if n not in available]
    if unknown:
        parser.error(f"unknown scenario(s) {unknown}; known: {sorted(available)}")
    chosen = args.scenario or [n for n, m in available.items() if getattr(m, "DEFAULT", True)]

    ensure_tools()
    if "pgbouncer" in chosen:
        ensure_pgbouncer()
    # SIGTERM (e.g. from `timeout`) unwinds like Ctrl-C, so the throwaway database is dropped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server_env = {k: v for k, v in (("WEB_CONCURRENCY", args.workers),
                                    ("PMS_THREADS", args.gunicorn_threads),
                                    ("PMS_WORKER_CLASS", args.worker_class)) if v}
    bench = lib.Bench(duration=args.duration, runs=args.runs, connections=args.connections,
                      wrk_threads=args.threads, server_env=server_env, broker_url=args.broker,
                      pgbouncer_pool=args.pgbouncer_pool,
                      log=lambda msg: print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True))
    commit = git_commit()  # before the run: the others may commit while it runs
    failed: list[str] = []
    timings: dict[str, float] = {}
    started = time.monotonic()
    try:
        bench.start()
        for name in chosen:
            bench.log(f"scenario {name}")
            began = time.monotonic()
            try:
                for result in available[name].run(bench):
                    bench.add(result)
            except Exception:  # noqa: BLE001 - report it, run the others
                traceback.print_exc()
                failed.append(name)
            timings[name] = round(time.monotonic() - began, 1)
            bench.log(f"scenario {name} took {timings[name]} s")
    finally:
        bench.close(keep_db=args.keep_db)
    report = bench.report()
    report["scenarios"] = chosen
    report["failed"] = failed
    report["scenario_seconds"] = timings
    report["elapsed_s"] = round(time.monotonic() - started, 1)
    report["commit"] = commit
    print_table(report)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for path in (lib.OUT_DIR / f"bench-{stamp}.json", lib.OUT_DIR / "latest.json"):
        path.write_text(json.dumps(report, indent=2, default=str))
    print(f"written to {lib.OUT_DIR}/bench-{stamp}.json in {report['elapsed_s']} s")
    if failed:
        print(f"failed scenarios: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
