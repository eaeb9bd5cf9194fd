"""`Idempotency-Key` on a one-transaction route (the booking) on PostgreSQL: the key is claimed
in the booking's own transaction and its record commits WITH the change, with every
rule of the general path kept (CONTRACT §3): replay, mismatch 422, in use 409 at once, 409 not
stored, 422 stored; and the whole booking in few round trips.

Rules pinned, by test name:
- `idempotency_record_commits_with_the_change`: one transaction writes the reservation, its
  outbox and audit rows and the done record; a replay answers from it and changes nothing.
- `idempotency_key_held_by_a_live_request_is_409_at_once`: a concurrent holder of the key (its
  transaction-level lock) gets 409 idempotency_key_in_use without waiting.
- `booking_with_idempotency_key_claims_first_and_writes_with_the_commit`: the claim rides the
  first round trip and the audit, outbox and record INSERTs travel with the COMMIT (the whole
  POST's round trips are a budget, pinned in tests/budgets).
"""

from __future__ import annotations

from datetime import timedelta

import psycopg2
import pytest

from pms.db.database import db, is_postgres
from pms.db.uow import read_scope
from pms.models import IdempotencyRecord, Reservation
from pms.models.inventory import InventoryDay
from pms.services.inventory import inventory
from tests.factories import make_booking_hotel, reservation_body
from tests.helpers import assert_problem, counts, wire_tally


def _policy_read_first(tally) -> list[str]:
    """The transaction's round trips, after checking the gate's version check is in the first
    one, before the claim, and nowhere else."""
    first = tally.log[0]
    assert "pms_policy_version_is" in first and "BEGIN" in first, first
    assert first.index("pms_policy_version_is") < first.index("pms_claim_idempotency_key")
    assert not any("policy_version" in entry for entry in tally.log[1:])
    return tally.log


@pytest.fixture
def hotel(ctx, database):
    if not is_postgres():
        pytest.skip("the in-transaction claim is PostgreSQL's (SQLite keeps the general path)")
    made = make_booking_hotel(ctx, rooms=1, amount="120.00")
    inventory.ensure_inventory(ctx, made.prop.id, made.room_type.id, made.today,
                               made.today + timedelta(days=30))
    return made


def _post(api, hotel, key, **over):
    return api.post(f"/v1/properties/{hotel.id}/reservations", reservation_body(hotel, **over),
                    headers={"Idempotency-Key": key})


def _stored(key):  # noqa: ANN001, ANN202 - the key as stored for the api token
    from tests.api.test_idempotency import _stored as stored

    return stored(key)


def _record(ctx, key):
    with read_scope(ctx):
        return IdempotencyRecord.get_or_none(IdempotencyRecord.key == _stored(key))


def test_idempotency_record_commits_with_the_change(api, ctx, hotel):
    first = _post(api, hotel, "book-1")
    assert first.status_code == 201, first.text
    record = _record(ctx, "book-1")
    assert record.state == "done" and record.response_status == 201
    with read_scope(ctx):
        assert Reservation.select().count() == 1
    before = counts(ctx)
    again = _post(api, hotel, "book-1")
    assert again.status_code == 201 and again.json == first.json
    assert again.headers["idempotent-replayed"] == "true"
    assert again.headers.get("location") == first.headers.get("location")
    assert counts(ctx) == before
    assert_problem(_post(api, hotel, "book-1", adults=1), 422, "idempotency_key_mismatch")


def test_idempotency_sold_out_is_not_stored_and_validation_is(api, ctx, hotel):
    assert _post(api, hotel, "fill").status_code == 201
    sold_out = _post(api, hotel, "late")
    assert_problem(sold_out, 409, "room_type_unavailable")
    assert _record(ctx, "late") is None  # the key is free: a retry runs again
    assert_problem(_post(api, hotel, "late"), 409, "room_type_unavailable")
    bad = _post(api, hotel, "bad", adults=9)
    assert bad.status_code == 422
    again = _post(api, hotel, "bad", adults=9)
    assert again.status_code == 422 and again.headers["idempotent-replayed"] == "true"
    with read_scope(ctx):
        assert Reservation.select().count() == 1


