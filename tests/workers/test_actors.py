"""Reactions end to end on the StubBroker: relay -> internal subscribers -> actors -> services.

Check-out makes one departure-clean task and a receipt; a booking sends a confirmation; an
outgoing message is delivered; night-audit fan-out makes one stayover per occupied room. Every
reaction is run twice (the events are replayed with their ids) and creates nothing new.
Also the actors' wiring rules: `@tenant_actor` opens the tenant and one connection per message
and refuses, at decoration, a body without `ctx`; the worker runs no relay; a job queued over
the API reaches `run_job` through the outbox and a crashed run ends FAILED.
"""

from __future__ import annotations

import uuid
from datetime import date

import dramatiq
import pytest

from pms.db.uow import read_scope
from pms.errors import FolioNotClosable
from pms.models import HousekeepingTask, ReservationMessage, Room, SandboxEmail
from pms.relay import outbox
from pms.schemas.reservations import MessageIn
from pms.services.frontdesk import checkout
from pms.services.reservations import reservation_notes
from tests.factories import (
    make_booking_hotel,
    make_checked_in,
    make_profile,
    make_reservation,
    pay_folio,
)
from tests.helpers import EOD_OVERRIDE
from workers import actors
from workers.middleware import tenant_actor
from workers.publisher import LocalEventPublisher
from workers.relay import OutboxRelay
from workers.runtime import stop_worker
from workers.subscriptions import default_subscribers


@pytest.fixture(scope="module")
def _worker():
    broker = actors.broker
    w = dramatiq.Worker(broker, worker_threads=2, worker_timeout=50)
    w.start()
    yield broker
    stop_worker(w)


@pytest.fixture
def worker(_worker, database):
    _worker.flush_all()
    yield _worker
    _worker.flush_all()


def pump(ctx, broker, times=1):
    """Relay the env's due rows through the subscribers, then run every queued message; a
    message of this env that failed fails the test. Another env's message (sent by a thread
    another test left running: the broker is the process's) is no failure of this one."""
    relay = OutboxRelay(LocalEventPublisher(), subscribers=default_subscribers(), env_id=ctx.env_id)
    for _ in range(times):
        broker.flush_all()  # only this relay's messages: none left by another test's threads
        relay.run_once()
        broker.join(actors.send_reservation_email.queue_name, fail_fast=False)
        failed = [m for m in broker.dead_letters if m.args and m.args[0] == str(ctx.env_id)]
        assert not failed, [(m.actor_name, m.args, m.options.get("traceback")) for m in failed]
    return relay


def replay_all(ctx):
    ids = outbox.select_for_replay(outbox.EventFilter(env_id=ctx.env_id))
    outbox.requeue(ids)


def check_out_paid(ctx, hotel, reservation):
    try:
        return checkout.check_out(ctx, hotel.id, reservation.id)
    except FolioNotClosable as exc:
        pay_folio(ctx, reservation, exc.extra["balance"])
        return checkout.check_out(ctx, hotel.id, reservation.id)


def emails(ctx):
    with read_scope(ctx):
        return [(e.template, e.to) for e in SandboxEmail.select().order_by(SandboxEmail.created_at)]


def test_check_out_makes_one_departure_task_and_one_receipt_even_when_replayed(ctx, worker):
    hotel = make_booking_hotel(ctx)
    guest = make_profile(ctx, hotel.id)
    stay = make_checked_in(ctx, hotel, guest_profile_id=str(guest.id))
    check_out_paid(ctx, hotel, stay)
    pump(ctx, worker)
    replay_all(ctx)
    pump(ctx, worker)
    with read_scope(ctx):
        tasks = list(HousekeepingTask.select())
        room = Room.get_by_id(stay.room_id)
    assert [(t.kind, t.room_id, t.reservation_id) for t in tasks] == [
        ("DEPARTURE_CLEAN", stay.room_id, stay.id)]
    assert room.hk_status == "DIRTY"
    sent = emails(ctx)
    assert sent.count(("checkout_receipt", guest.email)) == 1
    assert sent.count(("booking_confirmation", guest.email)) == 1


