"""A block's rooming list, as a job: each row a pick-up (or its cancel, in all-or-nothing mode
a whole list checked first and applied or refused as one), each row its own short transaction,
with progress checkpoints; a list sent again folds the rows it already made.
"""


from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from pms.context import Ctx
from pms.db.uow import read_scope, unit_of_work
from pms.domain.states import BLOCK_MACHINE
from pms.domain.stay import stay_nights
from pms.errors import Conflict, NotFound, ValidationFailed
from pms.models.room_blocks import RoomBlock, RoomBlockNight
from pms.schemas import room_blocks as s
from pms.schemas.common import to_data
from pms.schemas.date_bounds import check_dates
from pms.services.groups.pickups import pick_up
from pms.services.groups.room_block_inventory import (
    _nights_of,
    load_block,
)
from pms.services.job_records import ROOMING_LIST, record_queued, requested_by

# -- the rooming list (a job) ----------------------------------------------------------------------

ROOMING_BATCH = 50  # rows per progress checkpoint; each row is its own short transaction


def _row_problem(index: int, exc: Exception) -> s.RoomingRowOut:
    code = getattr(exc, "code", "validation_failed")
    extra = getattr(exc, "extra", {}) or {}
    return s.RoomingRowOut(index=index, outcome="refused", code=code,
                           detail=getattr(exc, "detail", str(exc)), nights=extra.get("nights"))


def _row_number(job_id: uuid.UUID, index: int, raw: Any) -> str:
    """The confirmation number a rooming list's row books under: its own when it names one,
    else one derived from the job and the row (the same on every delivery of the job), so a
    row's reservation is created once (the number is unique per env: a second try finds it)."""
    return _own_number(raw) or f"RL-{job_id.hex}-{index}"


def _done_rows(property_id: uuid.UUID, numbers: list[str]) -> dict[str, Any]:
    """The reservations already booked under the rows' numbers (an earlier delivery of the
    job), by number (call inside a scope)."""
    from pms.models.reservations import Reservation

    found = Reservation.select().where((Reservation.property == property_id)
                                       & Reservation.confirmation_number.in_(numbers))
    return {r.confirmation_number: r for r in found.order_by(Reservation.id)}


def _own_number(raw: Any) -> str | None:
    own = raw.get("confirmation_number") if isinstance(raw, dict) else None
    return own if isinstance(own, str) and own else None


def _prior_out(index: int, block: RoomBlock, row: Any, *, ours: bool = True
               ) -> s.RoomingRowOut:
    """A row whose number is booked already: refused outside this block; this job's own row
    (an earlier delivery) echoed as created (or rolled back); a row naming a number booked in
    this block by someone else (an earlier list, a pick-up by hand) echoed `existing`, left
    alone (never counted as this job's, never rolled back by it)."""
    if row.block_id != block.id:
        return s.RoomingRowOut(index=index, outcome="refused", code="confirmation_number_taken",
                               detail="a reservation outside this block has this "
                                      "confirmation_number")
    if not ours:
        return s.RoomingRowOut(index=index, outcome="existing", reservation_id=row.id,
                               confirmation_number=row.confirmation_number)
    outcome = "rolled_back" if row.status == "CANCELLED" else "created"
    return s.RoomingRowOut(index=index, outcome=outcome, reservation_id=row.id,
                           confirmation_number=row.confirmation_number)


