"""The digital keys' lock side, on SQLite and PostgreSQL, against the embedded
sandbox lock service: a command's acknowledgement is `sent`, only the lock's own read-back is
`confirmed`; an offline lock never confirms a revocation, so the key says until when the old
card may still open the door; lock-service failures are counted, end `failed` with an event, and
the sweeper sends the command again. The relay's subscriber sends the key's commands."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pms.db.uow import read_scope, unit_of_work
from pms.errors import FolioNotClosable
from pms.models import DigitalKey
from pms.platform.locks import EmbeddedLocks, LocksUnavailable
from pms.schemas.keys import KeyIn
from pms.services.frontdesk import checkout
from pms.services.keys import keys, lock_sync
from tests.factories import make_booking_hotel, make_checked_in, pay_folio
from tests.helpers import outbox_types
from workers.subscriptions import KEY_COMMAND_TYPES, default_subscribers


@pytest.fixture
def stay(ctx, database):
    hotel = make_booking_hotel(ctx, rooms=2)
    return hotel, make_checked_in(ctx, hotel)


def _issue(ctx, stay, key_type="MOBILE"):
    hotel, res = stay
    return keys.issue_key(ctx, hotel.id, KeyIn(reservation_id=res.id, key_type=key_type))


def _row(ctx, key_id) -> DigitalKey:
    with read_scope(ctx):
        return DigitalKey.get_by_id(key_id)


def _check_out(ctx, stay):
    hotel, res = stay
    try:
        checkout.check_out(ctx, hotel.id, res.id)
    except FolioNotClosable as exc:
        pay_folio(ctx, res, exc.extra["balance"])
        checkout.check_out(ctx, hotel.id, res.id)


def test_an_online_lock_acknowledges_then_confirms_by_its_own_read_back(ctx, stay):
    locks = EmbeddedLocks()
    key = _issue(ctx, stay)
    keys.activate(ctx, stay[0].id, key.id)
    row = lock_sync.sync_lock(ctx, key.id, locks)
    assert row.lock_state == "confirmed" and row.lock_command == "activate"
    assert [c for c, _ in locks.calls] == ["issue", "activate"]
    assert row.credential_ref and row.revocation_path == "online"
    types = outbox_types(ctx)
    assert types[-2:] == ["hotel:pms:digital_key:lock_sent",
                          "hotel:pms:digital_key:lock_confirmed"]
    lock_sync.sync_lock(ctx, key.id, locks)  # a replay sends nothing more
    assert len(locks.calls) == 2


def test_an_acknowledgement_alone_is_sent_not_confirmed(ctx, stay):
    class AckOnly(EmbeddedLocks):
        def read_back(self, credential_ref):  # the lock has not reported yet
            from pms.platform.locks import LockReport

            return LockReport(state=None)

    key = _issue(ctx, stay)
    row = lock_sync.sync_lock(ctx, key.id, AckOnly())
    assert row.lock_state == "sent" and row.lock_confirmed_at is None


def test_revocation_on_an_online_lock_is_confirmed_with_its_time(ctx, stay):
    locks = EmbeddedLocks()
    key = _issue(ctx, stay, "MOBILE")
    lock_sync.sync_lock(ctx, key.id, locks)
    _check_out(ctx, stay)
    row = _row(ctx, key.id)
    assert row.status == "REVOKED" and row.lock_state == "pending"
    out = keys.key_out(row, ctx.now)
    assert out.revocation.effective_no_later_than == row.valid_until  # until the lock says so
    row = lock_sync.sync_lock(ctx, key.id, locks)
    out = keys.key_out(row, ctx.now)
    assert row.lock_state == "confirmed"
    assert out.revocation.path == "online" and out.revocation.confirmed_at is not None
    assert out.revocation.effective_no_later_than == out.revocation.confirmed_at
    assert "hotel:pms:digital_key:revocation_confirmed" in outbox_types(ctx)


def test_an_offline_card_revocation_stays_sent_and_says_until_when_the_card_may_open(ctx, stay):
    locks = EmbeddedLocks()
    key = _issue(ctx, stay, "CARD")
    lock_sync.sync_lock(ctx, key.id, locks)
    _check_out(ctx, stay)
    row = lock_sync.sync_lock(ctx, key.id, locks)
    out = keys.key_out(row, ctx.now)
    assert row.lock_state == "sent"  # the lock service took it; the door cannot tell
    assert out.revocation.path == "next_guest_key" and out.revocation.confirmed_at is None
    assert out.revocation.effective_no_later_than == row.valid_until


def test_lock_outages_are_counted_then_failed_with_an_event_and_retried_by_the_sweeper(
        ctx, stay):
    down = EmbeddedLocks(outage=True)
    key = _issue(ctx, stay)
    for attempt in range(1, lock_sync.MAX_LOCK_ATTEMPTS + 1):
        with pytest.raises(LocksUnavailable):
            lock_sync.sync_lock(ctx, key.id, down)
        assert _row(ctx, key.id).lock_attempts == attempt
    row = _row(ctx, key.id)
    assert row.lock_state == "failed" and "unavailable" in row.lock_last_error
    with pytest.raises(LocksUnavailable):  # the actor keeps retrying: one lock_failed only
        lock_sync.sync_lock(ctx, key.id, down)
    assert _row(ctx, key.id).lock_state == "failed"
    assert outbox_types(ctx).count("hotel:pms:digital_key:lock_failed") == 1
    assert key.id not in lock_sync.keys_to_sync(ctx)  # not yet due
    later = ctx.with_(now=ctx.now + lock_sync.RETRY_AFTER + timedelta(minutes=1))
    with unit_of_work(ctx):  # (updated_at is stamped by the wall clock)
        DigitalKey.update(updated_at=ctx.now - lock_sync.RETRY_AFTER - timedelta(seconds=5)).where(
            DigitalKey.id == key.id).execute()
    assert key.id in lock_sync.keys_to_sync(later)
    result = lock_sync.sweep(later, EmbeddedLocks())
    assert result["synced"] >= 1
    assert _row(ctx, key.id).lock_state == "confirmed"


def test_a_newer_intent_wins_over_a_slow_acknowledgement(ctx, stay):
    hotel, _ = stay
    key = _issue(ctx, stay)

    class Slow(EmbeddedLocks):
        def command(self, command, **kw):
            ack = super().command(command, **kw)
            keys.activate(ctx, hotel.id, key.id)  # the guest activates meanwhile
            return ack

    assert lock_sync.sync_lock(ctx, key.id, Slow()) is None
    row = _row(ctx, key.id)
    assert row.status == "ACTIVE" and row.lock_state == "pending"  # the newer intent stays due
    assert lock_sync.sync_lock(ctx, key.id, EmbeddedLocks()).lock_state == "confirmed"


def test_key_command_events_are_sent_to_the_lock_by_the_relay():
    subs = default_subscribers()
    for type_ in ("issued", "activated", "deactivated", "revoked", "validity_changed"):
        assert f"hotel:pms:digital_key:{type_}" in KEY_COMMAND_TYPES
        assert subs[f"hotel:pms:digital_key:{type_}"]
    # the sync's own events do not send anything again (no loop)
    for type_ in ("lock_sent", "lock_confirmed", "lock_failed", "expired"):
        assert f"hotel:pms:digital_key:{type_}" not in subs


def test_a_lock_event_confirms_only_the_state_the_key_asked_for(ctx, stay):
    from pms.platform.locks import LockReport

    class Silent(EmbeddedLocks):  # acknowledges, never reads back
        def read_back(self, credential_ref):
            return LockReport(state=None)

    key = _issue(ctx, stay, "MOBILE")
    keys.activate(ctx, stay[0].id, key.id)
    row = lock_sync.sync_lock(ctx, key.id, Silent())
    assert row.lock_state == "sent" and row.lock_command == "activate"
    stale = lock_sync.record_lock_report(ctx, row.credential_ref, "disabled", row.valid_until)
    assert stale.lock_state == "sent"  # the lock reports another state: nothing confirmed
    late = lock_sync.record_lock_report(ctx, row.credential_ref, "enabled",
                                   row.valid_until + timedelta(days=1))
    assert late.lock_state == "sent"  # another end than the key's: nothing confirmed
    done = lock_sync.record_lock_report(ctx, row.credential_ref, "enabled", row.valid_until)
    assert done.lock_state == "confirmed" and done.lock_confirmed_at is not None
    assert lock_sync.record_lock_report(ctx, "lk_unknown", "enabled") is None