def test_outgoing_message_is_delivered_once_and_marked_sent(ctx, worker):
    hotel = make_booking_hotel(ctx)
    guest = make_profile(ctx, hotel.id)
    booking = make_reservation(ctx, hotel, guest_profile_id=str(guest.id))
    msg = reservation_notes.add_message(ctx, hotel.id, booking.id, MessageIn(
        direction="outgoing", subject="Parking", body="Your parking spot is P4."))
    reservation_notes.add_message(ctx, hotel.id, booking.id, MessageIn(
        direction="incoming", body="Thanks!"))
    pump(ctx, worker)
    replay_all(ctx)
    pump(ctx, worker)
    with read_scope(ctx):
        row = ReservationMessage.get_by_id(msg.id)
    assert row.status == "SENT" and row.sent_at is not None
    assert [t for t, _ in emails(ctx)].count("reservation_message") == 1


def test_night_audit_fan_out_sends_one_message_per_occupied_room(ctx, worker):
    hotel = make_booking_hotel(ctx, rooms=3)
    a = make_checked_in(ctx, hotel)
    b = make_checked_in(ctx, hotel)
    day = date(2030, 5, 1)
    for _ in range(2):
        worker.flush_all()  # only this test's messages: none a relay enqueued for the set-up
        actors.housekeeping_stayovers.send(str(ctx.env_id), str(hotel.id), day.isoformat(), "ev1")
        worker.join(actors.housekeeping_stayovers.queue_name, fail_fast=True)
    with read_scope(ctx):
        tasks = list(HousekeepingTask.select().where(HousekeepingTask.kind == "STAYOVER"))
    assert sorted(t.room_id for t in tasks) == sorted([a.room_id, b.room_id])
    assert {t.business_date for t in tasks} == {day}


def test_tenant_actor_opens_the_env_of_the_message_and_one_connection(ctx, worker):
    from pms.db.database import db
    from pms.db.scope import current_env

    seen = []

    @tenant_actor(max_retries=0, time_limit=5000, actor_name=f"probe_{uuid.uuid4().hex}")
    def probe(ctx, marker: str) -> None:
        closed_at_start = db.is_closed()
        db.execute_sql("SELECT 1")
        seen.append((ctx.env_id, current_env(), marker, closed_at_start, db.is_closed(),
                     ctx.request_id))

    env = ctx.env_id
    first = probe.send(str(env), "m1")
    worker.join(probe.queue_name, fail_fast=True)
    second = probe.send(str(env), "m2")
    worker.join(probe.queue_name, fail_fast=True)
    # each message opened its own connection and released it at its end
    assert seen == [(env, env, "m1", True, False, first.message_id),
                    (env, env, "m2", True, False, second.message_id)]
    assert current_env() is None


def test_tenant_actor_refuses_a_body_without_ctx_at_decoration():
    with pytest.raises(TypeError, match="first parameter must be `ctx"):
        @tenant_actor(max_retries=0, actor_name=f"bad_{uuid.uuid4().hex}")
        def renamed(env: str, reservation_id: str) -> None:  # pragma: no cover - never runs
            raise AssertionError


def test_tenant_actor_closes_the_connection_when_the_body_fails(ctx, worker):
    from pms.db.database import db

    after = []

    @tenant_actor(max_retries=0, time_limit=5000, actor_name=f"boom_{uuid.uuid4().hex}")
    def boom(ctx) -> None:
        db.execute_sql("SELECT 1")
        raise RuntimeError("boom")

    @tenant_actor(max_retries=0, time_limit=5000, actor_name=f"look_{uuid.uuid4().hex}")
    def look(ctx) -> None:
        after.append((db.is_closed(), db.in_transaction()))

    boom.send(str(ctx.env_id))
    worker.join(boom.queue_name, fail_fast=False)
    look.send(str(ctx.env_id))
    worker.join(look.queue_name, fail_fast=False)
    assert after == [(True, False)]


def test_every_actor_is_tenant_scoped_and_declares_retries_time_limit_and_permanent_errors():
    for name in ("housekeeping_departure", "housekeeping_stayovers", "housekeeping_stayover_room",
                 "send_reservation_email", "deliver_reservation_message",
                 "initialize_environment", "run_job"):
        actor = getattr(actors, name)
        options = actor.options
        assert "max_retries" in options and "time_limit" in options, name
        assert options.get("throws"), name
        assert list(__import__("inspect").signature(actor.fn).parameters)[0] == "env_id", name


