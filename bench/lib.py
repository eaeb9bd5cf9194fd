"""The benchmark toolkit every scenario gets: a `Bench` with a throwaway PostgreSQL database, the
service under gunicorn (started once, lazily), tokens, a seeding context, wrk and pgbench runners
that report medians of several short runs, and the shared baselines (bare Falcon under the same
gunicorn settings, pgbench select-only and tpcb-like), each measured once per run on demand,
and PgBouncer in transaction mode in front of the same database (`pooled_app()`), for the
"through PgBouncer" figures.

A scenario module in bench/scenarios/ defines `run(bench: Bench) -> list[Result]` (see
bench/scenarios/__init__.py). Nothing here runs at import.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import cpu, pgdb, statements

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "bench" / "out"
WRK_DRIVER = ROOT / "bench" / "wrk" / "driver.lua"
APP_TARGET = "pms.app:get_app()"
BARE_TARGET = "bench.bare_app:app"
# alternating runs of a subject and the bare Falcon baseline (at least this many pairs)
PAIRED_RUNS = 5
TPCB_NOTE = "ratio to the median of all tpcb-like runs (interleaved with the writes)"


@dataclass
class Measurement:
    """One figure: a rate (median over runs) with latency percentiles when they exist."""

    rate: float
    unit: str = "req/s"
    p50_ms: float | None = None
    p99_ms: float | None = None
    errors: int = 0
    runs: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Result:
    """A line of the report. `baseline` names another result or a shared baseline
    (`bare_falcon`, `pgbench_select_only`, `pgbench_tpcb_like`); `goal` is the minimum ratio
    rate / baseline rate. `goal_text`/`passed` serve goals that are not ratios (e.g. "< 10 s")."""

    name: str
    measurement: Measurement
    baseline: str | None = None
    goal: float | None = None
    goal_text: str | None = None
    passed: bool | None = None
    note: str = ""
    # the median of per-pair ratios when the result and its baseline were measured in
    # alternating runs (Bench.paired); otherwise the ratio is taken from the two medians
    paired_ratio: float | None = None


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by a process, its reaped and its live children (a gunicorn master
    and its workers); see bench/cpu.py."""
    return cpu.tree_seconds(root)