def _precheck(block: RoomBlock, nights: list[RoomBlockNight], rows: list[dict[str, Any]],
              done: dict[int, Any] | None = None, ours: frozenset[int] = frozenset()
              ) -> tuple[list[s.RoomingRowOut], list[s.PickupIn | None]]:
    """Every row checked against the block (call inside a scope): a confirmation_number no
    earlier row of the list names (refused duplicate_confirmation_number), its shape, its dates
    inside the block's, the rate plan, and the allocation left, counted cumulatively over the
    rows before it (409 block_allocation_exhausted naming the nights short). A row in `done`
    (its number booked already) is echoed as it is (`_prior_out`; `ours`: the rows an earlier
    delivery of this job booked), not again."""
    import msgspec

    left = {(n.room_type_id, n.date): n.allotted - n.picked for n in nights}
    types = {n.room_type_id for n in nights}
    outs: list[s.RoomingRowOut] = []
    bodies: list[s.PickupIn | None] = []
    can_pick = BLOCK_MACHINE.can(block.status, "pick")
    first_with: dict[str, int] = {}
    for i, raw in enumerate(rows):
        own = _own_number(raw)
        if own is not None and own in first_with:
            outs.append(s.RoomingRowOut(index=i, outcome="refused",
                                        code="duplicate_confirmation_number",
                                        detail=f"row {first_with[own]} has this "
                                               "confirmation_number",
                                        confirmation_number=own))
            bodies.append(None)
            continue
        if own is not None:
            first_with[own] = i
        if done and i in done:
            outs.append(_prior_out(i, block, done[i], ours=i in ours))
            bodies.append(None)
            continue
        try:
            body = msgspec.convert(raw, s.PickupIn)
            check_dates(body)
        except msgspec.ValidationError as exc:
            outs.append(s.RoomingRowOut(index=i, outcome="refused", code="validation_failed",
                                        detail=str(exc)))
            bodies.append(None)
            continue
        except ValidationFailed as exc:  # a date past the one bound (date_out_of_range)
            outs.append(_row_problem(i, exc))
            bodies.append(None)
            continue
        problem = None
        if not can_pick:
            problem = ("invalid_transition", f"a {block.status} block takes no pick-up", None)
        elif body.rate_plan_id is not None and body.rate_plan_id != block.rate_plan_id:
            problem = ("validation_failed", "rate_plan_id: not the block's rate plan", None)
        elif body.room_type_id not in types:
            problem = ("unknown_reference", "room_type_id: not a room type of the block's "
                       "allocation", None)
        elif (body.departure_date <= body.arrival_date
              or body.arrival_date < block.arrival_date
              or body.departure_date > block.departure_date):
            problem = ("validation_failed", f"the dates must lie inside the block's "
                       f"({block.arrival_date} to {block.departure_date})", None)
        else:
            stay = stay_nights(body.arrival_date, body.departure_date)
            short = [d for d in stay if left.get((body.room_type_id, d), 0) < 1]
            if short:
                problem = ("block_allocation_exhausted", "the block's allocation is exhausted",
                           [d.isoformat() for d in short])
            else:
                for d in stay:
                    left[(body.room_type_id, d)] -= 1
        if problem is None:
            outs.append(s.RoomingRowOut(index=i, outcome="valid"))
            bodies.append(body)
        else:
            outs.append(s.RoomingRowOut(index=i, outcome="refused", code=problem[0],
                                        detail=problem[1], nights=problem[2]))
            bodies.append(None)
    return outs, bodies


def rooming_list(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID, body: s.RoomingListIn
                 ) -> tuple[Any, s.RoomingListOut | None]:
    """A dry run answers every row's outcome at once: (None, answer). Otherwise the list is
    queued as a job (`rooming_list`) with its own event and audit row: (job, None)."""
    with read_scope(ctx):
        block = load_block(property_id, block_id)
        if body.dry_run:
            owns = [_own_number(raw) for raw in body.rows]
            prior = _done_rows(property_id, [n for n in owns if n is not None])
            done = {i: prior[n] for i, n in enumerate(owns) if n is not None and n in prior}
            outs, _ = _precheck(block, _nights_of(block), body.rows, done)
            refused = sum(1 for o in outs if o.outcome == "refused")
            return None, s.RoomingListOut(block_id=block.id, mode=body.mode, dry_run=True,
                                          applied=False, created=0, refused=refused, rows=outs)
    return queue_block_job(ctx, ROOMING_LIST, property_id,
                           {"block_id": str(block_id), "mode": body.mode, "rows": body.rows},
                           len(body.rows)), None


