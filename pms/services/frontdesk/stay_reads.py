"""The front desk's locked reads: what check-in and check-out lock and read before they write,
in the order check-in, check-out and revert take the locks (the reservation, the room, then
the folios), each in ONE statement on PostgreSQL.

- `check_out_read`: the stay with the property's business date, its room, and its guest
  folio's state with the stay's other OPEN folios (PERF: three round trips before, `lock_stay`,
  `lock_room` and `read_guest_state(lock=True)`), then the stay's live keys locked and
  counted (`pms_lock_live_keys`, in the select list, so after the folios' locks), and the
  departure rule's settings: both read ahead for the check-out hooks (`UnitOfWork.read_ahead`:
  a stay without keys reads none, the rule reads nothing; one round trip each before).
- `check_in_read`: the stay with the business date and, for a stay with no room given or
  assigned that may check in today, the room picked and locked by `pms_pick_room` (PERF: two
  round trips before, `lock_stay` and `pick_room`).

How: the stay is locked by its own subquery (FOR UPDATE OF r) before the laterals that
depend on it run (a lateral runs after what it refers to): check-out's room (FOR UPDATE), then
the folios, locked and read by `pms_lock_guest_folios` and `pms_folio_state`
(`folios.guest_state_select`), whose argument names the room's lateral so that it runs after
the room's lock; check-out's `pms_lock_live_keys` in the select list, which is computed on
the joined row, after every lateral; check-in's `pms_pick_room` call is given the stay's room type only when the
stay passes its own checks (its status, dates and room), so a stay that will be refused
locks no room. The functions are
VOLATILE: their statements read on snapshots taken after the locks. The reservation (and
check-out's guest folio) is declared locked to the unit of work: its event takes version + 1
with no statement of its own. Elsewhere, and in the TEST-ONLY unlocked control runs, the reads
as before, one after another.
"""

from __future__ import annotations

import functools
import uuid
from datetime import date
from types import SimpleNamespace
from typing import Any

from pms import wiring
from pms.context import Ctx
from pms.db.dialect import dialect_variant, fast_path
from pms.db.locking import locking_enabled
from pms.db.statements import Statement
from pms.db.uow import UnitOfWork
from pms.domain.business_date import business_date
from pms.errors import NotFound
from pms.models import Folio, Reservation, Room
from pms.services.cashiering import departure_documents
from pms.services.cashiering.folio_state import read_guest_state
from pms.services.cashiering.folios import guest_state_of, guest_state_select
from pms.services.keys import key_store
from pms.services.reservations.room_holds import OUT_OF_ORDER_MARKS, lock_room
from pms.services.reservations.stays import lock_stay


def _column(name: str) -> str:
    """The stay subquery's column of the reservation's field `name`."""
    return f"st.r{[f.name for f in Reservation._meta.sorted_fields].index(name)}"


def _stay_subquery() -> str:
    """The stay locked, with the property's timezone and business date, and its business date
    as the check-in's pick reads it (`today`: the date `business_date` gives for `now`)."""
    columns = ", ".join(f"r.{f.column_name} AS r{i}"
                        for i, f in enumerate(Reservation._meta.sorted_fields))
    return f"""(
  SELECT {columns}, p.timezone, p.business_date,
         COALESCE(p.business_date, (%(now)s::timestamptz AT TIME ZONE p.timezone)::date) AS today
    FROM reservation r JOIN property p ON p.env_id = %(env)s AND p.id = r.property_id
   WHERE r.env_id = %(env)s AND r.id = %(id)s AND r.property_id = %(prop)s
     AND (%(holder)s::uuid IS NULL OR r.guest_profile_id = %(holder)s::uuid)
     FOR UPDATE OF r) st"""


def _room_columns(alias: str) -> str:
    return ", ".join(f"{alias}.{f.column_name} AS m{i}"
                     for i, f in enumerate(Room._meta.sorted_fields))


def _stay_of(found: tuple[Any, ...], now: Any) -> tuple[Reservation, date, int]:
    """The reservation of the stay subquery's columns, its business date and where the
    columns after the stay's begin."""
    at = Reservation.column_count()
    row = Reservation.from_columns(found[:at])
    timezone, day = found[at:at + 2]
    return row, business_date(SimpleNamespace(business_date=day, timezone=timezone), now), at + 3


def _room_at(found: tuple[Any, ...], at: int) -> tuple[Room | None, int]:
    width = len(Room._meta.sorted_fields)
    values = found[at:at + width]
    return (Room.from_columns(values) if values[0] is not None else None), at + width


# -- check-out ----------------------------------------------------------------------------------

@functools.cache
def _check_out_statement() -> Statement:
    room_id = f"rm.m{[f.name for f in Room._meta.sorted_fields].index('id')}"
    text = f"""
SELECT st.*, rm.*, ({_invoicing_modules()}) AS invoicing,
       {key_store.live_keys_locked(_column("id"))} AS live_keys, gs.* FROM {_stay_subquery()}
LEFT JOIN LATERAL (
  SELECT {_room_columns("m")} FROM room m
   WHERE m.env_id = %(env)s AND m.id = {_column("room")} FOR UPDATE OF m) rm ON true
LEFT JOIN LATERAL ({guest_state_select(f"COALESCE({_column('id')}, {room_id})")}) gs ON true"""
    folio_at = len(Reservation._meta.sorted_fields) + 3 + len(Room._meta.sorted_fields) + 2
    return Statement.text("stay_reads.check_out", postgres=text,
                          locks=lambda: [(Reservation, 0), (Folio, folio_at)])


