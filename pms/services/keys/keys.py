"""Digital room keys: issue, list, activate, deactivate; the stay's hooks (check-out
and revert of a check-in revoke, a room move re-keys as a tracked pair, a departure edit moves
valid_until); the sweeper (EXPIRED, with an event) and the lock sync driven from the outbox.

Rules (SPEC "Digital key", CONTRACT §2, research next-capabilities §1 and beyond §1):
- A key is issued INACTIVE only for a CHECKED_IN stay with a room (409 key_requires_checked_in).
- valid_from is the issue time; valid_until the departure date at the property's
  check_out_time, in its time zone, stored UTC. A departure edit of the in-house stay moves it.
- A key past valid_until reads EXPIRED at once (`effective_status`, no write: reads stay
  read-only); the sweeper (`expire_keys`) writes EXPIRED with a `digital_key:expired` event.
- A stay holds at most `max_keys_per_stay` live keys (INACTIVE or ACTIVE and not past
  valid_until), from the property's kiosk config, default 2, for every caller: 409
  key_limit_reached with `limit` and `count`. Staff (no holder, not a kiosk) may exceed it by
  giving `override_reason`, kept on the key and its audit row. The stay's reservation row is
  locked (FOR UPDATE) before counting, so concurrent issues for one stay queue and never exceed
  the limit (tests/concurrency/test_key_limit_race.py, with the control without the lock).
- Every change of intent records a lock command (`lock_state` pending) and an event; the relay's
  subscriber sends `sync_digital_key`, which calls the lock service outside any transaction
  (`sync_lock`): its acknowledgement is `sent`, the lock's own read-back `confirmed`, and after
  MAX_LOCK_ATTEMPTS failures `failed` (event `digital_key:lock_failed`; the sweeper keeps
  retrying pending and failed rows).
- `revocation` says how the door learns of a revocation (the lock's `revocation_path`) and by
  when it takes effect at the latest: the key's own valid_until until the lock confirms it, then
  the confirmation time.
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from pms import wiring
from pms.context import Ctx
from pms.db.locking import for_update, lock_errors, locking_enabled
from pms.db.pagination import Page, paginate
from pms.db.statements import Statement
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.states import (
    DIGITAL_KEY_INITIAL,
    DIGITAL_KEY_LIVE,
    DIGITAL_KEY_MACHINE,
    LOCK_STATE_INITIAL,
    LOCK_STATE_MACHINE,
    DigitalKeyStatus,
    LockState,
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
from pms.schemas import keys as s
from pms.schemas.common import to_data
from pms.services.catalog.catalog import load_property
from pms.services.kiosk import kiosk_sessions
from pms.services.references import body_reference
from pms.services.reservations.reservation_lookup import load_reservation

MAX_LOCK_ATTEMPTS = 5
LIVE = [st.value for st in DIGITAL_KEY_LIVE]
# a lock command still unacknowledged after this long is sent again by the sweeper
RETRY_AFTER = timedelta(minutes=1)


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


def _record(uow: UnitOfWork, row: DigitalKey, action: str, *, before: dict[str, Any] | None,
            reason: str | None = None) -> None:
    uow.record("digital_key", action, row, to_data(key_out(row, uow.ctx.now)), before=before,
               reason=reason, property_id=row.property_id)


def _live_query(reservation_id: uuid.UUID, now: datetime) -> Any:
    return DigitalKey.select().where((DigitalKey.reservation == reservation_id)
                                     & DigitalKey.status.in_(LIVE)
                                     & (DigitalKey.valid_until > now))


def live_key_count(reservation_id: uuid.UUID, now: datetime) -> int:
    """Live keys of a stay (INACTIVE or ACTIVE, not past valid_until): the boarding pass's key
    count and what max_keys_per_stay bounds. Call inside a scope."""
    return _live_query(reservation_id, now).count()


def max_keys_per_stay(property_id: uuid.UUID) -> int:
    config = (KioskConfig.select(KioskConfig.max_keys_per_stay)
              .where(KioskConfig.property == property_id).first())
    return config.max_keys_per_stay if config is not None else DEFAULT_MAX_KEYS_PER_STAY


def _command(row: DigitalKey) -> None:
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
        key = _new_key(ctx, row, room.id, room.room_number, body.key_type, until,
                       override_reason=override, holder=holder)
        _record(uow, key, "issued", before=None, reason=override)
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


def _new_key(ctx: Ctx, reservation: Reservation, room_id: uuid.UUID, room_number: str,
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
    _command(row)
    row.save()
    _record(uow, row, "activated" if trigger == "activate" else "deactivated", before=before)


# -- the stay's hooks (inside the caller's unit of work; the reservation row is locked) ------

_LIVE_IDS = ("SELECT id FROM digital_key WHERE env_id = %(env)s AND reservation_id = "
             "%(reservation)s AND status IN ('INACTIVE', 'ACTIVE') ORDER BY created_at, id")
# PERF (check-out is a hot route): the stay's live keys, locked, by one precompiled statement;
# the models are built only when there are some (most stays have none)
LOCK_LIVE_IDS = Statement.text("keys.lock_live_ids", postgres=_LIVE_IDS + " FOR UPDATE",
                               sqlite=_LIVE_IDS)
READ_LIVE_IDS = Statement.text("keys.read_live_ids", both=_LIVE_IDS)  # TEST-ONLY control runs


def _locked_live(reservation_id: uuid.UUID, room_id: uuid.UUID | None = None) -> list[DigitalKey]:
    statement = LOCK_LIVE_IDS if locking_enabled() else READ_LIVE_IDS
    if not statement.rows(reservation=reservation_id):
        return []
    query = DigitalKey.select().where((DigitalKey.reservation == reservation_id)
                                      & DigitalKey.status.in_(LIVE))
    if room_id is not None:
        query = query.where(DigitalKey.room_id == room_id)
    return list(for_update(query.order_by(DigitalKey.created_at, DigitalKey.id)))


def _revoke(uow: UnitOfWork, row: DigitalKey, reason: str) -> None:
    now = uow.ctx.now
    before = to_data(key_out(row, now))
    row.status = DIGITAL_KEY_MACHINE.transition(row.status, "revoke").value
    row.revoked_at = now
    row.revoke_reason = reason
    # until the lock itself confirms, the old key may open the door up to its own end
    row.revocation_effective_by = max(now, row.valid_until)
    _command(row)
    row.save()
    _record(uow, row, "revoked", before=before, reason=reason)


def revoke_stay_keys(uow: UnitOfWork, reservation: Reservation, reason: str = "check_out"
                     ) -> list[DigitalKey]:
    """Revoke every live key of the stay (ACTIVE and INACTIVE: none can be re-activated), in
    the caller's transaction. The check-out hook (pms.services.frontdesk.checkout.CHECK_OUT_HOOKS)."""
    keys = _locked_live(reservation.id)
    for row in keys:
        _revoke(uow, row, reason)
    return keys