def test_the_worker_runs_no_relay():
    assert not any("relay" in name or "purge" in name for name in actors.broker.actors)


def test_night_audit_event_drives_one_stayover_per_in_house_room(ctx, worker):
    from pms.platform.ledger import EmbeddedLedger
    from pms.services.night_audit.end_of_day import Hooks, run_night_audit

    hotel = make_booking_hotel(ctx, rooms=3)
    a = make_checked_in(ctx, hotel)
    b = make_checked_in(ctx, hotel)
    out = run_night_audit(ctx, hotel.id, hooks=Hooks(ledger=EmbeddedLedger()), override_reason=EOD_OVERRIDE)
    assert out.status == "DONE", out.error
    pump(ctx, worker)
    worker.join(actors.housekeeping_stayover_room.queue_name, fail_fast=True)
    replay_all(ctx)
    pump(ctx, worker)
    worker.join(actors.housekeeping_stayover_room.queue_name, fail_fast=True)
    with read_scope(ctx):
        tasks = list(HousekeepingTask.select().where(HousekeepingTask.kind == "STAYOVER"))
    assert sorted(t.room_id for t in tasks) == sorted([a.room_id, b.room_id])
    assert {t.business_date for t in tasks} == {out.business_date}


def _queued_job(ctx, hotel):
    from pms.schemas.end_of_day import EndOfDayIn
    from pms.services import jobs

    job, _ = jobs.start_end_of_day(ctx, hotel.id, EndOfDayIn(override_reason=EOD_OVERRIDE))
    return job


def test_a_job_is_queued_through_the_outbox_and_run_job_finishes_it(ctx, worker):
    from pms.models.platform import Job, OutboxEvent

    hotel = make_booking_hotel(ctx, rooms=2)
    job = _queued_job(ctx, hotel)
    with read_scope(ctx):
        queued = [e.subject for e in OutboxEvent.select().where(
            OutboxEvent.type == "hotel:pms:job:queued")]
    assert queued == [str(job.id)]  # committed with the job: never lost after the 202
    pump(ctx, worker)
    worker.join(actors.run_job.queue_name, fail_fast=True)
    with read_scope(ctx):
        assert Job.get_by_id(job.id).status == "SUCCEEDED"


def test_a_job_whose_run_crashed_is_failed_never_left_running(ctx, database):
    from pms.models.platform import Job
    from pms.services import jobs

    class Exploding:
        @property
        def ledger(self):
            raise KeyboardInterrupt("interrupt inside the run")  # a BaseException, like a time limit

    hotel = make_booking_hotel(ctx, rooms=2)
    job = _queued_job(ctx, hotel)
    with pytest.raises(KeyboardInterrupt):
        jobs.run_job(ctx, job.id, platform=Exploding())
    with read_scope(ctx):
        row = Job.get_by_id(job.id)
    assert row.status == "FAILED" and row.error.startswith("interrupted: ")
    jobs.run_job(ctx, job.id)  # idempotent: a finished job is left alone
    with read_scope(ctx):
        assert Job.get_by_id(job.id).status == "FAILED"


def test_a_running_job_is_resumed_only_on_redelivery(ctx, database):
    from pms.models.platform import Job
    from pms.services import jobs

    hotel = make_booking_hotel(ctx, rooms=2)
    job = _queued_job(ctx, hotel)
    assert jobs._take(ctx, job.id, resume=False)  # a runner took it, then died
    jobs.run_job(ctx, job.id)  # a duplicate message: the live runner's job is left alone
    with read_scope(ctx):
        assert Job.get_by_id(job.id).status == "RUNNING"
    jobs.run_job(ctx, job.id, resume=True)  # the broker redelivered the dead runner's message
    with read_scope(ctx):
        assert Job.get_by_id(job.id).status == "SUCCEEDED"


def test_a_job_given_up_on_is_failed_never_left_queued(ctx, database):
    from pms.models.platform import Job
    from pms.services import jobs

    hotel = make_booking_hotel(ctx, rooms=2)
    job = _queued_job(ctx, hotel)
    assert jobs.fail_job(ctx, job.id, "gave up: OperationalError: database is locked")
    with read_scope(ctx):
        assert Job.get_by_id(job.id).status == "FAILED"
