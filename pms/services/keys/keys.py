"""Digital room keys: issue, list, activate, deactivate, and the key's read view.

The stay's hooks (check-out and the revert of a check-in revoke, a room move re-keys, a
departure edit moves valid_until) are `pms.services.keys.stay_hooks`; the sweeper and the lock
sync driven from the outbox are `pms.services.keys.lock_sync`.

Rules (SPEC "Digital key", CONTRACT §2, research next-capabilities §1 and beyond §1):
- A key is issued INACTIVE only for a CHECKED_IN stay with a room (409 key_requires_checked_in).
- valid_from is the issue time; valid_until the departure date at the property's
  check_out_time, in its time zone, stored UTC. A departure edit of the in-house stay moves it.
- A key past valid_until reads EXPIRED at once (`effective_status`, no write: reads stay
  read-only); the sweeper writes EXPIRED with a `digital_key:expired` event.
- A stay holds at most `max_keys_per_stay` live keys (INACTIVE or ACTIVE and not past
  valid_until), from the property's kiosk config, default 2, for every caller: 409
  key_limit_reached with `limit` and `count`. Staff (no holder, not a kiosk) may exceed it by
  giving `override_reason`, kept on the key and its audit row. The stay's reservation row is
  locked (FOR UPDATE) before counting, so concurrent issues for one stay queue and never exceed
  the limit (tests/concurrency/test_key_limit_race.py, with the control without the lock).
- Every change of intent records a lock command (`lock_state` pending, `queue_lock_command`) and
  an event (`record_change`); the lock sync sends it.
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from pms import wiring
from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.pagination import Page, paginate
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.states import (
    DIGITAL_KEY_INITIAL,
    DIGITAL_KEY_LIVE,
    DIGITAL_KEY_MACHINE,
    LOCK_STATE_INITIAL,
    LOCK_STATE_MACHINE,
    DigitalKeyStatus,
    ReservationStatus,
)
from pms.errors import (
    Conflict,
    Forbidden,
    KeyLimitReached,
    KeyNotActive,
    KeyRequiresCheckedIn,
    NotFound,
    ValidationFailed,
)
from pms.models import DigitalKey, KioskConfig, Property, Reservation
from pms.models.kiosk import DEFAULT_MAX_KEYS_PER_STAY
from pms.queries.lookups import live_key_count, load_reservation
from pms.schemas import keys as s
from pms.schemas.common import to_data
from pms.services.catalog.catalog import load_property
from pms.services.kiosk import kiosk_sessions
from pms.services.references import body_reference

LIVE = [st.value for st in DIGITAL_KEY_LIVE]


# -- validity and the read view ------------------------------------------------------------------

def valid_until_for(prop: Property, departure: date, departure_time: str | None = None
                    ) -> datetime:
    """The departure date at the stay's departure_time (a late check-out, "HH:MM") or else the
    property's check_out_time (default 11:00), in the property's time zone, as UTC."""
    hours, _, minutes = (departure_time or prop.check_out_time or "11:00").partition(":")
    local = datetime.combine(departure, time(int(hours), int(minutes or 0)),
                             tzinfo=ZoneInfo(prop.timezone))
    return local.astimezone(UTC)


def effective_status(row: DigitalKey, now: datetime) -> str:
    """The status a reader sees: a live key past valid_until is EXPIRED (never written here)."""
    if row.status in LIVE and now >= row.valid_until:
        return DigitalKeyStatus.EXPIRED.value
    return row.status


def key_out(row: DigitalKey, now: datetime) -> s.KeyOut:
    revocation = None
    if row.revoked_at is not None:
        revocation = s.RevocationOut(
            reason=row.revoke_reason or "staff", revoked_at=row.revoked_at,
            path=row.revocation_path,
            effective_no_later_than=row.revocation_confirmed_at or row.revocation_effective_by,
            confirmed_at=row.revocation_confirmed_at)
    return s.KeyOut(
        id=row.id, property_id=row.property_id, reservation_id=row.reservation_id,
        room_number=row.room_number, key_type=row.key_type,
        status=effective_status(row, now), valid_from=row.valid_from,
        valid_until=row.valid_until, credential_ref=row.credential_ref,
        lock=s.LockStateOut(state=row.lock_state, command=row.lock_command,
                            attempts=row.lock_attempts, last_error=row.lock_last_error,
                            sent_at=row.lock_sent_at, confirmed_at=row.lock_confirmed_at),
        revocation=revocation, pair_id=row.pair_id, replaces_key_id=row.replaces_key_id,
        holder_profile_id=row.holder_profile_id, issued_by=row.issued_by, override_reason=row.override_reason,
        created_at=row.created_at, updated_at=row.updated_at)


def record_change(uow: UnitOfWork, row: DigitalKey, action: str, *, before: dict[str, Any] | None,
            reason: str | None = None) -> None:
    uow.record("digital_key", action, row, to_data(key_out(row, uow.ctx.now)), before=before,
               reason=reason, property_id=row.property_id)


def max_keys_per_stay(property_id: uuid.UUID) -> int:
    config = (KioskConfig.select(KioskConfig.max_keys_per_stay)
              .where(KioskConfig.property == property_id).first())
    return config.max_keys_per_stay if config is not None else DEFAULT_MAX_KEYS_PER_STAY


def queue_lock_command(row: DigitalKey) -> None:
    """Record that the lock must learn the key's new intent (sent by `sync_lock`)."""
    row.lock_state = LOCK_STATE_MACHINE.transition(row.lock_state, "command").value
    row.lock_attempts = 0
    row.lock_last_error = None