def check_out_hook(uow: UnitOfWork, reservation: Reservation) -> None:
    revoke_stay_keys(uow, reservation, "check_out")


def move_keys(uow: UnitOfWork, reservation: Reservation, old_room_id: uuid.UUID | None,
              new_room: Any) -> list[tuple[DigitalKey, DigitalKey]]:
    """A room move: each live key of the old room is revoked and a key of the same type is
    issued (INACTIVE) for the new room, the two sharing a `pair_id` (the new one names the key
    it replaces). Returns the (old, new) pairs."""
    if old_room_id is None:
        return []
    pairs = []
    for old in _locked_live(reservation.id, old_room_id):
        _revoke(uow, old, "room_move")
        pair_id = old.pair_id or uuid.uuid4()
        old.pair_id = pair_id
        old.save()
        new = _new_key(uow.ctx, reservation, new_room.id, new_room.room_number, old.key_type,
                       old.valid_until, pair_id=pair_id, replaces=old.id,
                       holder=old.holder_profile_id)
        _record(uow, new, "issued", before=None, reason="room_move")
        pairs.append((old, new))
    return pairs


def move_validity(uow: UnitOfWork, reservation: Reservation) -> list[DigitalKey]:
    """A departure edit of an in-house stay: its live keys end at the new departure's
    check-out time (a lock command each). A key already past its valid_until is EXPIRED
    whether or not the sweeper has written it, and stays so: an extension never revives it
    (the stay gets a new key instead)."""
    moved: list[DigitalKey] = []
    now = uow.ctx.now
    live = [k for k in _locked_live(reservation.id) if k.valid_until > now]
    if not live:
        return moved
    until = valid_until_for(load_property(reservation.property_id), reservation.departure_date,
                            reservation.departure_time)
    for row in live:
        if row.valid_until == until:
            continue
        before = to_data(key_out(row, uow.ctx.now))
        row.status = DIGITAL_KEY_MACHINE.transition(row.status, "extend").value
        row.valid_until = until
        _command(row)
        row.save()
        _record(uow, row, "validity_changed", before=before)
        moved.append(row)
    return moved


