"""Deploys without a failed request, tried the way production runs them.

Two web instances (the Procfile's `web` command as written, WEB_CONCURRENCY=2) on one
PostgreSQL database, behind HAProxy configured as docs/operations/deploys.md says
(tests/ops/haproxy.py), under steady mixed load from six client threads: property reads,
availability searches, bookings with and without an Idempotency-Key. Each instance is stopped
with SIGTERM and started again in turn. No client may see a connection error, a 5xx, or an
answer a quiet instance would not give, and the reservations in the database must equal the
bookings answered 201 (nothing lost, nothing doubled).

The same load runs through PgBouncer in transaction mode (tests/ops/pgbouncer.py, 4 server
connections): zero failures, no SQLSTATE 26000/42P05 anywhere, and no setting of one
transaction visible to the next user of its server connection.

Lengths: about 20-30 s of load here; `make chaos` (PMS_CHAOS_FULL=1) runs three rounds. Every
wait is a condition with a deadline; the load duration is a length of exercise, never a
correctness condition.
"""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import msgspec
import psycopg2
import pytest
import requests

from pms.config import Settings
from pms.context import Ctx
from pms.devkeys import all_scopes, mint_token
from tests import pg
from tests.conftest import need_server
from tests.ops import haproxy as haproxy_mod
from tests.ops import pgbouncer as pgbouncer_mod
from tests.ops.conftest import Gunicorn

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

FULL = os.environ.get("PMS_CHAOS_FULL") == "1"
THREADS = 6
ROOM_TYPES = 4
# every booking of a run must fit (a sold-out 409 counts as a client-visible failure): about a
# third of the requests book 2 nights among 4 types x 138 arrival days, and a run makes some
# 12,000 requests on this box (more on a faster one); with 25 rooms a night of a type sold out
# now and then (a Poisson tail), with 80 none does at three times that load
ROOMS_PER_TYPE = 80
RATE_DAYS = 150
DRAIN_S = 4.0  # the test's PMS_DRAIN_SECONDS: > HAProxy's inter 0.5 s x fall 2 + a slow check
# failures a load generator can see in a server log, whichever pass it runs in
LOG_MARKERS = ("Traceback", "26000", "42P05", "prepared statement", "answered 503",
               "answered 500", "WORKER TIMEOUT", "Worker was sent SIGKILL")


# -- the hotel -----------------------------------------------------------------------------------

@dataclass
class Hotel:
    env_id: uuid.UUID
    property_id: str
    room_type_ids: list[str]
    rate_plan_id: str
    first_night: date


def seed_hotel(env_id: uuid.UUID) -> Hotel:
    """Room types with enough rooms and priced nights that every booking of the run fits."""
    from datetime import UTC, datetime

    from pms.schemas import catalog as cs
    from pms.services.catalog import catalog
    from pms.services.reservations.reservations import business_date
    from tests.factories import load_rates

    ctx = Ctx(env_id=env_id, sub="deploy-seed", client_kind="user",
              scopes=frozenset(all_scopes()), now=datetime.now(UTC))
    prop = catalog.create_property(ctx, msgspec.convert({
        "propertyCode": f"DEP{uuid.uuid4().hex[:6]}".upper(), "name": "Deploy Hotel",
        "timezone": "UTC", "currencyCode": "EUR"}, cs.PropertyIn))
    plan = catalog.create_child(ctx, catalog.RATE_PLAN, prop.id, msgspec.convert(
        {"code": "BAR", "name": "Best available"}, cs.RatePlanIn))
    type_ids = []
    for t in range(ROOM_TYPES):
        rt = catalog.create_child(ctx, catalog.ROOM_TYPE, prop.id, msgspec.convert(
            {"code": f"RT{t}", "name": f"Type {t}", "max_occupancy": 3}, cs.RoomTypeIn))
        type_ids.append(str(rt.id))
        for r in range(ROOMS_PER_TYPE):
            catalog.create_child(ctx, catalog.ROOM, prop.id, msgspec.convert(
                {"room_number": f"{t}{r:02d}", "room_type_id": str(rt.id)}, cs.RoomIn))
        load_rates(ctx, prop.id, plan.id, rt.id, days=RATE_DAYS)
    today = business_date(prop, ctx.now)
    return Hotel(env_id, str(prop.id), type_ids, str(plan.id), today + timedelta(days=1))