# -- use cases -----------------------------------------------------------------------------------

def issue_key(ctx: Ctx, property_id: uuid.UUID, body: s.KeyIn) -> DigitalKey:
    """Issue an INACTIVE key for a CHECKED_IN stay with a room; at a kiosk (COLLECT_KEY) the
    key is issued and activated in one step, so it is ACTIVE when the guest walks away.

    Raises:
        NotFound: no such reservation (a guest session: of its own).
        KeyRequiresCheckedIn (409): the stay is not CHECKED_IN or has no room.
        Conflict (409 key_validity_ended, `valid_until`): the stay's key window is over (its
            departure date's check-out time has passed).
        KeyLimitReached (409, `limit` and `count`): the stay holds max_keys_per_stay live keys
            and the caller gave no override (staff only).
        Forbidden (403 override_not_allowed): a guest or kiosk token sent override_reason.
        KioskLocked, KioskModeDisabled (409), KioskSessionInvalid (403): a kiosk token
            without COLLECT_KEY or without its session for this stay.
    """
    if body.override_reason is not None and (ctx.holder_id is not None
                                             or ctx.client_kind == "kiosk"):
        raise Forbidden("only staff may exceed the stay's key limit", code="override_not_allowed")
    with lock_errors(), unit_of_work(ctx) as uow:
        prop = load_property(property_id)
        kiosk_sessions.admit(ctx, property_id, body.reservation_id, kiosk_sessions.COLLECT_KEY)
        # the stay's row lock serializes the issues (and the check-out) of one stay
        with body_reference("reservation_id", "no such reservation", ctx):
            row = load_reservation(ctx, property_id, body.reservation_id, lock=True)
        if row.status != ReservationStatus.CHECKED_IN or row.room_id is None:
            raise KeyRequiresCheckedIn(
                f"keys are issued only for a checked-in stay with a room (status {row.status})",
                status_now=row.status)
        limit = max_keys_per_stay(property_id)
        count = live_key_count(row.id, ctx.now)
        pause = wiring.current().pause_after_key_count
        if pause is not None:  # TEST-ONLY: widen the window between the count and the write
            pause()
        override = None
        if count >= limit:
            if body.override_reason is None:
                raise KeyLimitReached(f"the stay already holds {count} live keys (limit {limit})",
                                      limit=limit, count=count)
            override = body.override_reason
        until = valid_until_for(prop, row.departure_date, row.departure_time)
        if until <= ctx.now:  # departure day after the check-out time: it would open nothing
            raise Conflict(f"the stay's keys ended at {until.isoformat()} (the departure "
                           "date's check-out time); extend the stay for a new key",
                           code="key_validity_ended", valid_until=until.isoformat())
        holder = _key_holder(row, body.holder_profile_id)
        room = _room(row.room_id)
        key = new_key(ctx, row, room.id, room.room_number, body.key_type, until,
                       override_reason=override, holder=holder)
        record_change(uow, key, "issued", before=None, reason=override)
        if kiosk_sessions.is_kiosk(ctx):
            # the key a guest collects at a kiosk opens the door when the guest walks away:
            # issued and activated in one unit of work (two transitions, two events); its
            # lock command is then issue + activate (the lock holds it enabled)
            _change_active(uow, key, DIGITAL_KEY_MACHINE.transition(key.status, "activate"),
                           "activate")
    return key