# -- the sweeper ---------------------------------------------------------------------------------

def expire_keys(ctx: Ctx, *, limit: int = 500) -> int:
    """Write EXPIRED (with a `digital_key:expired` event each) for the env's live keys past
    valid_until; the lock enforces the end itself, so no lock command. Safe to run on several
    hosts at once (SKIP LOCKED on PostgreSQL). Returns how many it expired."""
    with lock_errors(), unit_of_work(ctx) as uow:
        query = (DigitalKey.select().where(DigitalKey.status.in_(LIVE)
                                           & (DigitalKey.valid_until <= ctx.now))
                 .order_by(DigitalKey.valid_until).limit(limit))
        rows = list(for_update(query, skip_locked=True))
        for row in rows:
            before = to_data(key_out(row, ctx.now))
            before["status"] = row.status
            row.status = DIGITAL_KEY_MACHINE.transition(row.status, "expire").value
            row.expired_at = ctx.now
            row.save()
            _record(uow, row, "expired", before=before)
    return len(rows)


def keys_to_sync(ctx: Ctx, *, limit: int = 200) -> list[uuid.UUID]:
    """Keys whose lock command is due again: pending or failed for longer than RETRY_AFTER, or
    sent to an online lock and never confirmed (the sweeper re-drives them)."""
    due = ctx.now - RETRY_AFTER
    with read_scope(ctx):
        query = DigitalKey.select(DigitalKey.id).where(
            (DigitalKey.updated_at <= due)
            & (DigitalKey.lock_state.in_([LockState.PENDING.value, LockState.FAILED.value])
               | ((DigitalKey.lock_state == LockState.SENT.value)
                  & (DigitalKey.revocation_path == "online"))))
        return [r.id for r in query.order_by(DigitalKey.updated_at).limit(limit)]


def sweep(ctx: Ctx, locks: Any) -> dict[str, int]:
    """The sweeper's pass over one env: expire, then re-drive due lock commands."""
    expired = expire_keys(ctx)
    synced = 0
    for key_id in keys_to_sync(ctx):
        try:
            sync_lock(ctx, key_id, locks)
            synced += 1
        except Exception:  # noqa: BLE001 - recorded on the key; the next sweep retries
            continue
    return {"expired": expired, "synced": synced}


# -- the lock sync (outside any transaction: the lock call; then one unit of work) -------------

def _commands(row: DigitalKey) -> list[str]:
    """The lock commands that bring the lock to the key's intent."""
    if row.status == DigitalKeyStatus.REVOKED:
        return ["revoke"]
    if row.status == DigitalKeyStatus.EXPIRED:
        return []  # the lock ends the key at valid_until itself
    active = row.status == DigitalKeyStatus.ACTIVE
    if row.credential_ref is None:
        return ["issue", "activate"] if active else ["issue"]
    return ["activate" if active else "deactivate"]


def sync_lock(ctx: Ctx, key_id: uuid.UUID, locks: Any) -> DigitalKey | None:
    """Send the key's intent to the lock service and record what it answered: `sent` on its
    acknowledgement, `confirmed` when the lock's own read-back shows the intended state. Run by
    the `sync_digital_key` actor (the relay's reaction to the key's events) and the sweeper;
    safe to run twice. A lock-service failure counts an attempt (at MAX_LOCK_ATTEMPTS the state
    is `failed`, event `digital_key:lock_failed`) and is raised again for the actor's retry."""
    from pms.platform.locks import EXPECTED, LocksUnavailable

    with read_scope(ctx):
        row = DigitalKey.get_or_none(DigitalKey.id == key_id)
    if row is None:
        return None
    read_version = row.version
    if row.lock_state in (LockState.PENDING, LockState.FAILED):
        commands = _commands(row)
        if not commands:
            return row
        ref = row.credential_ref
        try:
            ack = None
            for command in commands:
                ack = locks.command(command, key_id=str(row.id), credential_ref=ref,
                                    room_number=row.room_number, key_type=row.key_type,
                                    valid_from=row.valid_from, valid_until=row.valid_until,
                                    idempotency_key=f"{row.id}:{command}:{read_version}")
                ref = ack.credential_ref
        except LocksUnavailable as exc:
            _failed_attempt(ctx, key_id, read_version, str(exc.detail))
            raise
        row = _acknowledged(ctx, key_id, read_version, commands[-1], ack)
        if row is None:
            return None  # a newer intent was recorded meanwhile: its own sync follows
        read_version = row.version
    if row.lock_state == LockState.SENT and row.credential_ref:
        report = locks.read_back(row.credential_ref)
        expected = EXPECTED.get(row.lock_command)
        if report.state is not None and report.state == expected and (
                row.lock_command == "revoke" or report.valid_until == row.valid_until):
            row = _confirmed(ctx, key_id, read_version) or row
    return row