def count_reservations(app_url: str, hotel: Hotel) -> int:
    conn = psycopg2.connect(app_url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT set_config('app.env_id', %s, true)", (str(hotel.env_id),))
            cur.execute("SELECT count(*) FROM reservation WHERE property_id = %s",
                        (hotel.property_id,))
            return int(cur.fetchone()[0])
    finally:
        conn.rollback()
        conn.close()


# -- the load ------------------------------------------------------------------------------------

@dataclass
class Outcome:
    op: str
    status: int | None
    error: str | None = None
    detail: str = ""


@dataclass
class Load:
    """THREADS client threads, each with its own keep-alive session, until stopped."""

    base_url: str
    hotel: Hotel
    settings: Settings
    outcomes: list[Outcome] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    expected_property: dict[str, Any] | None = None
    started_at: float = 0.0

    def headers(self, **extra: str) -> dict[str, str]:
        token = mint_token(self.settings, env_id=self.hotel.env_id)
        return {"Authorization": f"Bearer {token}", "X-Platform-Env-Id": str(self.hotel.env_id),
                **extra}

    def start(self) -> None:
        base = self.base_url + f"/v1/properties/{self.hotel.property_id}"
        resp = requests.get(base, headers=self.headers(), timeout=30)
        assert resp.status_code == 200, resp.text
        self.expected_property = resp.json()  # what a quiet instance answers
        self.started_at = time.monotonic()
        for n in range(THREADS):
            thread = threading.Thread(target=self._client, args=(n,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> float:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)
            assert not thread.is_alive(), "a client thread hung"
        return time.monotonic() - self.started_at

    def count(self) -> int:
        with self._lock:
            return len(self.outcomes)

    def wait_for(self, requests_done: int, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.count() < requests_done and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.count() >= requests_done, f"load made only {self.count()} requests"

    def _client(self, n: int) -> None:
        rng = random.Random(n)
        session = requests.Session()
        headers = self.headers()
        base = self.base_url + f"/v1/properties/{self.hotel.property_id}"
        while not self._stop.is_set():
            pick = rng.random()
            if pick < 0.40:
                outcome = self._call("get", session, "GET", base, headers)
            elif pick < 0.70:
                arrival = self.hotel.first_night + timedelta(days=rng.randrange(0, 28))
                outcome = self._call("search", session, "POST", base + "/availability", headers,
                                     {"arrival_date": arrival.isoformat(), "adults": 2,
                                      "departure_date": (arrival + timedelta(days=3)).isoformat()})
            else:
                keyed = pick >= 0.85
                arrival = self.hotel.first_night + timedelta(days=rng.randrange(0, RATE_DAYS - 12))
                body = {"room_type_id": rng.choice(self.hotel.room_type_ids),
                        "rate_plan_id": self.hotel.rate_plan_id,
                        "arrival_date": arrival.isoformat(),
                        "departure_date": (arrival + timedelta(days=2)).isoformat(), "adults": 2,
                        "guest": {"first_name": "Ada", "last_name": f"Deploy{n}"}}
                extra = {"Idempotency-Key": uuid.uuid4().hex} if keyed else {}
                outcome = self._call("book_key" if keyed else "book", session, "POST",
                                     base + "/reservations", {**headers, **extra}, body)
            with self._lock:
                self.outcomes.append(outcome)

    def _call(self, op: str, session: requests.Session, method: str, url: str,
              headers: dict[str, str], body: Any = None) -> Outcome:
        try:
            resp = session.request(method, url, headers=headers, json=body, timeout=60)
        except requests.RequestException as exc:
            return Outcome(op, None, error=f"{type(exc).__name__}: {exc}")
        return Outcome(op, resp.status_code, detail=self._unexpected(op, resp))

    def _unexpected(self, op: str, resp: requests.Response) -> str:
        """'' when the answer is what a quiet instance gives, else what differs."""
        try:
            data = resp.json()
        except ValueError:
            return f"not JSON: {resp.text[:200]!r}"
        if op == "get":
            return "" if resp.status_code == 200 and data == self.expected_property else \
                f"{resp.status_code} {str(data)[:300]}"
        if op == "search":
            return "" if resp.status_code == 200 and isinstance(data, dict) else \
                f"{resp.status_code} {str(data)[:300]}"
        ok = resp.status_code == 201 and data.get("status") == "CONFIRMED"
        return "" if ok else f"{resp.status_code} {str(data)[:300]}"

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.error or o.detail]

    def summary(self) -> dict[str, Any]:
        by_op = Counter(o.op for o in self.outcomes)
        return {"requests": len(self.outcomes), "failures": len(self.failures()),
                "by_op": dict(by_op), "booked": self.booked()}

    def booked(self) -> int:
        return sum(1 for o in self.outcomes
                   if o.op in ("book", "book_key") and o.status == 201 and not o.detail)


def assert_clean(load: Load, logs: list[Path]) -> None:
    failures = load.failures()
    assert not failures, (f"{len(failures)} client-visible failures of {len(load.outcomes)}: "
                          f"{Counter((f.op, f.status, f.error) for f in failures).most_common(5)}"
                          f"; first: {failures[0]}")
    for path in logs:
        text = path.read_text(errors="replace")
        found = [m for m in LOG_MARKERS if m in text]
        assert not found, f"{path.name} shows {found}:\n" + "\n".join(text.splitlines()[-30:])


# -- fixtures ------------------------------------------------------------------------------------

@pytest.fixture
def hotel(pg_db: Any) -> Hotel:
    return seed_hotel(uuid.uuid4())


@pytest.fixture(scope="module")
def bouncer() -> Iterator[pgbouncer_mod.PgBouncer]:
    """The run's PgBouncer when the suite already goes through one, else one for this module."""
    ok, why = pgbouncer_mod.available()
    need_server(ok, "pgbouncer", why)
    if pg.via_pgbouncer():
        yield pg.pgbouncer()
        return
    started = pgbouncer_mod.PgBouncer(pg.admin_url(), pool_size=4).start()
    yield started
    started.stop()


def through(bouncer: pgbouncer_mod.PgBouncer, database: pg.PgDatabase) -> pg.PgDatabase:
    """`database` with the service role's URL going through `bouncer` (owner stays direct)."""
    if urlport(database.app_url) == bouncer.port:
        return database
    return dataclasses.replace(database, app_url=bouncer.route(database.app_url))


def urlport(url: str) -> int | None:
    from urllib.parse import urlparse

    return urlparse(url).port


@pytest.fixture
def cluster(pg_database: pg.PgDatabase, base_settings: Settings, tmp_path: Path
            ) -> Iterator[Callable[..., tuple[list[Gunicorn], haproxy_mod.HAProxy]]]:
    """`cluster(database)`: two instances of `database` behind one HAProxy, all stopped at
    teardown."""
    ok, why = haproxy_mod.available()
    need_server(ok, "haproxy", why)
    made: list[Any] = []

    def start(database: pg.PgDatabase, **env: str) -> tuple[list[Gunicorn], haproxy_mod.HAProxy]:
        check_env = uuid.uuid4()
        instances = [Gunicorn(base_settings, database, tmp_path,
                              {"WEB_CONCURRENCY": "2", "PMS_DRAIN_SECONDS": str(DRAIN_S), **env})
                     for _ in range(2)]
        made.extend(instances)
        for instance in instances:
            instance.wait_ready(check_env, timeout_s=60)
        token = mint_token(base_settings, env_id=check_env, scopes=["hotel:pms:health:read"], ttl_s=7200)
        proxy = haproxy_mod.HAProxy(
            {f"web{i}": s.port for i, s in enumerate(instances)},
            check_headers={"Authorization": f"Bearer {token}",
                           "X-Platform-Env-Id": str(check_env)},
            checks=haproxy_mod.Checks(inter_ms=500, fall=2, rise=2, timeout_ms=4000))
        made.append(proxy)
        proxy.start()
        for name in proxy.servers:
            assert proxy.wait_status(name, "UP", 30), (proxy.status(), proxy.log_tail())
        return instances, proxy

    yield start
    for thing in reversed(made):
        if isinstance(thing, haproxy_mod.HAProxy):
            thing.cleanup()
        else:
            thing.stop()


# -- the deploy ----------------------------------------------------------------------------------

def roll(instances: list[Gunicorn], proxy: haproxy_mod.HAProxy, load: Load,
         env_id: uuid.UUID) -> None:
    """Stop (SIGTERM) and start again each instance in turn, as a rolling deploy does."""
    for name, instance in zip(proxy.servers, instances, strict=True):
        done = load.count()
        instance.terminate()
        # readiness first: the balancer takes the instance out while it still serves
        assert proxy.wait_status(name, "DOWN", DRAIN_S + 30), (proxy.status(),
                                                               instance.log_tail())
        assert instance.proc.poll() is None, "the instance stopped before the balancer noticed"
        assert instance.proc.wait(timeout=40) == 0, instance.log_tail()
        instance.restart()
        instance.wait_ready(env_id, timeout_s=60)
        assert proxy.wait_status(name, "UP", 60), (proxy.status(), proxy.log_tail())
        load.wait_for(done + 30)  # the other instance carried load meanwhile


def run_deploy(cluster: Callable[..., Any], database: pg.PgDatabase, hotel: Hotel,
               settings: Settings, *, rounds: int, min_load_s: float) -> dict[str, Any]:
    instances, proxy = cluster(database)
    load = Load(proxy.base_url, hotel, settings)
    before = count_reservations(database.app_url, hotel)
    load.start()
    try:
        load.wait_for(30)
        for _ in range(rounds):
            roll(instances, proxy, load, hotel.env_id)
        while time.monotonic() - load.started_at < min_load_s:  # length of exercise only
            time.sleep(0.2)
    finally:
        seconds = load.stop()
    summary = {**load.summary(), "seconds": round(seconds, 1), "lb_retries": proxy.retried()}
    print("rolling deploy:", summary)
    assert_clean(load, [i.log_path for i in instances])
    assert count_reservations(database.app_url, hotel) - before == load.booked(), summary
    assert seconds >= 20
    return summary


@pytest.mark.chaos
def test_rolling_deploy_behind_haproxy_gives_no_client_visible_failure(
        cluster, pg_database, hotel, base_settings):
    run_deploy(cluster, pg_database, hotel, base_settings, rounds=3 if FULL else 1,
               min_load_s=90 if FULL else 20)


@pytest.mark.chaos
def test_rolling_deploy_through_pgbouncer_gives_no_client_visible_failure(
        cluster, pg_database, hotel, base_settings, bouncer):
    run_deploy(cluster, through(bouncer, pg_database), hotel, base_settings,
               rounds=2 if FULL else 1, min_load_s=60 if FULL else 20)


def test_sighup_reloads_under_load_give_no_client_visible_failure(
        cluster, pg_database, hotel, base_settings):
    # In-place reloads stay safe behind the balancer (new workers, old ones finish), though
    # deploys replace instances (docs/operations/deploys.md)
    instances, proxy = cluster(pg_database)
    load = Load(proxy.base_url, hotel, base_settings)
    before = count_reservations(pg_database.app_url, hotel)
    load.start()
    try:
        load.wait_for(30)
        for instance in (*instances, *instances):
            done = load.count()
            old = children(instance.proc.pid)
            instance.proc.send_signal(signal.SIGHUP)
            # the reload is over when none of the old workers is left and new ones serve
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                now = children(instance.proc.pid)
                if now and not (now & old) and len(now) >= len(old):
                    break
                time.sleep(0.1)
            assert not (children(instance.proc.pid) & old), instance.log_tail()
            load.wait_for(done + 60)
        while time.monotonic() - load.started_at < (60 if FULL else 20):  # length only
            time.sleep(0.2)
    finally:
        seconds = load.stop()
    print("SIGHUP reloads:", {**load.summary(), "seconds": round(seconds, 1),
                              "lb_retries": proxy.retried()})
    assert_clean(load, [i.log_path for i in instances])
    assert count_reservations(pg_database.app_url, hotel) - before == load.booked()
    assert all(i.proc.poll() is None for i in instances)


def children(pid: int) -> set[int]:
    """Process ids whose parent is `pid` (from /proc)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.add(int(entry))
    return found


# -- PgBouncer in transaction mode ---------------------------------------------------------------

def _leaks(url: str, rounds: int) -> list[tuple[Any, ...]]:
    """Statements outside any transaction, through the pooler: each lands on whatever server
    connection is free, usually one a request has just used. Any tenant, cross-env or timeout
    setting seen there, or a prepared statement left on it, is session state that leaked."""
    seen = []
    conn = psycopg2.connect(url)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            for _ in range(rounds):
                cur.execute("SELECT pg_backend_pid(), coalesce(current_setting('app.env_id', true), ''),"
                            " coalesce(current_setting('app.cross_env', true), ''),"
                            " current_setting('lock_timeout'), current_setting('synchronous_commit'),"
                            " (SELECT count(*) FROM pg_prepared_statements)")
                row = cur.fetchone()
                if row[1] != "" or row[2] not in ("", "off") or row[3] != "0" or \
                        row[4] != "on" or row[5] != 0:
                    seen.append(row)
                time.sleep(0.01)
    finally:
        conn.close()
    return seen


def test_mixed_load_through_pgbouncer_transaction_mode_has_no_failure_and_no_leak(
        pg_database, hotel, base_settings, bouncer, tmp_path):
    database = through(bouncer, pg_database)
    server = Gunicorn(base_settings, database, tmp_path,
                      {"WEB_CONCURRENCY": "2", "PMS_DRAIN_SECONDS": "0"})
    try:
        server.wait_ready(uuid.uuid4(), timeout_s=60)
        load = Load(server.base_url, hotel, base_settings)
        load.start()
        leaks: list[tuple[Any, ...]] = []
        try:
            load.wait_for(20)
            # watched while the load runs, on the pooler's server connections
            leaks += _leaks(database.app_url, 300 if FULL else 150)
            while time.monotonic() - load.started_at < (30 if FULL else 10):
                time.sleep(0.2)
        finally:
            seconds = load.stop()
        leaks += _leaks(database.app_url, 20)
        pools = [p for p in bouncer.pools() if p["database"] == pg_database.name]
        print("through pgbouncer:", {**load.summary(), "seconds": round(seconds, 1),
                                     "pools": pools})
        assert_clean(load, [server.log_path])
        assert not leaks, f"session state seen by the next transaction: {leaks[:5]}"
        assert count_reservations(database.app_url, hotel) == load.booked()
        assert all(p["pool_mode"] == "transaction" for p in pools)
        assert "26000" not in bouncer.log_tail(400) and "42P05" not in bouncer.log_tail(400)
    finally:
        server.stop()