def queue_block_job(ctx: Ctx, kind: str, property_id: uuid.UUID, data_in: dict[str, Any],
                    total: int) -> Any:
    """A block's job (a rooming list, a bulk cancel or date change), QUEUED with its progress
    at 0 of `total`, its audit row and its queued event, in one unit of work; the job runs as
    the caller who asked for it (`pms.services.job_records.requested_by`)."""
    from pms.models.platform import Job

    with unit_of_work(ctx) as uow:
        job = Job.create(kind=kind, status="QUEUED", property_id=property_id,
                         input={**data_in, **requested_by(ctx)},
                         result={"progress": {"done": 0, "total": total}})
        record_queued(uow, job)
    return job


def run_rooming_list(ctx: Ctx, job: Any, *, progress: Callable[[int, int], None] | None = None
                     ) -> dict[str, Any]:
    """The job's work: all-or-nothing validates every row first and applies none when one is
    refused (each row's outcome echoed, the refused naming what blocks them; a row already
    booked in the block under its own number is echoed `existing` and is not refused); then every row is
    picked up in its own short transaction (the house's night locks are never held across
    rows), in batches of ROOMING_BATCH with progress. A row refused while applying (a race)
    rolls an all-or-nothing list back: the reservations this job created are cancelled
    (rooms back to the block); reservations it found (`existing`) are left alone.

    Idempotent per row: each row books under its own confirmation number (`_row_number`), so a
    redelivered or resumed job finds the rows an earlier run created and creates only the rest.
    """
    import msgspec

    from pms.services.reservations.reservations import cancel_reservation

    property_id, block_id = job.property_id, uuid.UUID(job.input["block_id"])
    mode, rows = job.input["mode"], job.input["rows"]
    numbers = [_row_number(job.id, i, raw) for i, raw in enumerate(rows)]
    with read_scope(ctx):
        block = load_block(property_id, block_id)
        prior = _done_rows(property_id, numbers)
        done = {i: prior[n] for i, n in enumerate(numbers) if n in prior}
        # an earlier delivery of this job booked the rows under the job's own numbers; a row
        # naming its own number found booked is someone else's (or an earlier list's)
        ours = frozenset(i for i in done if _own_number(rows[i]) is None)
        outs, bodies = _precheck(block, _nights_of(block), rows, done, ours)
    created: list[tuple[int, Any]] = [(i, done[i]) for i, o in enumerate(outs)
                                      if o.outcome == "created" and i in ours]
    failed = mode == "all_or_nothing" and any(o.outcome == "refused" for o in outs)
    total = len(rows)
    for start in range(0, total, ROOMING_BATCH):
        for i in range(start, min(start + ROOMING_BATCH, total)):
            body = bodies[i]
            if body is None:
                continue
            if failed:
                outs[i] = s.RoomingRowOut(index=i, outcome="not_applied")
                continue
            try:
                row = pick_up(ctx, property_id, block_id,
                              msgspec.structs.replace(body, confirmation_number=numbers[i]))
            except (Conflict, ValidationFailed, NotFound) as exc:
                outs[i] = _row_problem(i, exc)
                failed = mode == "all_or_nothing"
                continue
            created.append((i, row))
            outs[i] = _prior_out(i, block, row)
        if progress is not None:
            progress(min(start + ROOMING_BATCH, total), total)
    if failed:  # all or nothing: give back what this list picked up
        for i, row in created:
            if row.status != "CANCELLED":
                cancel_reservation(ctx, property_id, row.id)
            outs[i] = s.RoomingRowOut(index=i, outcome="rolled_back", reservation_id=row.id,
                                      confirmation_number=row.confirmation_number)
    return _rooming_result(block_id, mode, not failed and bool(created), outs, total)