def test_idempotency_key_held_by_a_live_request_is_409_at_once(api, ctx, hotel):
    database = db.obj
    other = psycopg2.connect(database=database.database, **database.connect_params)
    try:
        with other.cursor() as cur:
            # another request's claim, as it goes out in its first round trip (migration 011)
            cur.execute("SELECT pms_claim_idempotency_key(%s, %s, now())", (ctx.env_id.hex, _stored("held")))
        resp = _post(api, hotel, "held")
        # at once: a request that waited for the held key would have waited until its lock
        # timeout (the holder never lets go here) and answered 503 lock_timeout
        assert_problem(resp, 409, "idempotency_key_in_use")
        with read_scope(ctx):
            assert Reservation.select().count() == 0
    finally:
        other.rollback()
        other.close()
    assert _post(api, hotel, "held").status_code == 201


def test_booking_with_idempotency_key_claims_first_and_writes_with_the_commit(api, ctx, hotel):
    _post(api, hotel, "warm", departure_date=str(hotel.today + _days(1)))  # compile once
    with wire_tally() as tally:
        resp = _post(api, hotel, "counted", arrival_date=str(hotel.today + _days(1)),
                     departure_date=str(hotel.today + _days(2)))
    assert resp.status_code == 201, resp.text
    assert tally.transactions == 1
    assert "pms_claim_idempotency_key" in _policy_read_first(tally)[0]
    last = tally.log[-1]  # the writes that need no answer go out with the COMMIT
    assert all(table in last for table in ("audit_entry", "outbox_event", "idempotency_record"))
    assert last.rstrip().endswith("COMMIT")


def _days(n):
    return timedelta(days=n)


def test_idempotency_fold_by_confirmation_number_in_transaction(api, ctx, hotel):
    first = _post(api, hotel, "fold-1", confirmation_number="FOLDME2030")
    assert first.status_code == 201, first.text
    twin = _post(api, hotel, "fold-2", confirmation_number="FOLDME2030")
    assert twin.status_code == 200 and twin.json["id"] == first.json["id"]
    assert _record(ctx, "fold-2").response_status == 200
    replay = _post(api, hotel, "fold-2", confirmation_number="FOLDME2030")
    assert replay.status_code == 200 and replay.headers["idempotent-replayed"] == "true"
    with read_scope(ctx):
        assert Reservation.select().count() == 1
        assert {d.sold for d in InventoryDay.select().where(
            (InventoryDay.room_type == hotel.room_type.id) & (InventoryDay.sold > 0))} == {1}


# -- the claim in the first round trip (migration 011), on the booking and the profile create --

def _profile(api, hotel, key, **over):
    body = {"first_name": "Grace", "last_name": "Hopper", "email": "grace@example.com", **over}
    return api.post(f"/v1/properties/{hotel.id}/profiles", body,
                    headers={"Idempotency-Key": key})


def test_profile_create_with_key_is_one_transaction_claimed_first(api, ctx, hotel):
    _profile(api, hotel, "warm-p", email="warm@example.com")  # compile once
    with wire_tally() as tally:
        resp = _profile(api, hotel, "p-counted")
    assert resp.status_code == 201, resp.text
    log = "\n---\n".join(tally.log or [])
    assert tally.transactions == 1, log
    assert "pms_claim_idempotency_key" in _policy_read_first(tally)[0]
    assert tally.log[-1].rstrip().endswith("COMMIT")
    assert all(t in tally.log[-1] for t in ("audit_entry", "outbox_event", "idempotency_record"))
    record = _record(ctx, "p-counted")
    assert record.state == "done" and record.response_status == 201
    before = counts(ctx)
    again = _profile(api, hotel, "p-counted")
    assert again.status_code == 201 and again.json == resp.json
    assert again.headers["idempotent-replayed"] == "true"
    assert counts(ctx) == before
    assert_problem(_profile(api, hotel, "p-counted", last_name="Other"), 422,
                   "idempotency_key_mismatch")


def test_profile_key_held_by_a_live_request_is_409_at_once(api, ctx, hotel):
    database = db.obj
    other = psycopg2.connect(database=database.database, **database.connect_params)
    try:
        with other.cursor() as cur:
            cur.execute("SELECT pms_claim_idempotency_key(%s, %s, now())", (ctx.env_id.hex,
                                                                          _stored("p-held")))
        # at once: a wait for the held key would end at the lock timeout as 503 lock_timeout
        assert_problem(_profile(api, hotel, "p-held"), 409, "idempotency_key_in_use")
        assert _record(ctx, "p-held") is None  # not stored: the retry runs
    finally:
        other.rollback()
        other.close()
    assert _profile(api, hotel, "p-held").status_code == 201


