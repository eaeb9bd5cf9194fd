"""The PostgreSQL primary lost under booking load: Patroni fails over, nothing acknowledged is lost.

A Patroni cluster (tests/chaos/patroni_cluster.py, filled from deploy/patroni/ and
deploy/haproxy/): etcd, a primary and its synchronous standby, HAProxy routing to the leader by
Patroni's `GET /primary`. The service's URLs point at HAProxy; the Procfile's `release` migrates
through it and its `web` serves. Client threads book (each booking with its own
Idempotency-Key, carried in the booking's notes so the database can be asked for it), and book,
check in and pay (CASH, with a key) today's arrivals, while the leader's postmaster is killed
(SIGKILL). Then:

- every request answered 2xx is in the database exactly once (bookings by their key, payments by
  their folio, one payment per folio);
- every request that failed answered a retryable problem: 503 with Retry-After, or 500
  `commit_outcome_unknown`; sending each again with its key books what was not booked and
  doubles nothing (a replay of what was);
- the service books again within a measured time after the kill (p50 and max are printed;
  PMS_CHAOS_FULL=1, `make chaos`, runs five failovers, otherwise one).

Acknowledged commits, at the SQL level through HAProxy: with synchronous replication every
acknowledged COMMIT is on the new primary; the control (synchronous_mode off, the standby's WAL
receiver paused so the window is real rather than a race) loses acknowledged rows.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlparse

import msgspec
import psycopg2
import pytest
import requests

from bench.throwaway import with_parts
from pms.config import Settings
from pms.context import Ctx
from pms.db.database import db as db_proxy
from pms.db.database import make_database
from pms.devkeys import all_scopes, mint_token
from tests.chaos import patroni_cluster
from tests.conftest import need_server
from tests.e2e.procfile import Counter as BusCounter
from tests.e2e.procfile import Stack, rabbitmqctl, unique, vhost_url, wait_for
from tests.ops.conftest import ROOT, Gunicorn, procfile_command
from tests.workers.amqp import amqp_url
from tests.workers.amqp import available as amqp_available

pytestmark = [pytest.mark.chaos, pytest.mark.slow]

FULL = os.environ.get("PMS_CHAOS_FULL") == "1"
FAILOVERS = 5 if FULL else 1
BOOKERS = 4
STAYERS = 2
BOOK_TYPES = 3
ROOMS_PER_TYPE = 40
STAY_ROOMS = 120  # today's arrivals, checked in: more than a run checks in
RATE_DAYS = 70
RECOVERY_GOAL_S = 30.0
# keys travel in the booking's notes, where a long run of digits reads as card data (422)
LETTERS = str.maketrans("0123456789", "ghijklmnop")


def new_key(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex.translate(LETTERS)}"


# -- the cluster and the service ------------------------------------------------------------------

def need_cluster() -> None:
    ok, why = patroni_cluster.available()
    need_server(ok, "Patroni, etcd and HAProxy", why)


@pytest.fixture
def cluster_factory() -> Iterator[Any]:
    need_cluster()
    made: list[patroni_cluster.PatroniCluster] = []

    def make(*, synchronous: bool) -> patroni_cluster.PatroniCluster:
        cluster = patroni_cluster.PatroniCluster(synchronous=synchronous)
        made.append(cluster)
        return cluster.start()

    yield make
    for cluster in made:
        cluster.cleanup()


@pytest.fixture
def bus_vhost() -> Iterator[str]:
    """A RabbitMQ vhost of the test's own for the relay and the workers."""
    ok, why = amqp_available()
    need_server(ok, "RabbitMQ", why)
    need_server(shutil.which("rabbitmqctl") is not None, "rabbitmqctl", "not on PATH")
    vhost = unique("pms-failover")
    user = urlparse(amqp_url()).username or "guest"
    rabbitmqctl("add_vhost", vhost)
    rabbitmqctl("set_permissions", "-p", vhost, user, ".*", ".*", ".*")
    yield vhost
    rabbitmqctl("delete_vhost", vhost)