def record_lock_report(ctx: Ctx, credential_ref: str, state: str,
                       valid_until: datetime | None = None) -> DigitalKey | None:
    """A lock's own report of a credential (an event of the lock service): confirms the key's
    last command when the lock holds what it asked for (its `sent` state only: a report of an
    older state confirms nothing). Returns the key, or None for an unknown credential."""
    from pms.platform.locks import EXPECTED

    with read_scope(ctx):
        row = DigitalKey.get_or_none(DigitalKey.credential_ref == credential_ref)
    if row is None or row.lock_state != LockState.SENT:
        return row
    if state != EXPECTED.get(row.lock_command) or (
            row.lock_command != "revoke" and valid_until != row.valid_until):
        return row
    return _confirmed(ctx, row.id, row.version) or row


def _locked_if_unchanged(ctx: Ctx, key_id: uuid.UUID, version: int) -> DigitalKey | None:
    row = for_update(DigitalKey.select().where(DigitalKey.id == key_id)).first()
    return row if row is not None and row.version == version else None


def _acknowledged(ctx: Ctx, key_id: uuid.UUID, version: int, command: str, ack: Any
                  ) -> DigitalKey | None:
    with lock_errors(), unit_of_work(ctx) as uow:
        row = _locked_if_unchanged(ctx, key_id, version)
        if row is not None:
            before = to_data(key_out(row, ctx.now))
            row.lock_state = LOCK_STATE_MACHINE.transition(row.lock_state, "ack").value
            row.lock_command = command
            row.lock_sent_at = ctx.now
            row.lock_last_error = None
            row.credential_ref = ack.credential_ref
            row.revocation_path = ack.revocation_path
            row.save()
            _record(uow, row, "lock_sent", before=before)
    return row


def _confirmed(ctx: Ctx, key_id: uuid.UUID, version: int) -> DigitalKey | None:
    with lock_errors(), unit_of_work(ctx) as uow:
        row = _locked_if_unchanged(ctx, key_id, version)
        if row is not None:
            before = to_data(key_out(row, ctx.now))
            row.lock_state = LOCK_STATE_MACHINE.transition(row.lock_state, "confirm").value
            row.lock_confirmed_at = ctx.now
            revoked = row.lock_command == "revoke"
            if revoked:
                row.revocation_confirmed_at = ctx.now
            row.save()
            _record(uow, row, "revocation_confirmed" if revoked else "lock_confirmed",
                    before=before)
    return row


def _failed_attempt(ctx: Ctx, key_id: uuid.UUID, version: int, error: str) -> None:
    with lock_errors(), unit_of_work(ctx) as uow:
        row = _locked_if_unchanged(ctx, key_id, version)
        if row is not None:
            before = to_data(key_out(row, ctx.now))
            row.lock_attempts += 1
            row.lock_last_error = error[:500]
            gave_up = row.lock_attempts == MAX_LOCK_ATTEMPTS  # (lock_failed once, when it fails)
            if row.lock_attempts >= MAX_LOCK_ATTEMPTS:
                row.lock_state = LOCK_STATE_MACHINE.transition(row.lock_state, "fail").value
            row.save()
            _record(uow, row, "lock_failed" if gave_up else "lock_attempt_failed",
                    before=before)


__all__ = ["activate", "check_out_hook", "deactivate", "expire_keys", "issue_key", "key_out",
           "list_keys", "live_key_count", "move_keys", "move_validity", "revoke_stay_keys",
           "record_lock_report", "sweep", "sync_lock", "valid_until_for"]
