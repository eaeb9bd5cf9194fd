"""Kiosk reservation lookup (SPEC Limits 4): two identifiers, one answer for every miss,
a failure budget per terminal, and a session bound to the terminal and the reservation.

- Identifiers: the last name plus the confirmation number (today's arrivals and in-house stays),
  or plus the room number (in-house stays only). Names compare after case folding and removing
  accents and spaces (`fold_name`), in constant time.
- Every miss (no such number, another name, another property, a stay neither arriving today
  nor in house, ...) is the same 404 `reservation_not_found`; only after a two-identifier
  match does the kiosk learn why the guest cannot proceed (`reasons`).
- No timing oracle by construction: a miss runs the same statements as a hit. The terminal's
  row is locked and updated, ONE candidate query (the stay, its room, folio balance, key count
  and whether a ready room waits, all in the one SELECT) runs, then one session row is written
  (a miss writes one already ended, bound to no reservation, whose token is never shown) and
  one audit and one outbox row (`kiosk_terminal.lookup_matched` / `lookup_missed`). The 404 is
  raised after the commit, so the miss is counted.
- The failure budget (FAILURE_BUDGET misses per FAILURE_WINDOW) is a row per terminal in the
  database (several web hosts share it), read and written under its row lock, so concurrent
  misses of one terminal queue and never pass the budget; a terminal at the budget is refused
  with 429 `too_many_lookups` and Retry-After until LOCKOUT has passed. A second wall behind the
  gateway's rate limit (SPEC Limits 1).
"""

from __future__ import annotations

import hmac
import math
import secrets
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import msgspec
import peewee

from pms import wiring
from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.domain.business_date import business_date
from pms.domain.states import DIGITAL_KEY_LIVE, ReservationStatus
from pms.errors import Forbidden, NotFound, TooManyLookups, ValidationFailed
from pms.models import (
    DigitalKey,
    Folio,
    FolioCharge,
    FolioPayment,
    KioskSession,
    KioskTerminal,
    Reservation,
    Room,
    RoomType,
)
from pms.schemas import kiosk as s
from pms.services.catalog.catalog import load_property
from pms.services.frontdesk.checkin import READY_HK, room_ready
from pms.services.kiosk.kiosk_folio import kiosk_can_check_out, stay_owes
from pms.services.kiosk.kiosk_sessions import (
    CHECK_IN,
    CHECK_OUT,
    COLLECT_KEY,
    IDLE_TIMEOUT,
    LOOKUP_MODES,
    digest,
    require_modes,
)

FAILURE_BUDGET = 5
FAILURE_WINDOW = timedelta(minutes=15)
LOCKOUT = timedelta(minutes=15)
LIVE_KEYS = [st.value for st in DIGITAL_KEY_LIVE]
NO_IDENTIFIER = ""  # never a confirmation or room number: the unused identifier's value