def release(cluster: patroni_cluster.PatroniCluster) -> None:
    """The Procfile's `release` (migrations) through HAProxy, as a deploy runs it."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("PMS_")}
    env = {**inherited, "PMS_DATABASE_URL": cluster.url("app"),
           "PMS_MIGRATION_DATABASE_URL": cluster.url("owner"),
           "PATH": str(Path(sys.executable).parent) + os.pathsep + inherited.get("PATH", "")}
    done = subprocess.run(procfile_command("release"), cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, f"release failed:\n{done.stdout}\n{done.stderr}"


@dataclass
class Hotel:
    env_id: uuid.UUID
    property_id: str
    book_types: list[str]
    stay_type: str
    rate_plan_id: str
    today: date


def seed_hotel(app_url: str) -> Hotel:
    from pms.schemas import catalog as cs
    from pms.services.catalog import catalog
    from pms.services.reservations.reservations import business_date
    from tests.factories import load_rates

    database = make_database(app_url, pool_size=2)
    db_proxy.initialize(database)
    try:
        env_id = uuid.uuid4()
        ctx = Ctx(env_id=env_id, sub="failover-seed", client_kind="user",
                  scopes=frozenset(all_scopes()), now=datetime.now(UTC))
        prop = catalog.create_property(ctx, msgspec.convert({
            "propertyCode": f"FO{uuid.uuid4().hex[:6]}".upper(), "name": "Failover Hotel",
            "timezone": "UTC", "currencyCode": "EUR"}, cs.PropertyIn))
        plan = catalog.create_child(ctx, catalog.RATE_PLAN, prop.id, msgspec.convert(
            {"code": "BAR", "name": "Best available"}, cs.RatePlanIn))
        types = []
        for t, rooms in enumerate([ROOMS_PER_TYPE] * BOOK_TYPES + [STAY_ROOMS]):
            rt = catalog.create_child(ctx, catalog.ROOM_TYPE, prop.id, msgspec.convert(
                {"code": f"RT{t}", "name": f"Type {t}", "max_occupancy": 3}, cs.RoomTypeIn))
            types.append(str(rt.id))
            for r in range(rooms):
                catalog.create_child(ctx, catalog.ROOM, prop.id, msgspec.convert(
                    {"room_number": f"{t}{r:03d}", "room_type_id": str(rt.id)}, cs.RoomIn))
            load_rates(ctx, prop.id, plan.id, rt.id, days=RATE_DAYS)
        return Hotel(env_id, str(prop.id), types[:-1], types[-1], str(plan.id),
                     business_date(prop, ctx.now))
    finally:
        db_proxy.initialize(None)
        database.close_all()


# -- the load -------------------------------------------------------------------------------------

@dataclass
class Answer:
    op: str
    key: str
    sent: float
    got: float
    status: int | None
    code: str | None = None
    retry_after: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def retryable(self) -> bool:
        return ((self.status == 503 and self.retry_after is not None)
                or (self.status == 500 and self.code == "commit_outcome_unknown"))


@dataclass
class Load:
    base_url: str
    hotel: Hotel
    settings: Settings
    answers: list[Answer] = field(default_factory=list)
    # what was sent under each key, to send again: (path, body)
    sent: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    folios: dict[str, str] = field(default_factory=dict)  # payment key -> folio id
    stop_event: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    threads: list[threading.Thread] = field(default_factory=list)

    def headers(self, key: str | None = None) -> dict[str, str]:
        token = mint_token(self.settings, env_id=self.hotel.env_id)
        out = {"Authorization": f"Bearer {token}", "X-Platform-Env-Id": str(self.hotel.env_id)}
        if key:
            out["Idempotency-Key"] = key
        return out

    def post(self, session: requests.Session, op: str, path: str, body: dict[str, Any],
             key: str | None) -> tuple[Answer, Any]:
        sent = time.monotonic()
        try:
            resp = session.post(self.base_url + path, json=body, headers=self.headers(key),
                                timeout=60)
        except requests.RequestException as exc:
            answer = Answer(op, key or "", sent, time.monotonic(), None, error=repr(exc))
            data = None
        else:
            data = resp.json() if resp.content else None
            code = data.get("code") if isinstance(data, dict) else None
            answer = Answer(op, key or "", sent, time.monotonic(), resp.status_code, code,
                            resp.headers.get("Retry-After"))
        with self.lock:
            self.answers.append(answer)
            if key:
                self.sent[key] = (path, body)
        return answer, data

    def booking(self, key: str, *, today: bool) -> tuple[str, dict[str, Any]]:
        h = self.hotel
        arrival = h.today if today else h.today + timedelta(days=random.randint(1, RATE_DAYS - 10))
        body = {"room_type_id": h.stay_type if today else random.choice(h.book_types),
                "rate_plan_id": h.rate_plan_id, "arrival_date": arrival.isoformat(),
                "departure_date": (arrival + timedelta(days=1 if today else 2)).isoformat(),
                "adults": 1, "guest": {"first_name": "Fail", "last_name": "Over"},
                "notes": key}
        return f"/v1/properties/{h.property_id}/reservations", body

    def _booker(self) -> None:
        session = requests.Session()
        while not self.stop_event.is_set():
            key = new_key("bk")
            path, body = self.booking(key, today=False)
            self.post(session, "booking", path, body, key)

    def _stayer(self) -> None:
        """Book today, check in, pay: a step that failed leaves the stay (the retry pass sends
        the booking and the payment again with their keys)."""
        session = requests.Session()
        prop = self.hotel.property_id
        while not self.stop_event.is_set():
            key = new_key("st")
            path, body = self.booking(key, today=True)
            answer, data = self.post(session, "stay-booking", path, body, key)
            if not answer.ok:
                continue
            rid = data["id"]
            answer, _ = self.post(session, "check-in", f"/v1/properties/{prop}/reservations/"
                                  f"{rid}/check-in", {}, None)
            if not answer.ok:
                continue
            try:
                folios = session.get(self.base_url + f"/v1/properties/{prop}/reservations/"
                                     f"{rid}/folios", headers=self.headers(), timeout=30)
            except requests.RequestException:
                continue
            if folios.status_code != 200:
                continue
            folio = folios.json()["data"][0]["id"]
            pkey = new_key("pay")
            with self.lock:
                self.folios[pkey] = folio
            self.post(session, "payment", f"/v1/properties/{prop}/folios/{folio}/payments",
                      {"amount": "40.00", "method": "CASH"}, pkey)

    def start(self) -> None:
        for target, n in ((self._booker, BOOKERS), (self._stayer, STAYERS)):
            for _ in range(n):
                thread = threading.Thread(target=target, daemon=True)
                thread.start()
                self.threads.append(thread)

    def stop(self) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout=90)

    def snapshot(self) -> list[Answer]:
        with self.lock:
            return list(self.answers)

    def wait_booked_after(self, moment: float, timeout_s: float) -> float | None:
        """Seconds from `moment` to the first 2xx booking sent after it."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            done = [a.got for a in self.snapshot()
                    if a.op == "booking" and a.ok and a.sent >= moment]
            if done:
                return min(done) - moment
            time.sleep(0.05)
        return None

    def wait_count(self, n: int, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        start = sum(a.ok for a in self.snapshot())
        while time.monotonic() < deadline:
            if sum(a.ok for a in self.snapshot()) - start >= n:
                return
            time.sleep(0.05)
        raise AssertionError("the load made no progress")


def db_rows(cluster: patroni_cluster.PatroniCluster, hotel: Hotel, sql: str,
            args: tuple = ()) -> list[tuple]:
    conn = psycopg2.connect(cluster.url("app"))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT set_config('app.env_id', %s, true)", (str(hotel.env_id),))
            cur.execute(sql, args)
            return cur.fetchall()
    finally:
        conn.rollback()
        conn.close()


def send_again(load: Load, key: str, session: requests.Session,
               deadline_s: float = 60.0) -> Answer:
    """The key's request again until it is answered other than 503 (503 means nothing done)."""
    path, body = load.sent[key]
    op = "payment" if key.startswith("pay-") else "booking"
    deadline = time.monotonic() + deadline_s
    while True:
        answer, _ = load.post(session, f"retry-{op}", path, body, key)
        if answer.status != 503 or time.monotonic() > deadline:
            return answer
        time.sleep(float(answer.retry_after or 1))


def test_primary_killed_under_booking_load_loses_and_doubles_nothing(
        cluster_factory: Any, bus_vhost: str, base_settings: Settings, tmp_path: Path,
        request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = cluster_factory(synchronous=True)
    release(cluster)
    hotel = seed_hotel(cluster.url("app"))
    database = SimpleNamespace(app_url=cluster.url("app"), owner_url=cluster.url("owner"),
                               admin_url=cluster.url("admin"), name=cluster.db_name)
    web = Gunicorn(base_settings, database, tmp_path,
                   {"WEB_CONCURRENCY": "2", "PMS_THREADS": "4"})
    request.addfinalizer(web.stop)
    # the relay and the workers as the Procfile runs them, through HAProxy too
    stack = Stack(database, vhost_url(amqp_url(), bus_vhost), bus_vhost, tmp_path)
    exchange = unique("pms-failover")
    bus = BusCounter(stack.amqp_url, exchange)
    request.addfinalizer(bus.close)
    request.addfinalizer(stack.stop_all)
    relay = stack.start("relay", stack.env(exchange))
    worker = stack.start("worker", stack.env(exchange))
    load = Load(web.base_url, hotel, base_settings)
    recoveries: list[float] = []
    kills: list[float] = []
    try:
        web.wait_ready(hotel.env_id, timeout_s=60)
        load.start()
        for _ in range(FAILOVERS):
            cluster.wait_replicating(timeout_s=120)
            load.wait_count(60)
            before = cluster.leader()
            kill = time.monotonic()
            cluster.kill_leader_postmaster()
            kills.append(kill)
            recovered = load.wait_booked_after(kill, timeout_s=120)
            assert recovered is not None, f"no booking after the kill:\n{web.log_tail()}"
            recoveries.append(recovered)
            assert cluster.wait_leader(not_=before, timeout_s=60) is not before
            load.wait_count(30)
        load.stop()
    finally:
        load.stop()

    answers = load.snapshot()
    firsts = [a for a in answers if not a.op.startswith("retry-")]
    failed = [a for a in firsts if not a.ok]
    # every failure is one a client may retry (or, 500 commit_outcome_unknown, resolve by key)
    wrong = [a for a in failed if not a.retryable]
    assert not wrong, f"not retryable: {wrong[:5]}\n{web.log_tail()}"

    # each failed key sent again: a booking books or replays, a payment pays or is refused
    # while its first attempt's claim stands (409 idempotency_key_in_use)
    session = requests.Session()
    resolved: dict[str, Answer] = {}
    for key in sorted({a.key for a in failed if a.key}):
        if any(a.key == key and a.ok for a in firsts):
            continue
        resolved[key] = send_again(load, key, session)
    for key, answer in resolved.items():
        if key.startswith("pay-"):
            assert answer.ok or (answer.status, answer.code) == (409, "idempotency_key_in_use"), \
                (key, answer)
        else:
            assert answer.ok, (key, answer)

    # a 2xx booking sent again with its key replays it
    acked = [a.key for a in firsts if a.ok and a.op in ("booking", "stay-booking")]
    near_kill = sorted(acked, key=lambda k: min(abs(a.got - t) for a in firsts if a.key == k
                                                  for t in kills))[:20]
    for key in near_kill:
        again = send_again(load, key, session)
        assert again.ok, (key, again)

    # the database after the failovers: every acknowledged booking once, nothing doubled
    counts = Counter(dict(db_rows(cluster, hotel,
                                  "SELECT notes, count(*) FROM reservation WHERE property_id = %s "
                                  "GROUP BY notes", (hotel.property_id,))))
    booking_keys = {a.key for a in answers if a.op.endswith("booking")}
    ok_keys = {a.key for a in answers if a.ok and a.op.endswith("booking")}
    wrong_count = [k for k in ok_keys if counts[k] != 1]
    assert wrong_count == [], (
        [(k, counts[k], [a for a in answers if a.key == k]) for k in wrong_count], kills,
        [line for line in web.log_path.read_text(errors="replace").splitlines()
         if "COMMIT" in line])
    assert [k for k in booking_keys if counts[k] > 1] == []
    assert set(counts) <= booking_keys  # the control: notes carry the keys, nothing else booked
    paid = Counter(dict(db_rows(cluster, hotel,
                                "SELECT folio_id::text, count(*) FROM folio_payment GROUP BY 1")))
    ok_payments = {a.key for a in answers if a.ok and a.op.endswith("payment")}
    assert ok_payments, "no payment was made: the check is vacuous"
    assert [k for k in ok_payments if paid[load.folios[k]] != 1] == []
    assert [f for f, n in paid.items() if n > 1] == []

    # the relay went on by itself: every committed outbox row of the env reaches the bus (a
    # row published again arrives under its own id, which a subscriber deduplicates by)
    conn = psycopg2.connect(with_parts(cluster.url("admin"), dbname=cluster.db_name))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id::text FROM outbox_event WHERE env_id = %s",
                        (str(hotel.env_id),))
            committed = {r[0] for r in cur.fetchall()}
    finally:
        conn.close()
    assert committed, "no outbox row: the relay check is vacuous"
    try:
        wait_for(lambda: committed <= bus.ids(), timeout=120,
                 what="every committed outbox row on the bus")
    finally:
        bus.close()
    assert relay.alive(), f"the relay exited:\n{relay.tail()}"
    assert worker.alive(), f"the worker exited:\n{worker.tail()}"
    stack.stop_all()

    kinds = Counter((a.op, a.status, a.code) for a in firsts if not a.ok)
    p50 = statistics.median(recoveries)
    with capsys.disabled():
        print(f"\n[db failover] {len(recoveries)} failover(s) under load: "
              f"{len(firsts)} requests, {sum(a.ok for a in firsts)} answered 2xx; failures "
              f"by kind {dict(kinds)}; {len(resolved)} sent again; kill to first 2xx booking "
              f"p50 {p50:.2f} s, max {max(recoveries):.2f} s ({', '.join(f'{r:.2f}' for r in recoveries)}); "
              f"acknowledged bookings lost: 0, doubled: 0; {len(committed)} outbox rows all on the "
              f"bus, {bus.duplicates()} delivered twice under the same id")
    assert max(recoveries) < RECOVERY_GOAL_S, recoveries


# -- acknowledged commits, synchronous and not ----------------------------------------------------

@dataclass
class Writer:
    """Autocommit INSERTs through HAProxy, each id noted once its COMMIT is acknowledged."""

    url: str
    acked: list[int] = field(default_factory=list)
    stop_event: threading.Event = field(default_factory=threading.Event)
    errors: int = 0

    def run(self) -> None:
        n = 0
        conn = None
        while not self.stop_event.is_set():
            try:
                if conn is None:
                    conn = psycopg2.connect(self.url, connect_timeout=2)
                    conn.autocommit = True
                n += 1
                with conn.cursor() as cur:
                    cur.execute("INSERT INTO acked (id, pad) VALUES (%s, %s)",
                                (n, os.urandom(2048).hex()))
                self.acked.append(n)
            except psycopg2.Error:
                self.errors += 1
                conn = None
                time.sleep(0.05)


def wal_bytes_since(cluster: patroni_cluster.PatroniCluster, lsn: str) -> int:
    conn = psycopg2.connect(cluster.url("admin"))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)", (lsn,))
            return int(cur.fetchone()[0])
    finally:
        conn.close()