def _rooming_result(block_id: uuid.UUID, mode: str, applied: bool,
                    outs: list[s.RoomingRowOut], total: int) -> dict[str, Any]:
    out = s.RoomingListOut(block_id=block_id, mode=mode, dry_run=False, applied=applied,
                           created=sum(1 for o in outs if o.outcome == "created"),
                           refused=sum(1 for o in outs if o.outcome == "refused"), rows=outs)
    return {**to_data(out), "progress": {"done": total, "total": total}}


# -- the rooming list as it stands (an export) -----------------------------------------------------

EXPORTED = ("CONFIRMED", "CHECKED_IN", "CHECKED_OUT")  # the default: every stay still a stay


def export_rooming_list(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID,
                        status: str | None = None) -> s.RoomingExportOut:
    """The block's stays as a rooming list (arrival, then last and first name), each with its
    room number and the row that re-sends it. Raises NotFound."""
    from pms.models.property import Room, RoomType
    from pms.models.reservations import Reservation

    with read_scope(ctx):
        block = load_block(property_id, block_id)
        stays = list(Reservation.select().where(
            (Reservation.property == property_id) & (Reservation.block_id == block_id)
            & Reservation.status.in_([status] if status else list(EXPORTED)))
            .order_by(Reservation.arrival_date, Reservation.guest_last_name,
                      Reservation.guest_first_name, Reservation.id))
        codes = dict(RoomType.select(RoomType.id, RoomType.code)
                     .where(RoomType.property == property_id).tuples())
        room_ids = {r.room_id for r in stays if r.room_id is not None}
        numbers = (dict(Room.select(Room.id, Room.room_number)
                        .where(Room.id.in_(list(room_ids))).tuples()) if room_ids else {})
    rows = [s.RoomingExportRowOut(
        reservation_id=r.id, confirmation_number=r.confirmation_number, status=r.status,
        room_type_id=r.room_type_id, room_type_code=codes.get(r.room_type_id, ""),
        arrival_date=r.arrival_date, departure_date=r.departure_date,
        nights=(r.departure_date - r.arrival_date).days, adults=r.adults, children=r.children,
        guest_first_name=r.guest_first_name, guest_last_name=r.guest_last_name,
        guest_profile_id=r.guest_profile_id, room_number=numbers.get(r.room_id),
        notes=r.notes, pickup=_resend_row(r)) for r in stays]
    return s.RoomingExportOut(block_id=block.id, code=block.code, name=block.name,
                              arrival_date=block.arrival_date,
                              departure_date=block.departure_date, count=len(rows), rows=rows)


def _resend_row(r: Any) -> s.RoomingPickupOut:
    guest = None
    if r.guest_profile_id is None and r.guest_last_name:
        guest = {"last_name": r.guest_last_name}
        if r.guest_first_name:
            guest["first_name"] = r.guest_first_name
    return s.RoomingPickupOut(
        confirmation_number=r.confirmation_number, room_type_id=r.room_type_id,
        arrival_date=r.arrival_date, departure_date=r.departure_date, adults=r.adults,
        children=r.children, guest_profile_id=r.guest_profile_id, guest=guest, notes=r.notes)


CSV_COLUMNS = ("confirmation_number", "status", "last_name", "first_name", "room_type",
               "arrival_date", "departure_date", "nights", "adults", "children", "room_number",
               "notes")


def rooming_list_csv(export: s.RoomingExportOut) -> bytes:
    """The export as a spreadsheet opens it (UTF-8 with a byte-order mark, one header row); a
    cell a spreadsheet would run as a formula (=, +, -, @, tab, CR) is written as text."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for r in export.rows:
        writer.writerow([_cell_text(v) for v in (
            r.confirmation_number, r.status, r.guest_last_name, r.guest_first_name,
            r.room_type_code, r.arrival_date.isoformat(), r.departure_date.isoformat(),
            r.nights, r.adults, r.children, r.room_number, r.notes)])
    return ("\ufeff" + out.getvalue()).encode("utf-8")


def _cell_text(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