def fold_name(text: str) -> str:
    """A last name as the lookup compares it: case folded, accents and spaces removed."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c) and not c.isspace())


@dataclass(frozen=True)
class Match:
    reservation: s.KioskReservationOut
    token: str
    expires_at: datetime


def lookup(ctx: Ctx, property_id: uuid.UUID, body: s.KioskLookupIn) -> Match:
    """Find the stay two identifiers name and open a kiosk session for it.

    Raises:
        ValidationFailed (422): not exactly one of confirmation_number and room_number.
        NotFound (404 reservation_not_found): every miss, whatever its cause (counted).
        TooManyLookups (429, retry_after): the terminal spent its failure budget.
        KioskLocked, KioskModeDisabled (409): lockdown; no lookup mode (CHECK_IN,
            COLLECT_KEY, CHECK_OUT) enabled.
    """
    if (body.confirmation_number is None) == (body.room_number is None):
        raise ValidationFailed(
            "give the last name and exactly one of confirmation_number and room_number",
            errors=[{"field": "confirmation_number",
                     "message": "exactly one of confirmation_number and room_number"}])
    with lock_errors(), unit_of_work(ctx) as uow:
        prop = load_property(property_id)
        enabled = require_modes(property_id, LOOKUP_MODES)
        terminal = _lock_terminal(ctx)
        bind_terminal(terminal, property_id)
        _spend_check(terminal, ctx.now)
        pause = wiring.current().pause_after_lookup_budget
        if pause is not None:  # TEST-ONLY: widen the window between the budget read and write
            pause()
        today = business_date(prop, ctx.now)
        rows = _candidates(property_id, today, ctx.now, body)
        wanted = fold_name(body.last_name)
        found: tuple[Any, ...] | None = None
        for row in rows:  # every candidate compared, in constant time
            if hmac.compare_digest(fold_name(row[8] or "").encode(), wanted.encode()) and wanted:
                found = row
        hit = found is not None
        terminal.failures += 0 if hit else 1
        terminal.lookups += 1
        if terminal.failures >= FAILURE_BUDGET:
            terminal.blocked_until = ctx.now + LOCKOUT
        terminal.save()
        token = secrets.token_urlsafe(32)
        session = KioskSession.create(
            terminal=ctx.sub, property=property_id,
            reservation_id=found[0] if found is not None else None,
            token_digest=digest(token), last_seen_at=ctx.now,
            ended_at=None if hit else ctx.now)
        data = {"terminal": terminal.terminal, "property_id": str(property_id),
                "session_id": str(session.id),
                "reservation_id": str(found[0]) if found is not None else None,
                "failures": terminal.failures, "failure_budget": FAILURE_BUDGET,
                "blocked_until": terminal.blocked_until.isoformat()
                if terminal.blocked_until else None}
        uow.record("kiosk_terminal", "lookup_matched" if hit else "lookup_missed", terminal, data,
                   property_id=property_id)
    if found is None:
        raise NotFound("no reservation matches these details; please see the front desk",
                       code="reservation_not_found")
    with read_scope(ctx):
        out = _out(property_id, found, today, enabled, ctx.now)
    if body.room_number is not None:  # a room number and a name: never the booking's number
        out = msgspec.structs.replace(out, confirmation_number=None)
    return Match(out, token, ctx.now + IDLE_TIMEOUT)


def _lock_terminal(ctx: Ctx) -> KioskTerminal:
    """The terminal's budget row, created on its first lookup, locked (FOR UPDATE)."""
    KioskTerminal.insert(terminal=ctx.sub, failures=0, lookups=0, version=0,
                         window_started_at=ctx.now).on_conflict_ignore().execute()
    return for_update(KioskTerminal.select().where(KioskTerminal.terminal == ctx.sub)).get()


def bind_terminal(terminal: KioskTerminal, property_id: uuid.UUID) -> None:
    """A terminal serves one property: bound at its first lookup (saved with the lookup's
    count), refused elsewhere (403 terminal_other_property, before its budget is touched)."""
    if terminal.property_id is None:
        terminal.property_id = property_id
    elif terminal.property_id != property_id:
        raise Forbidden("this kiosk terminal serves another property",
                        code="terminal_other_property")


def _spend_check(terminal: KioskTerminal, now: datetime) -> None:
    """Refuse a terminal at its budget (429); open a new window when the last one is over."""
    if terminal.blocked_until is not None and terminal.blocked_until > now:
        retry = math.ceil((terminal.blocked_until - now).total_seconds())
        raise TooManyLookups("this terminal made too many failed lookups; try again later or "
                             "see the front desk", retry_after=max(retry, 1))
    if (terminal.window_started_at is None or terminal.blocked_until is not None
            or now - terminal.window_started_at >= FAILURE_WINDOW):
        terminal.failures = 0
        terminal.window_started_at = now
        terminal.blocked_until = None


