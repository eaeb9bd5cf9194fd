"""Digital keys' lock commands go through the outbox: the relay's subscriber sends
`sync_digital_key`, which reaches the (embedded sandbox) lock service after the commit; run
twice, it sends nothing new."""

from __future__ import annotations

from pms.db.uow import read_scope
from pms.models import DigitalKey
from pms.schemas.keys import KeyIn
from pms.services.keys import keys
from tests.factories import make_booking_hotel, make_checked_in
from tests.workers.test_actors import _worker, pump, replay_all, worker  # noqa: F401
from workers import actors


def test_an_issued_key_reaches_the_lock_through_the_outbox_and_is_confirmed(ctx, worker):  # noqa: F811
    hotel = make_booking_hotel(ctx)
    stay = make_checked_in(ctx, hotel)
    key = keys.issue_key(ctx, hotel.id, KeyIn(reservation_id=stay.id, key_type="PIN"))
    with read_scope(ctx):
        assert DigitalKey.get_by_id(key.id).lock_state == "pending"  # nothing called in the txn
    pump(ctx, worker)
    worker.join(actors.sync_digital_key.queue_name, fail_fast=True)
    with read_scope(ctx):
        row = DigitalKey.get_by_id(key.id)
    assert row.lock_state == "confirmed" and row.credential_ref
    calls = len(actors._platform().locks.calls)
    replay_all(ctx)
    pump(ctx, worker)
    worker.join(actors.sync_digital_key.queue_name, fail_fast=True)
    assert len(actors._platform().locks.calls) == calls
