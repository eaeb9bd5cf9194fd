"""The event path under the Procfile as written: `worker` (2 processes x 4 threads) and `relay`,
started from the Procfile's own command lines against a throwaway PostgreSQL database and a
RabbitMQ vhost, with every event counted on a queue of the test's own ("How we test").

Each test commits a burst of writes (bookings and check-outs through the services, or outbox rows
inserted directly where the point is the relay), disturbs the processes, and then waits, with
generous deadlines and never a fixed sleep, until every committed event id arrived: exactly the
ids committed, duplicates only within the in-flight window of a killed relay, departure-clean
tasks and receipts never doubled.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlparse

import pytest

from pms.context import Ctx
from pms.db.database import db as db_proxy
from pms.db.database import make_database
from pms.db.uow import read_scope, unit_of_work
from pms.devkeys import all_scopes
from pms.errors import FolioNotClosable
from pms.models import HousekeepingTask, SandboxEmail
from pms.models.platform import OutboxEvent, outbox_partition
from tests import pg
from tests.conftest import need_server
from tests.e2e.procfile import (
    ROOT,
    Counter,
    Stack,
    procfile,
    rabbitmqctl,
    unique,
    vhost_url,
    wait_for,
)
from tests.factories import (
    make_booking_hotel,
    make_checked_in,
    make_profile,
    make_reservation,
    pay_folio,
)
from tests.workers.amqp import TcpProxy, amqp_url, via
from tests.workers.amqp import available as amqp_available

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq]

ARRIVAL = float(__import__('os').environ.get('PMS_E2E_DEADLINE', '120'))  # seconds: the longest wait for a condition on a loaded machine


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    ok, why = pg.available()
    need_server(ok, "PostgreSQL", why)
    ok, why = amqp_available()
    need_server(ok, "RabbitMQ", why)
    need_server(shutil.which("rabbitmqctl") is not None, "rabbitmqctl", "not on PATH")
    database = pg.create_database("pmse2e")
    vhost = unique("pms-e2e")
    user = urlparse(amqp_url()).username or "guest"
    rabbitmqctl("add_vhost", vhost)
    rabbitmqctl("set_permissions", "-p", vhost, user, ".*", ".*", ".*")
    s = Stack(database, vhost_url(amqp_url(), vhost), vhost, tmp_path_factory.mktemp("procs"))
    try:
        release = subprocess.run(shlex.split(procfile()["release"]), env=s.env("unused"),
                                 cwd=ROOT, capture_output=True, timeout=300)
        assert release.returncode == 0, release.stdout + release.stderr
        yield s
    finally:
        s.stop_all()
        rabbitmqctl("delete_vhost", vhost)
        database.drop()


@pytest.fixture
def bound(stack: Stack) -> Iterator[Any]:
    """This process writes through the services, as the service role, like `web` does."""
    database = make_database(stack.database.app_url, pool_size=8)
    db_proxy.initialize(database)
    yield database
    database.close_all()
    db_proxy.initialize(None)


@pytest.fixture
def exchange(stack: Stack) -> Iterator[tuple[str, Counter]]:
    name = unique("pms-e2e-ex")
    counter = Counter(stack.amqp_url, name)
    yield name, counter
    counter.close()
    stack.stop_all()


def new_ctx() -> Ctx:
    return Ctx(env_id=uuid.uuid4(), sub="e2e", client_kind="user",
               scopes=frozenset(all_scopes()), now=datetime.now(UTC).replace(microsecond=0))


def committed_ids(stack: Stack, env_id: uuid.UUID) -> set[str]:
    # The admin may be a plain role (CI's), to which row-level security applies: the outbox's
    # policy lets cross-env machinery through with app.cross_env, as the relay does.
    return {r[0] for r in stack.query(
        "SELECT set_config('app.cross_env', 'on', true); "
        "SELECT id::text FROM outbox_event WHERE env_id = %s", str(env_id))}


def check_out_paid(ctx: Ctx, hotel: Any, reservation: Any) -> None:
    from pms.services.frontdesk import checkout

    try:
        checkout.check_out(ctx, hotel.id, reservation.id)
    except FolioNotClosable as exc:
        pay_folio(ctx, reservation, exc.extra["balance"])
        checkout.check_out(ctx, hotel.id, reservation.id)


class Burst:
    """Writers on threads: bookings, and check-ins followed by check-outs, one hotel each."""

    def __init__(self, ctx: Ctx, *, writers: int = 3, bookings: int = 6,
                 checkouts: int = 2) -> None:
        self.ctx = ctx
        self.hotels = [make_booking_hotel(ctx, rooms=bookings + checkouts + 1)
                       for _ in range(writers)]
        self.bookings, self.checkouts = bookings, checkouts
        self.checked_out: list[uuid.UUID] = []
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._write, args=(h,), daemon=True)
                        for h in self.hotels]

    def _write(self, hotel: Any) -> None:
        try:
            guest = str(make_profile(self.ctx, hotel.id).id)  # the receipt needs an email
            for i in range(max(self.bookings, self.checkouts)):
                if i < self.bookings:
                    make_reservation(self.ctx, hotel)
                if i < self.checkouts:
                    stay = make_checked_in(self.ctx, hotel, guest_profile_id=guest)
                    check_out_paid(self.ctx, hotel, stay)
                    with self._lock:
                        self.checked_out.append(stay.id)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)
        finally:
            if not db_proxy.is_closed():
                db_proxy.close()

    def start(self) -> Burst:
        for t in self.threads:
            t.start()
        return self

    def join(self) -> None:
        for t in self.threads:
            t.join(timeout=ARRIVAL)
        assert not self.errors, self.errors


def departure_tasks(ctx: Ctx) -> list[uuid.UUID]:
    with read_scope(ctx):
        return [t.reservation_id for t in HousekeepingTask.select().where(
            HousekeepingTask.kind == "DEPARTURE_CLEAN")]


def receipts(ctx: Ctx) -> int:
    with read_scope(ctx):
        return SandboxEmail.select().where(SandboxEmail.template == "checkout_receipt").count()


def settle(stack: Stack, ctx: Ctx, counter: Counter, procs: list[Any], *,
           checked_out: list[uuid.UUID] = (), max_duplicates: int = 0) -> None:
    """Wait until every event committed so far arrived and each check-out's reactions ran
    (reactions commit events of their own, so the committed set is read again each time);
    then: exactly the ids committed, reactions never doubled."""
    expected = sorted(checked_out)

    def done() -> bool:
        if expected and (sorted(departure_tasks(ctx)) != expected
                         or receipts(ctx) != len(expected)):
            return False
        committed = committed_ids(stack, ctx.env_id)
        return bool(committed) and committed <= counter.ids()

    try:
        wait_for(done, timeout=ARRIVAL, what="every committed event and every reaction")
    except AssertionError as exc:
        missing = committed_ids(stack, ctx.env_id) - counter.ids()
        tails = "\n\n".join(f"{p.name}:\n{p.tail()}" for p in procs)
        raise AssertionError(f"{exc}: {len(missing)} events missing, tasks "
                             f"{len(departure_tasks(ctx))}/{len(expected)}, receipts "
                             f"{receipts(ctx)}\n{tails}") from None
    assert counter.ids() == committed_ids(stack, ctx.env_id)  # exactly the ids committed
    assert counter.duplicates() <= max_duplicates
    assert sorted(departure_tasks(ctx)) == expected  # never doubled
    assert receipts(ctx) == len(expected)


@pytest.mark.slow
def test_burst_under_the_procfile_worker_and_relay_delivers_every_committed_event(
        stack, bound, exchange):
    name, counter = exchange
    env = stack.env(name)
    procs = [stack.start("worker", env), stack.start("relay", env)]
    ctx = new_ctx()
    # When: a burst of bookings and check-outs from three writers
    burst = Burst(ctx, writers=3, bookings=6, checkouts=2).start()
    burst.join()
    # Then: every committed event arrives once, and each check-out's reactions happen once
    settle(stack, ctx, counter, procs, checked_out=burst.checked_out)
    assert all(p.alive() for p in procs), [p.tail() for p in procs]


@pytest.mark.slow
def test_sigterm_to_worker_and_relay_mid_burst_loses_no_event_and_repeats_no_side_effect(
        stack, bound, exchange):
    name, counter = exchange
    env = stack.env(name)
    worker, relay = stack.start("worker", env), stack.start("relay", env)
    ctx = new_ctx()
    burst = Burst(ctx, writers=3, bookings=8, checkouts=3).start()
    wait_for(lambda: len(counter.ids()) >= 10 or not any(t.is_alive() for t in burst.threads),
             timeout=ARRIVAL, what="the first events of the burst")
    # When: both get SIGTERM in the middle of the burst, stop within the grace, and restart
    assert worker.terminate(grace=30) == 0, worker.tail()
    assert relay.terminate(grace=30) == 0, relay.tail()
    procs = [stack.start("worker", env), stack.start("relay", env)]
    burst.join()
    # Then
    settle(stack, ctx, counter, procs + [worker, relay], checked_out=burst.checked_out,
           max_duplicates=1000)


def insert_outbox(ctx: Ctx, count: int, *, chunk: int = 1000) -> None:
    """`count` outbox rows committed in chunks, as many services would (no subscriber)."""
    now = datetime.now(UTC)
    for start in range(0, count, chunk):
        rows = []
        for i in range(start, min(start + chunk, count)):
            subject = str(uuid.uuid4())
            rows.append({"id": uuid.uuid4(), "env_id": ctx.env_id, "type": "hotel:pms:probe:made",
                         "subject": subject, "aggregate_type": "probe", "aggregate_version": 1,
                         "idempotency_key": f"hotel:pms:probe:made:{subject}:1",
                         "data": {"n": i}, "time": now,
                         "partition": outbox_partition(subject)})
        with unit_of_work(ctx):
            OutboxEvent.insert_many(rows).execute()


def service_backends(stack: Stack) -> list[tuple[Any, ...]]:
    return stack.query("SELECT pid, state, now() - state_change FROM pg_stat_activity "
                       "WHERE datname = %s AND usename = %s", stack.database.name,
                       stack.database.app_role)


@pytest.mark.slow
def test_three_relays_one_killed_one_stopped_during_20000_events_lose_none_and_leave_nothing(
        stack, bound, exchange):
    name, counter = exchange
    env = stack.env(name)
    worker = stack.start("worker", env)
    killed, stopped, survivor = (stack.start("relay", env) for _ in range(3))
    ctx = new_ctx()
    writer = threading.Thread(target=insert_outbox, args=(ctx, 20_000), daemon=True)
    writer.start()
    wait_for(lambda: len(counter.ids()) >= 3000, timeout=ARRIVAL,
             what=f"3000 events (relay: {killed.tail(5)})")
    # When: one relay is SIGKILLed (with its children) and one SIGTERMed mid-burst
    killed.kill()
    assert stopped.terminate(grace=30) == 0, stopped.tail()
    writer.join(timeout=ARRIVAL)
    # Then: none lost; duplicates only within the killed relay's in-flight batches
    settle(stack, ctx, counter, [killed, stopped, survivor, worker], max_duplicates=2000)
    assert len(counter.ids()) == 20_000
    # and no transaction left open, then no backend at all once every process stopped
    wait_for(lambda: not [b for b in service_backends(stack) if b[1] == "idle in transaction"
                          and b[2].total_seconds() > 5],
             timeout=ARRIVAL, what="no idle-in-transaction backend")
    assert survivor.terminate(grace=30) == 0, survivor.tail()
    assert worker.terminate(grace=30) == 0, worker.tail()
    bound.close_all()
    wait_for(lambda: service_backends(stack) == [], timeout=ARRIVAL,
             what="no backend of the stopped and killed processes")
    assert stack.query("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
                       "WHERE a.datname = %s AND a.pid <> pg_backend_pid()",
                       stack.database.name) == [(0,)]


@pytest.mark.slow
def test_broker_outage_during_a_burst_loses_nothing(stack, bound, exchange):
    name, counter = exchange
    parsed = urlparse(stack.amqp_url)
    proxy = TcpProxy(parsed.hostname or "127.0.0.1", parsed.port or 5672)
    try:
        env = stack.env(name, broker_url=via(stack.amqp_url, proxy.port))
        procs = [stack.start("worker", env), stack.start("relay", env)]
        ctx = new_ctx()
        burst = Burst(ctx, writers=2, bookings=4, checkouts=2).start()
        insert_outbox(ctx, 1000, chunk=250)
        wait_for(lambda: len(counter.ids()) >= 100, timeout=ARRIVAL, what="the first events")
        # When: the broker becomes unreachable for every process while writes go on
        proxy.cut()
        insert_outbox(ctx, 1000, chunk=250)
        burst.join()
        proxy.restore()
        # Then
        settle(stack, ctx, counter, procs, checked_out=burst.checked_out, max_duplicates=2000)
    finally:
        proxy.close()