def _key_holder(reservation: Reservation, named: uuid.UUID | None) -> uuid.UUID | None:
    """The profile the key is for: the one named (a companion sharing the room: a GUEST
    profile of the env), else the stay's guest.

    Raises:
        ValidationFailed (422 unknown_reference, field holder_profile_id): no such guest
            profile (a company profile holds no room key).
    """
    from pms.models import Profile

    if named is None or named == reservation.guest_profile_id:
        return reservation.guest_profile_id
    if not Profile.select().where((Profile.id == named) & (Profile.kind == "GUEST")).exists():
        raise ValidationFailed(
            "no such guest profile", code="unknown_reference",
            errors=[{"field": "holder_profile_id", "message": "no such guest profile"}])
    return named


def _room(room_id: uuid.UUID) -> Any:
    from pms.models import Room

    return Room.select(Room.id, Room.room_number).where(Room.id == room_id).get()


def new_key(ctx: Ctx, reservation: Reservation, room_id: uuid.UUID, room_number: str,
             key_type: str, valid_until: datetime, *, override_reason: str | None = None,
             pair_id: uuid.UUID | None = None, replaces: uuid.UUID | None = None,
             holder: uuid.UUID | None = None) -> DigitalKey:
    return DigitalKey.create(holder_profile_id=holder,
        property=reservation.property_id, reservation=reservation.id, room_id=room_id,
        room_number=room_number, key_type=key_type, status=DIGITAL_KEY_INITIAL.value,
        valid_from=ctx.now, valid_until=valid_until, issued_by=ctx.sub,
        override_reason=override_reason, lock_command="issue",
        lock_state=LOCK_STATE_INITIAL.value, pair_id=pair_id, replaces_key_id=replaces)


def list_keys(ctx: Ctx, property_id: uuid.UUID, query: s.KeyQuery) -> Page[s.KeyOut]:
    """The keys of one stay, oldest first. A guest session sees every key of its own stay, and
    a companion's (a profile that holds a key of the stay) only the keys it holds; any other
    guest gets 404."""
    with read_scope(ctx):
        keys = DigitalKey.select().where(DigitalKey.reservation == query.reservation_id)
        try:
            load_reservation(ctx, property_id, query.reservation_id)
        except NotFound:
            if ctx.holder_id is None:
                raise
            keys = keys.where((DigitalKey.holder_profile_id == ctx.holder_id)
                              & (DigitalKey.property == property_id))
            if not keys.exists():
                raise
        page = paginate(keys, DigitalKey, limit=query.limit, cursor=query.cursor)
        return Page(items=[key_out(k, ctx.now) for k in page.items],
                    next_cursor=page.next_cursor)


