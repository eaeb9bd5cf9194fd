"""Feedback under real concurrency on PostgreSQL (issue 29): eight ratings of one stay at once
leave one row, every submission answers (none fails on the unique index), exactly one of them
created the row, and the row holds one of the ratings sent."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from pms.db.database import db
from pms.db.uow import read_scope
from pms.models import Feedback
from pms.schemas.feedback import FeedbackIn
from pms.services import feedback
from tests.factories import make_booking_hotel, make_checked_in

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

SUBMITTERS, ROUNDS = 8, 3


def test_concurrent_ratings_of_one_stay_upsert_one_row(ctx, pg_db):
    hotel = make_booking_hotel(ctx, rooms=ROUNDS)
    for _ in range(ROUNDS):
        stay = make_checked_in(ctx, hotel)
        barrier = threading.Barrier(SUBMITTERS)

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