def pids_cpu_seconds(pids: list[int]) -> float:
    """CPU seconds used so far by the live one-thread processes among `pids`."""
    return sum(cpu.pids_seconds(pids).values())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def timed_threads(threads: list[Any]) -> float:
    """Start every thread, wait for all of them, and return the seconds they took together."""
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def median_measurement(runs: list[Measurement]) -> Measurement:
    """The median rate and latencies of several runs (each run kept in `runs`)."""
    def med(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return round(statistics.median(present), 3) if present else None

    return Measurement(
        rate=round(statistics.median(r.rate for r in runs), 1),
        unit=runs[0].unit,
        p50_ms=med([r.p50_ms for r in runs]),
        p99_ms=med([r.p99_ms for r in runs]),
        errors=sum(r.errors for r in runs),
        runs=[{"rate": r.rate, "p50_ms": r.p50_ms, "p99_ms": r.p99_ms, "errors": r.errors,
               **r.extra} for r in runs],
        extra={key: med([r.extra.get(key) for r in runs])
               for key in sorted({k for r in runs for k in r.extra if k.endswith("_per_req")})},
    )


def seed_room_types(ctx: Any, property_id: Any, types: int, rooms_per_type: int) -> list[Any]:
    """Room types RT0.. ("Type n", up to 3 guests) with rooms numbered <type><nn>, created
    through the catalog service; returns the room type rows."""
    import msgspec

    from pms.schemas import catalog as cs
    from pms.services.catalog import catalog

    made = []
    for t in range(types):
        rt = catalog.create_child(ctx, catalog.ROOM_TYPE, property_id, msgspec.convert(
            {"code": f"RT{t}", "name": f"Type {t}", "max_occupancy": 3}, cs.RoomTypeIn))
        made.append(rt)
        for r in range(rooms_per_type):
            catalog.create_child(ctx, catalog.ROOM, property_id, msgspec.convert(
                {"room_number": f"{t}{r:02d}", "room_type_id": str(rt.id)}, cs.RoomIn))
    return made


class Server:
    """A gunicorn master started as a subprocess with `pms.gunicorn_conf`."""

    def __init__(self, target: str, env: dict[str, str], log_path: Path) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        full_env = dict(os.environ, **env, PORT=str(self.port))
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "python:pms.gunicorn_conf", target],
            cwd=ROOT, env=full_env, stdout=self._log, stderr=subprocess.STDOUT)

    def wait_ready(self, path: str, headers: dict[str, str], timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited ({self.proc.returncode}); see {self.log_path}")
            try:
                req = urllib.request.Request(self.base_url + path, headers=headers)
                with urllib.request.urlopen(req, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except Exception as exc:  # noqa: BLE001 - not up yet
                last = exc
            time.sleep(0.2)
        raise RuntimeError(f"gunicorn did not become ready: {last}; see {self.log_path}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


class Bench:
    """What a scenario works with. See the module docstring."""

    def __init__(self, *, duration: float = 5.0, runs: int = 3, connections: int = 32,
                 wrk_threads: int = 2, warmup: float = 1.0, server_env: dict[str, str] | None = None,
                 broker_url: str = "stub://", log: Callable[[str], None] = print,
                 pgbouncer_pool: int = 8) -> None:
        self.duration = duration
        self.runs = runs
        self.connections = connections
        self.wrk_threads = wrk_threads
        self.warmup = warmup
        self.server_env = dict(server_env or {})
        self.broker_url = broker_url
        self.load_before = os.getloadavg()
        self.log = log
        self.results: dict[str, Result] = {}
        self._baselines: dict[str, Result] = {}
        self._tmp = Path(tempfile.mkdtemp(prefix="pms-bench-"))
        self.db: pgdb.BenchDatabase | None = None
        self._app: Server | None = None
        self._seed_bound = False
        self._pgbench_ready = False
        self._tpcb_runs: list[Measurement] = []  # every tpcb-like run (the baseline's median)
        self._servers: dict[str, Server] = {}
        self.pgbouncer_pool = pgbouncer_pool
        self._bouncer: Any = None
        from pms.config import Settings

        self.settings = Settings(jwks_url=f"file://{self._tmp}/jwks.json")

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Create and migrate the throwaway database and the dev keys."""
        from pms.db.migrator import migrate
        from pms.devkeys import generate_keys

        OUT_DIR.mkdir(parents=True, exist_ok=True)
        generate_keys(self.settings)
        self.db = pgdb.create()
        self.log(f"database {self.db.name} (service role {self.db.app_role})")
        migrate(self.db.owner_url, service_url=self.db.app_url)
        self.settings = self.settings.with_(database_url=self.db.app_url,
                                            migration_database_url=self.db.owner_url)

    def close(self, *, keep_db: bool = False) -> None:
        if self._app is not None:
            self._app.stop()
            self._app = None
        if self._bouncer is not None:
            self._bouncer.stop()
            self._bouncer = None
        if self._seed_bound:
            from pms.db.database import db

            if db.obj is not None:
                db.obj.close_all()
        if self.db is not None and not keep_db:
            self.db.drop()
        shutil.rmtree(self._tmp, ignore_errors=True)

    # -- the service ---------------------------------------------------------------------------

    def gunicorn_env(self) -> dict[str, str]:
        assert self.db is not None, "call start() first"
        return {"PMS_DATABASE_URL": self.db.app_url, "PMS_MIGRATION_DATABASE_URL": self.db.owner_url,
                "PMS_JWKS_URL": self.settings.jwks_url, "PMS_BROKER_URL": self.broker_url,
                "PMS_PLATFORM_URL": "embedded",  # explicit, no fallback on PostgreSQL
                # as in production, the web process does not relay: the relay is its own process
                "PMS_EMBEDDED_RUNTIME": "0",
                **self.server_env}

    def app(self) -> Server:
        """The service under gunicorn on the bench database (started on first use)."""
        if self._app is None:
            env_id = uuid.uuid4()
            self._app = Server(APP_TARGET, self.gunicorn_env(), OUT_DIR / "gunicorn-app.log")
            self._app.wait_ready("/v1/health", self.headers(env_id))
            self._servers[self._app.base_url] = self._app
            self.log(f"service up at {self._app.base_url}")
        return self._app

    @contextmanager
    def server(self, target: str, env: dict[str, str] | None = None,
               ready_path: str = "/", ready_headers: dict[str, str] | None = None
               ) -> Iterator[Server]:
        """Another WSGI target under the same gunicorn settings, for the time of a block."""
        name = target.split(":")[0].replace(".", "-")
        srv = Server(target, {**self.gunicorn_env(), **(env or {})}, OUT_DIR / f"gunicorn-{name}.log")
        try:
            srv.wait_ready(ready_path, ready_headers or {})
            self._servers[srv.base_url] = srv
            yield srv
        finally:
            self._servers.pop(srv.base_url, None)
            srv.stop()

    def pgbouncer(self) -> Any:
        """PgBouncer (transaction mode, `pgbouncer_pool` server connections) in front of the
        bench database, started on first use (tests/ops/pgbouncer.py)."""
        if self._bouncer is None:
            from tests.ops.pgbouncer import PgBouncer

            self._bouncer = PgBouncer(pgdb.admin_url(), pool_size=self.pgbouncer_pool).start()
            self.log(f"pgbouncer on port {self._bouncer.port}, pool_mode transaction, "
                     f"{self.pgbouncer_pool} server connections")
        return self._bouncer

    @contextmanager
    def pooled_app(self) -> Iterator[Server]:
        """The service under the same gunicorn settings with its database URL through
        PgBouncer (migrations stay direct), for the time of a block."""
        assert self.db is not None, "call start() first"
        url = self.pgbouncer().route(self.db.app_url)
        with self.server(APP_TARGET, {"PMS_DATABASE_URL": url}, ready_path="/v1/health",
                         ready_headers=self.headers(uuid.uuid4())) as srv:
            yield srv

    def token(self, env_id: uuid.UUID, scopes: list[str] | None = None) -> str:
        from pms.devkeys import mint_token

        return mint_token(self.settings, env_id=env_id, scopes=scopes, sub="bench",
                          ttl_s=6 * 3600)

    def headers(self, env_id: uuid.UUID, scopes: list[str] | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token(env_id, scopes)}",
                "X-Platform-Env-Id": str(env_id)}

    def seed_ctx(self, env_id: uuid.UUID | None = None) -> Any:
        """A machine ctx for seeding through the services (binds this process's database to the
        service role on first use). Returns pms.context.Ctx."""
        from pms.context import system_ctx
        from pms.db.database import init_db

        if not self._seed_bound:
            init_db(self.settings.database_url, pool_size=8)
            self._seed_bound = True
        return system_ctx(env_id or uuid.uuid4(), sub="bench-seed")

    # -- statements and round trips ------------------------------------------------------------

    def count(self, calls: list[statements.Call], *, warmup: list[statements.Call] | None = None
              ) -> statements.Counts:
        """Statements and round trips per request of `calls`, sent one by one through the real
        app in this process (bench/statements.py), with the settings gunicorn gets."""
        from pms.config import load_settings

        settings = load_settings({**os.environ, **self.gunicorn_env()})
        counts = statements.count_service(settings, calls, warmup=warmup or [])
        self.log(f"  counted {counts.requests} requests: {counts.statements_per_req} statements, "
                 f"{counts.round_trips_per_req} round trips per request")
        if any(status >= 300 for status in counts.statuses):
            self.log(f"  note: not every counted request succeeded ({counts.statuses}); the "
                     "figures mix in the failure path")
        return counts

    # -- load generators -------------------------------------------------------------------------

    def wrk_once(self, url: str, *, method: str = "GET", path: str = "/",
                 headers: dict[str, str] | None = None, body_template: str = "",
                 unique: bool = False, duration: float | None = None,
                 connections: int | None = None, script: Path | None = None) -> Measurement:
        """One wrk run; `{{n}}` in `body_template` becomes a unique token per request.

        `script` replaces bench/wrk/driver.lua; a custom script may `dofile()` the driver and
        wrap its `request()`, and must keep its `done()` (the BENCHJSON line)."""
        conns = connections or self.connections
        argv = ["wrk", "-t", str(min(self.wrk_threads, conns)), "-c", str(conns),
                "-d", f"{max(1, round(duration or self.duration))}s", "--timeout", "10s",
                "-s", str(script or WRK_DRIVER)]
        for key, value in (headers or {}).items():
            argv += ["-H", f"{key}: {value}"]
        if body_template:
            argv += ["-H", "Content-Type: application/json"]
        argv += [url, "--", method, path, body_template, "1" if unique else "0",
                 uuid.uuid4().hex[:8]]
        before = self._cpu_sample(url)
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"wrk failed ({proc.returncode}): {proc.stderr or proc.stdout}")
        out = proc.stdout
        cpu = self._cpu_delta(before) if before else {}
        line = next((ln for ln in out.splitlines() if ln.startswith("BENCHJSON ")), None)
        if line is None:
            raise RuntimeError(f"wrk printed no summary:\n{out}")
        data = json.loads(line[len("BENCHJSON "):])
        seconds = data["duration_us"] / 1e6
        errors = sum(data[k] for k in ("connect_errors", "read_errors", "write_errors",
                                       "status_errors", "timeouts"))
        per_req = {f"{k}_cpu_ms_per_req": round(v * 1000 / max(1, data["requests"]), 4)
                   for k, v in cpu.items()}
        return Measurement(rate=round(data["requests"] / seconds, 1), p50_ms=data["p50_us"] / 1000,
                           p99_ms=data["p99_us"] / 1000, errors=errors,
                           extra={"requests": data["requests"], "status_errors": data["status_errors"],
                                  **per_req})

    def _db_backends(self) -> list[int]:
        """The app database's backends (PgBouncer's server connections among them)."""
        if self.db is None:
            return []
        try:
            conn = pgdb._admin()
            with conn.cursor() as cur:
                cur.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (self.db.name,))
                pids = [int(r[0]) for r in cur.fetchall()]
            conn.close()
            return pids
        except Exception:  # noqa: BLE001 - CPU figures are a bonus, never a failure
            return []

    def _pooler_pids(self) -> list[int]:
        return [self._bouncer.proc.pid] if self._bouncer is not None and self._bouncer.proc else []

    def _cpu_sample(self, url: str) -> dict[str, Any] | None:
        """CPU counters of the server behind `url`, the app database's backends and PgBouncer
        (idle during direct runs)."""
        srv = self._servers.get(url.rstrip("/"))
        if srv is None:
            return None
        return {"pid": srv.proc.pid, "server": cpu.tree_seconds(srv.proc.pid),
                "db": cpu.pids_seconds(self._db_backends()),
                "pooler": cpu.pids_seconds(self._pooler_pids())}

    def _cpu_delta(self, before: dict[str, Any]) -> dict[str, float]:
        """Seconds spent since `before`: server, db (backends + pooler: the pooler's CPU counts
        as database CPU, as it did before the split), pooler alone when one runs."""
        after_db = cpu.pids_seconds(set(before["db"]) | set(self._db_backends()))
        backends, lost = cpu.delta(before["db"], after_db)
        pooler, _ = cpu.delta(before["pooler"], cpu.pids_seconds(before["pooler"]))
        out = {"server": cpu.tree_seconds(before["pid"]) - before["server"],
               "db": backends + pooler}
        if before["pooler"]:
            out["pooler"] = pooler
        if lost:
            self.log(f"note: {lost} database backend(s) ended during the run; db CPU is a "
                     "lower bound")
        return out

    def wrk(self, url: str, **kwargs: Any) -> Measurement:
        """A short warm-up, fresh planner statistics (`analyze`), then the median of `runs` wrk
        runs."""
        if self.warmup > 0:
            self.wrk_once(url, **{**kwargs, "duration": self.warmup})
        self.analyze()
        return median_measurement([self.wrk_once(url, **kwargs) for _ in range(self.runs)])

    def here_sample(self) -> tuple[float, float | None]:
        """CPU counters for work done in THIS process (the relay and night audit scenarios run
        the service's code in-process): this process's CPU (every thread), and the whole
        PostgreSQL server's (the postmaster, its live children, and the backends it reaped, so
        a connection closed before the sample is still counted). Pair with `here_extra`."""
        return time.process_time(), self._postgres_seconds()

    def here_extra(self, before: tuple[float, float | None], units: int) -> dict[str, float]:
        """`server_cpu_ms_per_req` (this process) and `db_cpu_ms_per_req` (the PostgreSQL server)
        per unit (event, stay) since `before`, for a Measurement's extra."""
        app_before, db_before = before
        out = {"server_cpu_ms_per_req": round((time.process_time() - app_before) * 1000
                                              / max(1, units), 4)}
        db_after = self._postgres_seconds()
        if db_before is not None and db_after is not None:
            out["db_cpu_ms_per_req"] = round((db_after - db_before) * 1000 / max(1, units), 4)
        return out

    def _postgres_seconds(self) -> float | None:
        """CPU seconds of the PostgreSQL server: its postmaster's tree (found as the parent of an
        admin connection's backend), None when /proc cannot tell."""
        try:
            conn = pgdb._admin()
            try:
                with conn.cursor() as cur:
                    cur.execute("SELECT pg_backend_pid()")
                    backend = int(cur.fetchone()[0])
                found = cpu.stat(backend)
            finally:
                conn.close()
            return cpu.tree_seconds(found.ppid) if found else None
        except Exception:  # noqa: BLE001 - CPU figures are a bonus, never a failure
            return None

    def analyze(self) -> None:
        """`ANALYZE` the bench database, as `pgbench -i` does for its baseline's tables.

        The bench database starts empty and a scenario's writes grow its tables by thousands of
        rows a second, faster than autovacuum (one pass a minute) refreshes their statistics.
        This machine's PostgreSQL runs with autovacuum off, so nothing else would. Without it,
        a new tenant's rows are missing from the statistics (estimated at one row, so an index
        on `env_id` alone looks cheapest: the floor's `UPDATE ... WHERE id = ANY(...)` read a
        whole env's calendar that way), and a plan made on a near-empty table stays cached on each connection (the PL/pgSQL
        functions keep theirs by design) until an ANALYZE invalidates it, and such a plan may
        scan a tenant's whole index prefix (`env_id = $1`, the key as a filter): the
        measurement would be of the first minute of a new database, not of a service in
        production, whose tables autovacuum keeps analyzed."""
        if self.db is None:
            return
        conn = pgdb._admin(self.db.name)
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("ANALYZE")
        finally:
            conn.close()

    def paired(self, baseline: Callable[[], Measurement], subject: Callable[[], Measurement],
               runs: int | None = None) -> tuple[Measurement, Measurement, float]:
        """Alternate baseline and subject runs (B S B S ...) and return both medians and the
        median of the per-pair ratios subject/baseline.

        On a shared 2-core machine throughput drifts by tens of percent within a minute (other
        tenants, the scheduler's luck with the load generator's connections); runs measured
        back to back see the same conditions, so their ratio is steadier than the ratio of two
        medians taken minutes apart."""
        base_runs: list[Measurement] = []
        subject_runs: list[Measurement] = []
        ratios: list[float] = []
        for _ in range(runs or self.runs):
            base_runs.append(baseline())
            subject_runs.append(subject())
            if base_runs[-1].rate:
                ratios.append(subject_runs[-1].rate / base_runs[-1].rate)
        return (median_measurement(base_runs), median_measurement(subject_runs),
                round(statistics.median(ratios), 3) if ratios else 0.0)

    def repeat(self, fn: Callable[[], Measurement], runs: int | None = None) -> Measurement:
        """The median of `runs` calls of a custom measuring function."""
        return median_measurement([fn() for _ in range(runs or self.runs)])

    # -- baselines -------------------------------------------------------------------------------

    def baseline(self, name: str) -> Result:
        """A shared baseline, measured once per run on first use."""
        if name not in self._baselines:
            makers = {"bare_falcon": self._bare_falcon,
                      "pgbench_select_only": lambda: self._pgbench("select-only"),
                      "pgbench_tpcb_like": lambda: self._pgbench("tpcb-like")}
            if name not in makers:
                raise KeyError(f"unknown baseline {name!r}; known: {sorted(makers)}")
            self.log(f"baseline {name} ...")
            self._baselines[name] = Result(name=name, measurement=makers[name](),
                                           note="baseline")
        return self._baselines[name]

    def bare_falcon_paired(self, subject: Callable[[], Measurement]
                           ) -> tuple[Measurement, float]:
        """`subject` measured in alternation with the bare Falcon baseline (see `paired`);
        records the baseline's median and returns the subject's median and the paired ratio."""
        self.log("bare_falcon paired with the subject ...")
        with self.server(BARE_TARGET) as srv:
            if self.warmup > 0:
                self.wrk_once(srv.base_url, path="/", duration=self.warmup)
            base, measured, ratio = self.paired(lambda: self.wrk_once(srv.base_url, path="/"),
                                                subject, runs=max(self.runs, PAIRED_RUNS))
        self._baselines["bare_falcon"] = Result(name="bare_falcon", measurement=base,
                                                note="baseline, runs alternating with its subject")
        return measured, ratio

    def tpcb_interleaved(self, *subjects: Callable[[], Measurement]) -> list[Measurement]:
        """Each subject's runs interleaved with pgbench tpcb-like runs (T S1 S2 T S1 S2 ...);
        returns each subject's median. The write goals are ratios to tpcb-like, whose rate
        on this machine swings from run to run (1,800 to 3,100 tps within minutes in one bench:
        its commits wait on the disk, and a checkpoint lands on whichever run it overlaps), and
        differs from session to session (2,100 to 4,700 tps). Sampling it all along the bench
        and taking the median of ALL its runs (the tpcb-like line, and every ratio to it) gives
        a baseline of the same period as the writes that neither one unlucky run nor the
        previous run's aftermath moves much: a per-pair ratio would divide by one 5-second run
        measured right after a write's (its dirty pages and WAL still being flushed)."""
        self._pgbench_init()
        self.log("pgbench tpcb-like interleaved with the subject(s) ...")
        runs: list[list[Measurement]] = [[] for _ in subjects]
        for _ in range(self.runs):
            self._pgbench_once("tpcb-like")
            for measured, subject in zip(runs, subjects, strict=True):
                measured.append(subject())
        self._baselines["pgbench_tpcb_like"] = Result(
            name="pgbench_tpcb_like", measurement=median_measurement(self._tpcb_runs),
            note=f"baseline: median of all its {len(self._tpcb_runs)} runs, interleaved with "
                 "the writes")
        return [median_measurement(m) for m in runs]

    def wrk_vs_tpcb(self, url: str, **kwargs: Any) -> Measurement:
        """`wrk`'s warm-up and ANALYZE, then its runs interleaved with pgbench tpcb-like
        (`tpcb_interleaved`): the median."""
        if self.warmup > 0:
            self.wrk_once(url, **{**kwargs, "duration": self.warmup})
        self.analyze()
        return self.tpcb_interleaved(lambda: self.wrk_once(url, **kwargs))[0]

    @property
    def baselines(self) -> dict[str, Result]:
        return dict(self._baselines)

    def _bare_falcon(self) -> Measurement:
        with self.server(BARE_TARGET) as srv:
            return self.wrk(srv.base_url, path="/")

    def _pgbench_init(self) -> None:
        if not self._pgbench_ready:
            assert self.db is not None
            scale = str(max(10, self.connections // 2))
            subprocess.run(["pgbench", "-i", "-q", "-s", scale, pgdb.pgbench_url(self.db)],
                           check=True, capture_output=True, text=True)
            self._pgbench_ready = True

    def _pgbench(self, mode: str) -> Measurement:
        self._pgbench_init()
        return median_measurement([self._pgbench_once(mode) for _ in range(self.runs)])

    def _pgbench_once(self, mode: str) -> Measurement:
        assert self.db is not None
        logdir = Path(tempfile.mkdtemp(dir=self._tmp))
        argv = ["pgbench", "-b", mode, "-c", str(self.connections), "-j", str(self.wrk_threads),
                "-T", str(max(1, int(self.duration))), "-l", "--log-prefix", str(logdir / "pgb"),
                "-n", pgdb.pgbench_url(self.db)]
        out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
        tps = next(float(ln.split("=")[1].split()[0]) for ln in out.splitlines()
                   if ln.startswith("tps ="))
        latencies: list[int] = []
        for path in glob.glob(str(logdir / "pgb*")):
            with open(path) as handle:
                latencies.extend(int(line.split()[2]) for line in handle if line.strip())
        shutil.rmtree(logdir, ignore_errors=True)
        latencies.sort()

        def pct(p: float) -> float | None:
            return latencies[min(len(latencies) - 1, int(p * len(latencies)))] / 1000 \
                if latencies else None

        measured = Measurement(rate=round(tps, 1), unit="tps", p50_ms=pct(0.50),
                               p99_ms=pct(0.99), extra={"transactions": len(latencies)})
        if mode == "tpcb-like":
            self._tpcb_runs.append(measured)
        return measured

    # -- output ----------------------------------------------------------------------------------

    def add(self, result: Result) -> None:
        self.results[result.name] = result

    def ratio(self, result: Result) -> float | None:
        if not result.baseline:
            return None
        if result.paired_ratio is not None:
            return result.paired_ratio
        base = self.results.get(result.baseline) or self._baselines.get(result.baseline)
        if base is None or not base.measurement.rate:
            return None
        return round(result.measurement.rate / base.measurement.rate, 3)

    def report(self) -> dict[str, Any]:
        lines = []
        for result in [*self._baselines.values(), *self.results.values()]:
            ratio = self.ratio(result)
            passed = result.passed
            if passed is None and result.goal is not None and ratio is not None:
                passed = ratio >= result.goal
            lines.append({**asdict(result), "ratio": ratio, "passed": passed})
        return {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "settings": {"duration_s": self.duration, "runs": self.runs,
                             "connections": self.connections, "wrk_threads": self.wrk_threads,
                             "cpus": os.cpu_count(), "server_env": self.server_env,
                             "broker_url": self.broker_url,
                             "load_average_before": [round(x, 2) for x in self.load_before],
                             "load_average_after": [round(x, 2) for x in os.getloadavg()],
                             "gunicorn": _gunicorn_settings(self.server_env)},
                "results": lines}


def _gunicorn_settings(overrides: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ, **overrides)
    return {"workers": env.get("WEB_CONCURRENCY", "default"),
            "threads": env.get("PMS_THREADS", "default"),
            "worker_class": env.get("PMS_WORKER_CLASS", "default")}
