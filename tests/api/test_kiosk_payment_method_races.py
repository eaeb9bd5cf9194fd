"""A guest payment method removed twice at once: the second removal answers 404, never 500.
The race is PostgreSQL's (SQLite runs one writer at a time, so there the second removal simply
comes after the first): a third connection holds the method's row lock while both DELETEs
reach it, then lets go."""

from __future__ import annotations

import threading
import time

import psycopg2
import pytest

from pms.db.database import db, is_postgres
from pms.db.uow import read_scope
from pms.models import GuestPaymentMethod
from tests.factories import make_booking_hotel, make_profile
from tests.helpers import assert_problem


def _connection():
    database = db.obj
    return psycopg2.connect(database=database.database, **database.connect_params)


def _waiting(count: int, deadline: float = 20.0) -> bool:
    """Whether `count` backends wait on a lock (asked until the deadline: a wait for a
    condition, not a timing window)."""
    conn = _connection()
    try:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            with conn.cursor() as cur:
                cur.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = "
                            "'Lock' AND datname = current_database()")
                if cur.fetchone()[0] >= count:
                    return True
            conn.rollback()
            time.sleep(0.02)
        return False
    finally:
        conn.close()


def test_two_removals_of_one_payment_method_answer_204_and_404(api, ctx, monkeypatch):
    hotel = make_booking_hotel(ctx, rooms=1)
    guest = make_profile(ctx, hotel.id)
    url = f"/v1/properties/{hotel.id}/profiles/{guest.id}/payment-methods"
    method = f"pm_holder_{guest.id.hex}"  # the sandbox reports it as the guest's
    assert api.post(url, {"payment_method_id": method}).status_code == 201
    params = {"payment_method_id": method}
    if not is_postgres():
        assert api.delete(url, params=params).status_code == 204
        assert_problem(api.delete(url, params=params), 404)
        return
    with read_scope(ctx):
        row_id = GuestPaymentMethod.get(GuestPaymentMethod.profile == guest.id).id
    # The two removals wait on the held lock until both are seen waiting; on a loaded machine
    # that can take longer than the service's 2-second lock wait, which would answer 503 and
    # test nothing. The wait here is the test's own, not a window it measures.
    monkeypatch.setattr(db.obj, "lock_timeout_ms", 60_000)
    holder = _connection()
    answers: list[int] = []
    try:
        with holder.cursor() as cur:
            cur.execute("SELECT set_config('app.env_id', %s, true)", (str(api.env_id),))
            cur.execute("SELECT 1 FROM guest_payment_method WHERE id = %s FOR UPDATE",
                        (str(row_id),))
            assert cur.fetchone() == (1,)

        def remove() -> None:
            answers.append(api.delete(url, params=params).status_code)

        threads = [threading.Thread(target=remove) for _ in range(2)]
        for thread in threads:
            thread.start()
        if not _waiting(2):
            pytest.fail("the two removals never reached the row's lock")
    finally:
        holder.rollback()
        holder.close()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(answers) == [204, 404]
