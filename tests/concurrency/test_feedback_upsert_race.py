"""Feedback under real concurrency on PostgreSQL: eight ratings of one stay at once
leave one row, every submission answers (none fails on the unique index), exactly one of them
created the row, and the row holds one of the ratings sent. The control run reads the stay's
feedback row without its row lock (`wiring.installed(locking_enabled=False)`) and pauses after the
read: several submissions then each believe they created the row, which shows the lock is what
makes "created" true exactly once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from pms import wiring
from pms.db.database import db
from pms.db.uow import read_scope
from pms.models import Feedback
from pms.schemas.feedback import FeedbackIn
from pms.services.frontdesk import feedback
from tests.factories import make_booking_hotel, make_checked_in

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

SUBMITTERS, ROUNDS = 8, 3


def test_concurrent_ratings_of_one_stay_upsert_one_row(ctx, pg_db):
    hotel = make_booking_hotel(ctx, rooms=ROUNDS)
    for _ in range(ROUNDS):
        stay = make_checked_in(ctx, hotel)
        barrier = threading.Barrier(SUBMITTERS, timeout=120)

        def submit(rating: int, stay=stay, barrier=barrier) -> bool:
            barrier.wait()
            try:
                _, created = feedback.submit(ctx, hotel.id, FeedbackIn(
                    reservation_id=stay.id, rating=rating))
                return created
            finally:
                db.close()

        with ThreadPoolExecutor(max_workers=SUBMITTERS) as pool:
            futures = [pool.submit(submit, 1 + i % 5) for i in range(SUBMITTERS)]
        created = [f.result() for f in futures]  # raises if any submission failed
        assert created.count(True) == 1, created
        with read_scope(ctx):
            rows = list(Feedback.select().where(Feedback.reservation == stay.id))
        assert len(rows) == 1 and 1 <= rows[0].rating <= 5
        assert rows[0].version == SUBMITTERS  # one event (version) per submission


def _race_once(ctx, hotel) -> tuple[list[bool], list[BaseException], int]:
    """SUBMITTERS ratings of one new stay at once: (created flags, errors, the row's version)."""
    stay = make_checked_in(ctx, hotel)
    barrier = threading.Barrier(SUBMITTERS, timeout=120)

    def submit(rating: int) -> bool:
        barrier.wait()
        try:
            _, created = feedback.submit(ctx, hotel.id, FeedbackIn(
                reservation_id=stay.id, rating=rating))
            return created
        finally:
            db.close()

    with ThreadPoolExecutor(max_workers=SUBMITTERS) as pool:
        futures = [pool.submit(submit, 1 + i % 5) for i in range(SUBMITTERS)]
    created, errors = [], []
    for f in futures:
        try:
            created.append(f.result())
        except BaseException as exc:  # noqa: BLE001 - reported by the assertions
            errors.append(exc)
    with read_scope(ctx):
        version = Feedback.get(Feedback.reservation == stay.id).version
    return created, errors, version


def test_with_the_row_lock_and_a_wide_window_every_submission_is_one_version(ctx, pg_db):
    hotel = make_booking_hotel(ctx, rooms=1)
    with wiring.installed(pause_after_feedback_read=lambda: time.sleep(0.05)):
        created, errors, version = _race_once(ctx, hotel)
    assert errors == [] and created.count(True) == 1, (created, errors)
    assert version == SUBMITTERS


def test_control_without_the_row_lock_submissions_are_lost_or_fail(ctx, pg_db):
    """Without the row lock, submissions that read the same version overwrite each other:
    versions (and their events) are lost, or the outbox refuses a repeated aggregate version."""
    hotel = make_booking_hotel(ctx, rooms=1)
    with wiring.installed(locking_enabled=False,
                          pause_after_feedback_read=lambda: time.sleep(0.5)):
        created, errors, version = _race_once(ctx, hotel)
    assert errors or version < SUBMITTERS, (created, version)  # the race the lock prevents