def admin(cluster: patroni_cluster.PatroniCluster, sql: str) -> Any:
    conn = psycopg2.connect(cluster.url("admin"))
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchone() if cur.description else None
    finally:
        conn.close()


@pytest.mark.parametrize("synchronous", [True, False], ids=["synchronous", "async-control"])
def test_an_acknowledged_commit_survives_the_failover_only_with_synchronous_replication(
        cluster_factory: Any, synchronous: bool, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = cluster_factory(synchronous=synchronous)
    admin(cluster, "CREATE TABLE acked (id int PRIMARY KEY, pad text)")
    start_lsn = admin(cluster, "SELECT pg_current_wal_lsn()::text")[0]
    writer = Writer(cluster.url("admin"))
    thread = threading.Thread(target=writer.run, daemon=True)
    thread.start()
    paused: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(writer.acked) < 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        if not synchronous:
            # the standby stops receiving: what the primary acknowledges now is on it alone
            paused = cluster.pause_standby_receiver()
            mark = admin(cluster, "SELECT pg_current_wal_lsn()::text")[0]
            # more WAL than the socket buffers between them hold
            while wal_bytes_since(cluster, mark) < 32 << 20 and time.monotonic() < deadline:
                time.sleep(0.1)
        else:
            while wal_bytes_since(cluster, start_lsn) < 8 << 20 and time.monotonic() < deadline:
                time.sleep(0.1)
        before = cluster.leader()
        cluster.kill_leader_postmaster()
        acked_at_kill = len(writer.acked)
        cluster.resume(paused)
        cluster.wait_leader(not_=before, timeout_s=90)
        # the writer goes on against the new primary
        deadline = time.monotonic() + 60
        while len(writer.acked) <= acked_at_kill + 20 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        cluster.resume(paused)
        writer.stop_event.set()
        thread.join(timeout=30)

    conn = psycopg2.connect(cluster.url("admin"))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id FROM acked")
            present = {r[0] for r in cur.fetchall()}
    finally:
        conn.close()
    lost = [n for n in writer.acked if n not in present]
    with capsys.disabled():
        print(f"\n[db failover, {'synchronous' if synchronous else 'asynchronous'}] "
              f"{len(writer.acked)} COMMITs acknowledged, {len(lost)} lost in the failover, "
              f"{writer.errors} failed")
    assert writer.acked[-1] in present  # the control: the writer's rows after the failover
    if synchronous:
        assert lost == []
    else:
        assert lost, "asynchronous replication lost nothing: the loss window was not opened"
