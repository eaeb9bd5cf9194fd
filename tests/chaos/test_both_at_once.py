"""The database failover and a broker node loss overlapping: neither recovery waits on the other.

A Patroni cluster (tests/chaos/patroni_cluster.py: etcd, a primary and its synchronous standby,
HAProxy routing to the leader) and a three-node RabbitMQ cluster (tests/chaos/rabbit_cluster.py)
at once. The web (the Procfile's `web`), the relay (`relay`) and a worker (`worker`, one process
of two threads: the machine has two cores shared with other runs) reach the database through
HAProxy and the broker through the cluster's three addresses (PMS_BROKER_URL's list), with
PMS_BROKER_QUEUE_TYPE=quorum. Client threads book, each booking with its Idempotency-Key carried
in its notes and a guest profile with an email (so the worker sends a confirmation for each).
The leader's postmaster is SIGKILLed and, while Patroni is still failing over, the RabbitMQ node
the relay is connected to (its Erlang VM, SIGKILL). Then:

- every booking answered 2xx is in the database exactly once (by its key);
- every failure answered a retryable problem (503 with Retry-After, or 500
  `commit_outcome_unknown`), and sending it again with its key books it once;
- every committed outbox row reaches a quorum queue bound to the exchange on the cluster: the
  set of row ids seen equals the committed rows' (duplicates, by row id, are counted);
- the relay and the worker go on without a restart: the same processes (PIDs) run, and each
  booking answered 2xx, before the faults and after, has its confirmation email, once.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pika
import pika.exceptions
import psycopg2
import pytest
import requests

from pms.config import Settings
from tests.chaos import patroni_cluster, rabbit_cluster
from tests.chaos.test_db_failover import Load, release, seed_hotel, send_again
from tests.conftest import need_server
from tests.e2e.procfile import AUDIT_KEY, Proc, Stack, procfile, unique, wait_for
from tests.ops.conftest import Gunicorn

pytestmark = [pytest.mark.chaos, pytest.mark.slow]

BOOKERS = 3
BROKER_GAP_S = 1.0  # from the postmaster's kill to the broker node's, the failover under way
RECOVERY_GOAL_S = 30.0
SETTLE_S = 180.0
# a worker small enough for a shared two-core machine (the Procfile's is 2 processes x 4 threads)
WORKER_SIZE = ("--processes 2 --threads 4", "--processes 1 --threads 2")
# keys travel in the booking's notes, where a long run of digits reads as card data (422)
LETTERS = str.maketrans("0123456789", "ghijklmnop")


def new_key() -> str:
    return f"bk-{uuid.uuid4().hex.translate(LETTERS)}"


# -- the two clusters -----------------------------------------------------------------------------

@pytest.fixture
def clusters() -> Iterator[tuple[patroni_cluster.PatroniCluster, rabbit_cluster.RabbitCluster]]:
    ok, why = patroni_cluster.available()
    need_server(ok, "Patroni, etcd and HAProxy", why)
    ok, why = rabbit_cluster.available()
    need_server(ok, "RabbitMQ (rabbitmq-server, to start a cluster)", why)
    database = patroni_cluster.PatroniCluster(synchronous=True)
    broker = rabbit_cluster.RabbitCluster()
    failed: list[BaseException] = []

    def start_broker() -> None:
        try:
            broker.start_all()
        except BaseException as exc:  # noqa: BLE001 - raised below
            failed.append(exc)

    thread = threading.Thread(target=start_broker, daemon=True)
    thread.start()  # both clusters start side by side: each takes tens of seconds
    try:
        database.start()
        thread.join(timeout=300)
        if failed or thread.is_alive():
            raise RuntimeError(f"the RabbitMQ cluster did not start: {failed}")
        yield database, broker
    finally:
        thread.join(timeout=60)
        broker.stop()
        database.cleanup()


# -- what the bus carried -------------------------------------------------------------------------

class QuorumBus:
    """A quorum queue bound with '#' to the exchange, consumed by a thread that moves to the
    next node when its own is lost: each event id (AMQP message_id) with how often it came and
    when it first came. Acknowledged after counting, so what a lost node had in flight comes
    again (counted as a duplicate), never not at all."""

    def __init__(self, urls: list[str], exchange: str) -> None:
        self.urls, self.exchange = urls, exchange
        self.queue = f"{exchange}-count"
        self.events: Counter[str] = Counter()
        self.first_seen: dict[str, float] = {}
        self.reconnects = 0
        self.on_port: int | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        connection = pika.BlockingConnection(pika.URLParameters(urls[0]))
        channel = connection.channel()
        channel.exchange_declare(exchange, exchange_type="topic", durable=True)
        channel.queue_declare(self.queue, durable=True, arguments={"x-queue-type": "quorum"})
        channel.queue_bind(self.queue, exchange, routing_key="#")
        connection.close()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _on_message(self, channel: Any, method: Any, props: Any, body: bytes) -> None:
        if method.routing_key != AUDIT_KEY:
            with self._lock:
                self.events[props.message_id] += 1
                self.first_seen.setdefault(props.message_id, time.monotonic())
        channel.basic_ack(method.delivery_tag)

    def _run(self) -> None:
        turn = 0
        while not self._stop.is_set():
            url = self.urls[turn % len(self.urls)]
            try:
                params = pika.URLParameters(url)
                params.heartbeat, params.socket_timeout, params.connection_attempts = 5, 3, 1
                connection = pika.BlockingConnection(params)
                channel = connection.channel()
                channel.basic_qos(prefetch_count=500)
                channel.basic_consume(self.queue, self._on_message)
                self.on_port = params.port
                while not self._stop.is_set():
                    connection.process_data_events(time_limit=0.2)
                connection.close()
            except (pika.exceptions.AMQPError, OSError):
                self.reconnects += 1
                turn += 1
                self._stop.wait(0.3)

    def ids(self) -> set[str]:
        with self._lock:
            return set(self.events)

    def duplicates(self) -> int:
        with self._lock:
            return sum(n - 1 for n in self.events.values())

    def last_seen(self, ids: set[str]) -> float:
        with self._lock:
            return max(self.first_seen[i] for i in ids)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15)


# -- processes and their connections --------------------------------------------------------------

def tree(pid: int) -> set[int]:
    """`pid` and its descendants (from /proc)."""
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        found.add(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{current}/task/{task}/children").read_text().split()
            except OSError:
                continue
            todo.extend(int(c) for c in children if int(c) not in found)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def remote_ports(pid: int) -> set[int]:
    """The remote ports of the established TCP connections of `pid`'s process tree."""
    inodes = set()
    for member in tree(pid):
        try:
            fds = os.listdir(f"/proc/{member}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{member}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "01" and fields[9] in inodes:  # ESTABLISHED
                ports.add(int(fields[2].rsplit(":", 1)[1], 16))
    return ports


def node_of(broker: rabbit_cluster.RabbitCluster, pid: int) -> rabbit_cluster.Node | None:
    ports = remote_ports(pid)
    return next((n for n in broker.nodes if n.port in ports), None)


# -- the load -------------------------------------------------------------------------------------

class Bookings(Load):
    """Bookers only, each booking for the guest profile that has an email."""

    guest_profile_id: str = ""

    def booking(self, key: str, *, today: bool) -> tuple[str, dict[str, Any]]:
        path, body = super().booking(key, today=today)
        body.pop("guest", None)
        body["guest_profile_id"] = self.guest_profile_id
        return path, body

    def _booker(self) -> None:
        session = requests.Session()
        while not self.stop_event.is_set():
            key = new_key()
            path, body = self.booking(key, today=False)
            self.post(session, "booking", path, body, key)

    def start(self) -> None:
        for _ in range(BOOKERS):
            thread = threading.Thread(target=self._booker, daemon=True)
            thread.start()
            self.threads.append(thread)


def admin_rows(cluster: patroni_cluster.PatroniCluster, sql: str,
               args: tuple = ()) -> list[tuple]:
    # the superuser (no row-level security) in the service's database
    url = cluster.url("admin").rsplit("/", 1)[0] + "/" + cluster.db_name
    conn = psycopg2.connect(url, connect_timeout=5)
    try:
        with conn.cursor() as cur:
            cur.execute(sql, args)
            return cur.fetchall()
    finally:
        conn.rollback()
        conn.close()


def committed(cluster: patroni_cluster.PatroniCluster, env_id: uuid.UUID) -> set[str]:
    return {r[0] for r in admin_rows(cluster, "SELECT id::text FROM outbox_event "
                                              "WHERE env_id = %s", (str(env_id),))}


def answered(query: Any, *args: Any) -> Any:
    """`query(*args)`, or None while the new leader is still settling behind HAProxy."""
    try:
        return query(*args)
    except psycopg2.OperationalError:
        return None


def test_a_database_failover_and_a_broker_node_loss_at_once_lose_and_double_nothing(
        clusters: Any, base_settings: Settings, tmp_path: Path,
        request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]) -> None:
    database_cluster, broker = clusters
    release(database_cluster)
    hotel = seed_hotel(database_cluster.url("app"))
    database = SimpleNamespace(app_url=database_cluster.url("app"),
                               owner_url=database_cluster.url("owner"),
                               admin_url=database_cluster.url("admin"),
                               name=database_cluster.db_name)
    exchange = unique("pms-both")
    bus = QuorumBus(broker.urls, exchange)
    request.addfinalizer(bus.close)

    web = Gunicorn(base_settings, database, tmp_path, {"WEB_CONCURRENCY": "2", "PMS_THREADS": "4"})
    request.addfinalizer(web.stop)
    stack = Stack(database, broker.broker_url, "/", tmp_path)
    request.addfinalizer(stack.stop_all)
    env = {**stack.env(exchange, broker.broker_url), "PMS_BROKER_QUEUE_TYPE": "quorum"}
    relay = stack.start("relay", env)
    worker_command = procfile()["worker"]
    assert WORKER_SIZE[0] in worker_command, worker_command
    worker = Proc("worker", worker_command.replace(*WORKER_SIZE), env, tmp_path)
    stack.procs.append(worker)

    web.wait_ready(hotel.env_id, timeout_s=90)
    guest = requests.post(f"{web.base_url}/v1/properties/{hotel.property_id}/profiles",
                          json={"last_name": "Overlap", "email": "overlap@example.com"},
                          headers=web.headers(hotel.env_id), timeout=30)
    assert guest.status_code == 201, guest.text
    load = Bookings(web.base_url, hotel, base_settings)
    load.guest_profile_id = guest.json()["id"]
    try:
        load.start()
        load.wait_count(40, timeout_s=120)
        # the relay and the worker are working before the faults: their processes, their node
        wait_for(lambda: node_of(broker, relay.pid) is not None, timeout=60,
                 what="the relay connected to a node")
        wait_for(lambda: len(tree(worker.pid)) > 1, timeout=60, what="the worker's process")
        pids = {"relay": tree(relay.pid), "worker": tree(worker.pid)}
        database_cluster.wait_replicating(timeout_s=120)
        relay_node = node_of(broker, relay.pid)
        victim = relay_node or broker.nodes[1]
        worker_node = node_of(broker, worker.pid)
        bus_port = bus.on_port

        before = database_cluster.leader()
        assert before is not None
        pg_kill = time.monotonic()
        database_cluster.kill_leader_postmaster()
        time.sleep(BROKER_GAP_S)
        # the failover still under way: the old leader is gone, no new one takes writes yet
        still_failing_over = database_cluster.leader() in (None, before)
        broker_kill = broker.kill(victim.index)

        recovered = load.wait_booked_after(pg_kill, timeout_s=120)
        assert recovered is not None, f"no booking after the kills:\n{web.log_tail()}"
        new_leader = database_cluster.wait_leader(not_=before, timeout_s=90)
        assert new_leader is not before
        after_faults = time.monotonic()
        # what was committed up to the faults' end: the backlog the relay had to catch up on
        backlog = wait_for(lambda: answered(committed, database_cluster, hotel.env_id),
                           timeout=60, what="the outbox read through HAProxy")
        load.wait_count(40, timeout_s=120)
    finally:
        load.stop()

    # the control: the faults overlapped (the broker node died before the service booked again)
    assert broker_kill - pg_kill < recovered, (broker_kill - pg_kill, recovered)

    answers = load.snapshot()
    firsts = [a for a in answers if not a.op.startswith("retry-")]
    failed = [a for a in firsts if not a.ok]
    wrong = [a for a in failed if not a.retryable]
    assert not wrong, f"not retryable: {wrong[:5]}\n{web.log_tail()}"

    # each failed key sent again books (or replays) its booking
    session = requests.Session()
    ok_first = {a.key for a in firsts if a.ok}
    retried = {key: send_again(load, key, session) for key in sorted({a.key for a in failed})
               if key not in ok_first}
    assert [(k, a) for k, a in retried.items() if not a.ok] == []
    # and the 2xx bookings answered nearest the kills, sent again, replay
    nearest = sorted(ok_first, key=lambda k: min(abs(a.got - pg_kill) for a in firsts
                                                 if a.key == k))[:10]
    replays = {key: send_again(load, key, session) for key in nearest}
    assert [(k, a) for k, a in replays.items() if not a.ok] == []

    # every 2xx booking in the database exactly once, nothing doubled, nothing else booked
    booked = {notes: (rid, n) for notes, rid, n in admin_rows(
        database_cluster,
        "SELECT notes, min(id::text), count(*) FROM reservation WHERE property_id = %s "
        "GROUP BY notes", (hotel.property_id,))}
    sent_keys = {a.key for a in answers}
    ok_keys = {a.key for a in answers if a.ok}
    assert ok_keys, "no booking answered 2xx: the check is vacuous"
    assert [k for k in ok_keys if booked.get(k, (None, 0))[1] != 1] == []
    assert [k for k, (_rid, n) in booked.items() if n > 1] == []
    assert set(booked) <= sent_keys  # the control: the notes carry the keys, nothing else

    # every committed outbox row on the quorum queue: the same set of ids, duplicates counted
    wait_for(lambda: committed(database_cluster, hotel.env_id) <= bus.ids(), timeout=SETTLE_S,
             what="every committed outbox row on the bus", every=0.5)
    rows = committed(database_cluster, hotel.env_id)
    assert backlog <= rows
    created = {r[0] for r in admin_rows(
        database_cluster, "SELECT subject FROM outbox_event WHERE env_id = %s AND type = "
        "'hotel:pms:reservation:created'", (str(hotel.env_id),))}
    ok_reservations = {booked[k][0] for k in ok_keys}
    assert ok_reservations <= created  # each 2xx booking's own row is among those published
    last_published = bus.last_seen(rows) - pg_kill
    backlog_published = bus.last_seen(backlog) - pg_kill

    # the worker went on: a confirmation for every 2xx booking, once, those after the faults too
    def confirmations() -> Counter[str]:
        return Counter(key.split(":")[1] for (key,) in admin_rows(
            database_cluster, "SELECT idempotency_key FROM sandbox_email WHERE env_id = %s "
            "AND template = 'booking_confirmation'", (str(hotel.env_id),)))

    wait_for(lambda: ok_reservations <= set(confirmations()), timeout=SETTLE_S,
             what="a confirmation email for every 2xx booking", every=0.5)
    emails = confirmations()
    assert [r for r, n in emails.items() if n > 1] == []
    booked_after = {booked[a.key][0] for a in answers if a.ok and a.sent >= after_faults}
    assert booked_after, "no booking after the faults: the worker check is vacuous"
    assert booked_after <= set(emails)

    # the same processes, never restarted
    for name, proc in (("relay", relay), ("worker", worker)):
        assert proc.alive(), f"the {name} exited:\n{proc.tail()}"
        assert all(alive(pid) for pid in pids[name]), (name, pids[name], tree(proc.pid))
        assert tree(proc.pid) == pids[name], (name, pids[name], tree(proc.pid))
    assert set(bus.ids()) == rows  # nothing published that was not committed
    bus.close()
    stack.stop_all()

    kinds = Counter((a.status, a.code) for a in failed)
    figures = {
        "requests": len(firsts), "2xx": sum(a.ok for a in firsts),
        "failures_by_kind": {f"{s} {c}": n for (s, c), n in kinds.items()},
        "sent_again": len(retried),
        "pg_killed": before.name, "pg_new_leader": new_leader.name,
        "failover_still_under_way_at_broker_kill": still_failing_over,
        "broker_kill_after_pg_kill_s": round(broker_kill - pg_kill, 2),
        "broker_node_killed": victim.name, "relay_was_on_it": relay_node is victim,
        "worker_was_on_it": worker_node is victim, "bus_reader_was_on_it": bus_port == victim.port,
        "kills_to_first_2xx_booking_s": round(recovered, 2),
        "kills_to_backlog_published_s": round(backlog_published, 2),
        "kills_to_last_outbox_row_published_s": round(last_published, 2),
        "outbox_rows_at_recovery": len(backlog), "replayed_2xx": len(replays),
        "outbox_rows": len(rows), "rows_lost": len(rows - bus.ids()),
        "duplicates_by_row_id": bus.duplicates(), "bus_reader_reconnects": bus.reconnects,
        "confirmations": len(emails), "relay_pids": sorted(pids["relay"]),
        "worker_pids": sorted(pids["worker"]),
    }
    with capsys.disabled():
        print(f"\n[both at once] {figures}")
    assert recovered < RECOVERY_GOAL_S, figures