def list_room_keys(ctx: Ctx, property_id: uuid.UUID, query: s.RoomKeyQuery) -> Page[s.KeyOut]:
    """The live keys of a room (INACTIVE or ACTIVE and within their window), of every stay,
    oldest first: what staff revoke after a lost card. Staff only (the route's guest class)."""
    with read_scope(ctx):
        load_property(property_id)
        page = paginate(DigitalKey.select().where(
            (DigitalKey.property == property_id) & (DigitalKey.room_number == query.room_number)
            & DigitalKey.status.in_(LIVE) & (DigitalKey.valid_until > ctx.now)), DigitalKey,
            limit=query.limit, cursor=query.cursor)
        return Page(items=[key_out(k, ctx.now) for k in page.items],
                    next_cursor=page.next_cursor)


def get_key(ctx: Ctx, property_id: uuid.UUID, key_id: uuid.UUID) -> DigitalKey:
    with read_scope(ctx):
        return _load_key(ctx, property_id, key_id)


def _load_key(ctx: Ctx, property_id: uuid.UUID, key_id: uuid.UUID, *,
              lock: bool = False) -> DigitalKey:
    query = DigitalKey.select().where((DigitalKey.id == key_id)
                                      & (DigitalKey.property == property_id))
    if ctx.holder_id is not None:  # a guest reaches the keys of its own stays and its own keys
        query = query.where((DigitalKey.holder_profile_id == ctx.holder_id)
                            | DigitalKey.reservation.in_(
            Reservation.select(Reservation.id).where(
                (Reservation.guest_profile == ctx.holder_id)
                & (Reservation.property == property_id))))
    row = (for_update(query) if lock else query).first()
    if row is None:
        raise NotFound("no such digital key")
    return row


def activate(ctx: Ctx, property_id: uuid.UUID, key_id: uuid.UUID) -> DigitalKey:
    """INACTIVE -> ACTIVE; an ACTIVE key is returned as it is (SPEC: not an error).

    Raises:
        NotFound. KeyNotActive (409): REVOKED or EXPIRED (also a live key past valid_until).
        KeyRequiresCheckedIn (409): the stay is no longer in house.
    """
    return _set_active(ctx, property_id, key_id, "activate")


def deactivate(ctx: Ctx, property_id: uuid.UUID, key_id: uuid.UUID) -> DigitalKey:
    """ACTIVE -> INACTIVE (a suspension, reversible by activate); an INACTIVE key is returned
    as it is. Raises NotFound, KeyNotActive (409)."""
    return _set_active(ctx, property_id, key_id, "deactivate")


def _set_active(ctx: Ctx, property_id: uuid.UUID, key_id: uuid.UUID, trigger: str) -> DigitalKey:
    with lock_errors(), unit_of_work(ctx) as uow:
        row = _load_key(ctx, property_id, key_id, lock=True)
        current = effective_status(row, ctx.now)
        new = DIGITAL_KEY_MACHINE.transition(current, trigger, error=KeyNotActive)
        if new.value != row.status:  # (a repeat writes nothing and answers the key as it is)
            _change_active(uow, row, new, trigger)
    return row


def _change_active(uow: UnitOfWork, row: DigitalKey, new: DigitalKeyStatus, trigger: str) -> None:
    if trigger == "activate":
        stay = Reservation.select(Reservation.status).where(
            Reservation.id == row.reservation_id).get()
        if stay.status != ReservationStatus.CHECKED_IN:
            raise KeyRequiresCheckedIn("keys are activated only while the stay is in house",
                                       status_now=stay.status)
    before = to_data(key_out(row, uow.ctx.now))
    row.status = new.value
    queue_lock_command(row)
    row.save()
    record_change(uow, row, "activated" if trigger == "activate" else "deactivated", before=before)


__all__ = ["activate", "deactivate", "get_key", "issue_key", "key_out", "list_keys",
           "list_room_keys", "live_key_count", "max_keys_per_stay", "new_key",
           "queue_lock_command", "record_change", "valid_until_for"]