def test_an_expired_record_is_claimed_again_in_the_first_round_trip(api, ctx, hotel):
    first = _post(api, hotel, "b-old")
    assert first.status_code == 201, first.text
    with read_scope(ctx), db.atomic():
        IdempotencyRecord.update(expires_at=ctx.now - timedelta(seconds=1)).where(
            IdempotencyRecord.key == _stored("b-old")).execute()
    again = _post(api, hotel, "b-old", arrival_date=str(hotel.today + _days(5)),
                  departure_date=str(hotel.today + _days(7)))
    assert again.status_code == 201, again.text  # ran (another body is no mismatch any more)
    assert "idempotent-replayed" not in again.headers
    assert again.json["id"] != first.json["id"]
    assert _record(ctx, "b-old").response_body == again.text


def test_an_abandoned_claim_on_a_one_transaction_route_runs_once_on_retry(api, ctx, hotel):
    import hashlib
    import json

    body = reservation_body(hotel)
    raw = json.dumps(body).encode()
    path = f"/v1/properties/{hotel.id}/reservations"
    fp = hashlib.sha256(f"POST {path} {hashlib.sha256(raw).hexdigest()}".encode()).hexdigest()
    with read_scope(ctx), db.atomic():
        IdempotencyRecord.create(key=_stored("b-died"), fingerprint=fp, state="running",
                                 request_id="died-early", created_at=ctx.now - timedelta(minutes=3),
                                 expires_at=ctx.now + timedelta(hours=70))

    def send():  # noqa: ANN202
        return api.request("POST", path, body=raw, headers={
            "Idempotency-Key": "b-died", "Content-Type": "application/json"})

    first = send()
    # the claim found the abandoned record: the key is freed, nothing ran, the client retries
    assert_problem(first, 409, "idempotency_key_in_use")
    with read_scope(ctx):
        assert Reservation.select().count() == 0
    second = send()
    assert second.status_code == 201, second.text
    replay = send()
    assert replay.status_code == 201 and replay.headers["idempotent-replayed"] == "true"
    with read_scope(ctx):
        assert Reservation.select().count() == 1


def test_an_answer_given_before_any_statement_is_stored_and_replayed(api, ctx, hotel):
    # a body refused by its schema: no statement ran, so the claim never went out; the answer
    # is stored through the general claim, and replayed
    bad = api.post(f"/v1/properties/{hotel.id}/reservations", {"adults": "two"},
                   headers={"Idempotency-Key": "b-schema"})
    assert bad.status_code == 422, bad.text
    record = _record(ctx, "b-schema")
    assert record.state == "done" and record.response_status == 422
    again = api.post(f"/v1/properties/{hotel.id}/reservations", {"adults": "two"},
                     headers={"Idempotency-Key": "b-schema"})
    assert again.status_code == 422 and again.headers["idempotent-replayed"] == "true"
    assert again.json == bad.json
    assert_problem(_post(api, hotel, "b-schema"), 422, "idempotency_key_mismatch")


def test_concurrent_profile_creates_with_one_email_make_one_profile(api, ctx, hotel):
    from concurrent.futures import ThreadPoolExecutor

    from pms.models import Profile

    def create(i):  # noqa: ANN001, ANN202
        try:
            return _profile(api, hotel, f"p-race-{i}", email="race@example.com")
        finally:
            db.obj.close()  # this thread's kept connection back to the pool (the thread ends)

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(create, range(6)))
    assert sorted(r.status_code for r in results) == [200] * 5 + [201], [r.text for r in results]
    assert len({r.json["id"] for r in results}) == 1
    with read_scope(ctx):
        assert Profile.select().where(Profile.email_normalized == "race@example.com").count() == 1
    with read_scope(ctx):  # one created event for the one profile
        from pms.models import OutboxEvent

        assert OutboxEvent.select().where(OutboxEvent.type == "hotel:pms:profile:created").count() == 1