def _invoicing_modules() -> str:
    """The env's and the property's `invoicing` modules by scope key (jsonb, NULL: neither
    document), for the departure rule (pms.services.cashiering.departure_documents)."""
    from pms.models.settings import ENV_SCOPE
    from pms.services.catalog.settings import MODULES

    return ("SELECT jsonb_object_agg(d.scope_key, d.document -> 'invoicing')"
            " FROM settings_document d WHERE d.env_id = %(env)s"
            f" AND d.kind = '{MODULES}' AND d.scope_key IN ('{ENV_SCOPE}', %(scope)s)")


def _check_out_read_pg(uow: UnitOfWork, ctx: Ctx, property_id: uuid.UUID,
                       reservation_id: uuid.UUID) -> tuple[Reservation, date, Room | None, Any]:
    """`check_out_read` in one statement (PostgreSQL), the departure rule's settings read
    ahead into `uow` with it."""
    if not locking_enabled():  # the TEST-ONLY unlocked control: the unlocked reads
        return check_out_read.reference(uow, ctx, property_id, reservation_id)  # type: ignore[attr-defined]
    found = _check_out_statement().one(id=reservation_id, prop=property_id,
                                       holder=ctx.holder_id, now=ctx.now,
                                       scope=uuid.UUID(str(property_id)).hex)
    if found is None:
        raise NotFound("no such reservation")
    row, today, at = _stay_of(found, ctx.now)
    room, at = _room_at(found, at)
    uow.read_ahead[departure_documents.read_ahead_key(property_id)] = found[at] or {}
    uow.read_ahead[key_store.read_ahead_key(row.id)] = found[at + 1]
    return row, today, room, guest_state_of(found[at + 2:])


@fast_path(_check_out_read_pg)
def check_out_read(uow: UnitOfWork, ctx: Ctx, property_id: uuid.UUID,
                   reservation_id: uuid.UUID) -> tuple[Reservation, date, Room | None, Any]:
    """The stay locked with the business date, its room locked (None: the stay has none) and
    its guest folio's state, the folios locked (None: no guest folio), inside the unit of
    work `uow`. On PostgreSQL the same statement reads the departure rule's settings ahead
    (`departure_documents.read_ahead_key`) and locks and counts the stay's live keys
    (`key_store.read_ahead_key`); here each hook reads for itself when it runs.

    Raises:
        NotFound: no such reservation of the property (a guest session: of its own).
    """
    row, today = lock_stay(ctx, property_id, reservation_id)
    room = lock_room(row.room_id) if row.room_id is not None else None
    return row, today, room, read_guest_state(row, lock=True)


# -- check-in -----------------------------------------------------------------------------------

@functools.cache
def _check_in_statement() -> Statement:
    # the pick only for a stay that can check in today into a room of the rule's choice: no
    # room assigned, CONFIRMED, arrived and not departed; a stay that fails it asks the pick for
    # no room type (no room matches, none is locked: a filter of the lateral alone would not
    # keep the function from running and locking its pick)
    gate = (f"{_column('room')} IS NULL AND {_column('status')} = 'CONFIRMED'"
            f" AND {_column('arrival_date')} <= st.today"
            f" AND {_column('departure_date')} > st.today")
    columns = ", ".join(f.column_name for f in Room._meta.sorted_fields)
    text = f"""
SELECT st.*, pk.*, ({gate}) AS tried FROM {_stay_subquery()}
LEFT JOIN LATERAL (
  SELECT {", ".join(f"c.{c} AS m{i}" for i, c in enumerate(columns.split(", ")))}
    FROM pms_pick_room(%(env)s, {_column("property")},
                       CASE WHEN {gate} THEN {_column("room_type")} END, {_column("id")},
                       st.today, {_column("departure_date")}, %(out_of_order)s, true) c
   WHERE {gate}) pk ON true"""
    return Statement.text("stay_reads.check_in", postgres=text, locks=Reservation)


def _check_in_read_pg(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID
                      ) -> tuple[Reservation, date, Room | None, bool]:
    """`check_in_read` in one statement (PostgreSQL)."""
    if not locking_enabled():  # the TEST-ONLY unlocked control: the unlocked reads
        return check_in_read.reference(ctx, property_id, reservation_id)  # type: ignore[attr-defined]
    found = _check_in_statement().one(id=reservation_id, prop=property_id,
                                      holder=ctx.holder_id, now=ctx.now,
                                      out_of_order=sorted(OUT_OF_ORDER_MARKS))
    if found is None:
        raise NotFound("no such reservation")
    row, today, at = _stay_of(found, ctx.now)
    room, at = _room_at(found, at)
    tried = bool(found[at])
    if room is not None:
        pause = wiring.current().pause_after_pick
        if pause is not None:  # TEST-ONLY: hold the pick open
            pause()
    return row, today, room, tried


@dialect_variant(_check_in_read_pg)
def check_in_read(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID
                  ) -> tuple[Reservation, date, Room | None, bool]:
    """The stay locked with the business date and, where the rule picks its room, the
    room picked and locked: (stay, business date, room or None, whether the pick was tried).
    Not tried (False): the caller picks, if it must, itself (`desk_writes.assign_room`). Tried
    with no room: none of the booked type is free (the caller's 409). The pick is tried on
    PostgreSQL only, for a stay with no room assigned, CONFIRMED, arrived and not departed;
    a check-in that names its room reads with `lock_stay`.

    Raises:
        NotFound: no such reservation of the property (a guest session: of its own).
    """
    row, today = lock_stay(ctx, property_id, reservation_id)
    return row, today, None, False