def _candidates(property_id: uuid.UUID, today: Any, now: datetime,
                body: s.KioskLookupIn) -> list[tuple[Any, ...]]:
    """The one SELECT of every lookup (hit or miss): the stays of the property that the
    identifier names and the kiosk may find (today's CONFIRMED arrivals and CHECKED_IN stays by
    confirmation number; CHECKED_IN stays by room number), with what the answer and its
    reasons need. The identifier not given is bound to "" (never a number), so the statement
    is the same for both kinds of lookup."""
    number = body.confirmation_number or NO_IDENTIFIER
    room_number = body.room_number or NO_IDENTIFIER
    R = Reservation
    assigned = Room.alias("assigned")
    spare = Room.alias("spare")
    charges = (FolioCharge.select(peewee.fn.COALESCE(peewee.fn.SUM(FolioCharge.amount), 0))
               .where(FolioCharge.reservation == R.id))
    paid = (FolioPayment.select(peewee.fn.COALESCE(peewee.fn.SUM(FolioPayment.amount), 0))
            .join(Folio, on=(FolioPayment.folio == Folio.id))
            .where((Folio.reservation == R.id) & (FolioPayment.status == "CAPTURED")))
    room_nights = (FolioCharge.select(peewee.fn.COUNT(FolioCharge.id))
                   .where((FolioCharge.reservation == R.id) & (FolioCharge.kind == "room")))
    keys = (DigitalKey.select(peewee.fn.COUNT(DigitalKey.id))
            .where((DigitalKey.reservation == R.id) & DigitalKey.status.in_(LIVE_KEYS)
                   & (DigitalKey.valid_until > now)))
    ready = (spare.select(peewee.fn.COUNT(spare.id))
             .where((spare.env_id == R.env_id) & (spare.property == R.property)
                    & (spare.room_type == R.room_type) & (spare.status == "VACANT")
                    & spare.hk_status.in_(READY_HK)))
    arriving = ((R.status == ReservationStatus.CONFIRMED.value) & (R.arrival_date == today))
    in_house = R.status == ReservationStatus.CHECKED_IN.value
    query = (R.select(R.id, R.confirmation_number, R.status, R.arrival_date, R.departure_date,
                      R.adults, R.children, R.guest_first_name, R.guest_last_name,
                      R.room_type, RoomType.name, R.room, assigned.room_number,
                      assigned.status, assigned.hk_status, R.currency,
                      charges.alias("charges"), paid.alias("paid"), keys.alias("keys"),
                      ready.alias("ready"), R.nightly_prices, room_nights.alias("room_nights"))
             .join(RoomType, on=(R.room_type == RoomType.id))
             .join(assigned, peewee.JOIN.LEFT_OUTER,
                   on=((assigned.id == R.room) & (assigned.env_id == R.env_id)), src=R)
             .where((R.property == property_id)
                    & (((R.confirmation_number == number) & (arriving | in_house))
                       | ((assigned.room_number == room_number) & in_house)))
             .tuples())
    return list(query)


def _out(property_id: uuid.UUID, row: tuple[Any, ...], today: Any,
         enabled: frozenset[str], now: datetime) -> s.KioskReservationOut:
    """The matched stay as the kiosk sees it (inside a scope): its balance is what it owes at
    a check-out now (`kiosk_folio.stay_owes`, the rule check-out shares)."""
    (rid, number, status, arrival, departure, adults, children, first, last, room_type_id,
     room_type_name, room_id, room_number, room_status, hk_status, currency, _charges, _paid,
     key_count, ready, _nightly_prices, _room_nights) = row
    owed = stay_owes(Reservation.get_by_id(rid), now=now)
    balance = owed.guest_owes
    reasons: list[str] = []
    actions: list[str] = []
    if status == ReservationStatus.CHECKED_IN.value:
        reasons.append("already_checked_in")
        if balance > 0 and owed.company_billed:
            reasons.append("company_billed")
        elif balance > 0 and not kiosk_can_check_out(owed):
            reasons.append("balance_due")
        actions.append(COLLECT_KEY)
        if kiosk_can_check_out(owed):
            actions.append(CHECK_OUT)
    else:
        ready_now = (room_ready(room_status, hk_status) if room_id is not None
                     else int(ready or 0) > 0)
        if not ready_now:
            reasons.append("room_not_ready")
        else:
            actions.append(CHECK_IN)
    return s.KioskReservationOut(
        id=_uuid(rid), property_id=property_id, confirmation_number=number, status=status,
        arrival_date=_date(arrival), departure_date=_date(departure), adults=adults,
        children=children, guest_first_name=first, guest_last_name=last,
        room_type_id=_uuid(room_type_id), room_type_name=room_type_name,
        room_number=room_number, balance=balance, currency=currency,
        key_count=int(key_count or 0), reasons=reasons,
        actions=[a for a in actions if a in enabled])


def _uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def _date(value: Any) -> Any:
    return value if isinstance(value, date) else date.fromisoformat(str(value)[:10])
