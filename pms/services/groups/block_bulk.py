"""A room block's reservations cancelled or moved in bulk, as jobs with progress.

The rows are resolved when the job is queued (the reservations named, or every CONFIRMED one of
the block; a date change's new dates computed from `shift_days` then) and stored on the job, so
a redelivered or resumed job does the same work: a row already cancelled, or already at its new
dates, is echoed as done and not done again.

Every row is applied in its own short transaction through the reservation's own use case
(`cancel_reservation`, `edit_reservation` with the block's pick-up): the house's night locks
are held for one reservation at a time, each change writes its reservation's event and audit
row, and the block's arithmetic is the pick-up's and the cancel's (before the cut-off a room
goes back to the block, after it to the house; a move re-checks the allocation and, for a
block that holds no rooms, the house's availability).

All or nothing validates every row first (the block's allocation counted cumulatively, in the
order the rows are applied) and applies none when one is refused. A row refused while applying
(a race) moves the rows already moved back; a cancel cannot be undone (the reservation machine
has no reinstate), so a cancel job stops there and echoes the rest not_applied.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

import msgspec

from pms.context import Ctx
from pms.db.uow import read_scope
from pms.domain.states import BLOCK_MACHINE, RESERVATION_MACHINE
from pms.domain.stay import stay_nights
from pms.errors import Conflict, NotFound, ValidationFailed
from pms.models.reservations import Reservation
from pms.models.room_blocks import RoomBlock, RoomBlockNight
from pms.schemas import room_blocks as s
from pms.schemas.common import to_data
from pms.services.groups.room_block_inventory import load_block

BULK_CANCEL = "block_bulk_cancel"
BULK_DATE_CHANGE = "block_bulk_date_change"
ACTIONS = {BULK_CANCEL: "cancel", BULK_DATE_CHANGE: "date_change"}


def _invalid(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"{field}: {message}", errors=[{"field": field, "message": message}])


def _targets(block: RoomBlock, body: s.BulkCancelIn | s.BulkDateChangeIn
             ) -> list[dict[str, Any]]:
    """The job's rows (call inside a scope): one per reservation, in the order named (or by
    arrival date), with a date change's new dates."""
    if body.reservation_ids is None:
        found = list(Reservation.select().where(
            (Reservation.block_id == block.id) & (Reservation.status == "CONFIRMED"))
            .order_by(Reservation.arrival_date, Reservation.id))
        ids = [r.id for r in found]
    else:
        ids = list(dict.fromkeys(body.reservation_ids))
        found = list(Reservation.select().where(
            (Reservation.block_id == block.id) & Reservation.id.in_(ids))
            .order_by(Reservation.id))
    by_id = {r.id: r for r in found}
    rows = []
    for rid in ids:
        res = by_id.get(rid)
        row: dict[str, Any] = {"reservation_id": str(rid)}
        if res is not None and isinstance(body, s.BulkDateChangeIn):
            if body.shift_days is not None:
                shift = timedelta(days=body.shift_days)
                new = (res.arrival_date + shift, res.departure_date + shift)
            else:
                new = (body.arrival_date, body.departure_date)
            row.update(from_arrival=str(res.arrival_date),
                       from_departure=str(res.departure_date),
                       arrival_date=str(new[0]), departure_date=str(new[1]))
        rows.append(row)
    return rows


def _check_body(body: s.BulkCancelIn | s.BulkDateChangeIn) -> None:
    if not isinstance(body, s.BulkDateChangeIn):
        return
    dates = (body.arrival_date, body.departure_date)
    if (body.shift_days is None) == (dates == (None, None)):
        raise _invalid("shift_days", "send either shift_days or arrival_date and "
                                     "departure_date")
    if body.shift_days is None and None in dates:
        raise _invalid("departure_date", "send arrival_date and departure_date together")
    if body.shift_days == 0:
        raise _invalid("shift_days", "must not be 0")
    if body.shift_days is None and body.departure_date <= body.arrival_date:  # type: ignore
        raise _invalid("departure_date", "must be after arrival_date")


def _out(index: int, outcome: str, res: Reservation | None = None, **extra: Any
         ) -> s.BulkRowOut:
    if res is not None:
        extra.setdefault("arrival_date", res.arrival_date)
        extra.setdefault("departure_date", res.departure_date)
        extra.update(reservation_id=res.id, confirmation_number=res.confirmation_number)
    return s.BulkRowOut(index=index, outcome=outcome, **extra)


def _refused(index: int, res: Reservation | None, code: str, detail: str,
             nights: list[str] | None = None, rid: str | None = None) -> s.BulkRowOut:
    if res is None:
        return s.BulkRowOut(index=index, outcome="refused", code=code, detail=detail,
                            reservation_id=uuid.UUID(rid) if rid else None)
    return _out(index, "refused", res, code=code, detail=detail, nights=nights)


def _precheck(kind: str, block: RoomBlock, rows: list[dict[str, Any]]
              ) -> list[s.BulkRowOut]:
    """Every row checked (call inside a scope): a reservation of the block, CONFIRMED (one
    already done by an earlier delivery is echoed as done); a move's new dates inside the
    block's and the allocation left on its new nights, counted in apply order (its own old
    nights given back first)."""
    ids = [uuid.UUID(r["reservation_id"]) for r in rows]
    found = {r.id: r for r in Reservation.select().where(
        (Reservation.block_id == block.id) & Reservation.id.in_(ids)).order_by(Reservation.id)}
    left = {(n.room_type_id, n.date): n.allotted - n.picked
            for n in RoomBlockNight.select().where(RoomBlockNight.block == block.id)
            .order_by(RoomBlockNight.room_type_id, RoomBlockNight.date)}
    outs: list[s.BulkRowOut] = []
    for i, (row, rid) in enumerate(zip(rows, ids, strict=True)):
        res = found.get(rid)
        if res is None:
            outs.append(_refused(i, None, "not_found", "no such reservation in this block",
                                 rid=row["reservation_id"]))
            continue
        if kind == BULK_CANCEL:
            if res.status == "CANCELLED":
                outs.append(_out(i, "cancelled", res))
            elif not RESERVATION_MACHINE.can(res.status, "cancel"):
                outs.append(_refused(i, res, "invalid_transition",
                                     f"a {res.status} reservation cannot be cancelled"))
            else:
                outs.append(_out(i, "valid", res))
            continue
        new = (date.fromisoformat(row["arrival_date"]), date.fromisoformat(row["departure_date"]))
        if (res.arrival_date, res.departure_date) == new and \
                (row["from_arrival"], row["from_departure"]) != tuple(map(str, new)):
            outs.append(_out(i, "moved", res))  # moved by an earlier delivery of the job
            continue
        if res.status != "CONFIRMED" or not BLOCK_MACHINE.can(block.status, "pick"):
            what = f"a {res.status} reservation" if res.status != "CONFIRMED" else \
                f"a {block.status} block's reservation"
            outs.append(_refused(i, res, "invalid_transition",
                                 f"{what}: its dates are not moved here"))
            continue
        if (res.arrival_date, res.departure_date) != (date.fromisoformat(row["from_arrival"]),
                                                      date.fromisoformat(row["from_departure"])):
            outs.append(_refused(i, res, "reservation_changed",
                                 "the reservation's dates changed since the job was queued"))
            continue
        if new[0] < block.arrival_date or new[1] > block.departure_date:
            outs.append(_refused(i, res, "validation_failed",
                                 f"the new dates must lie inside the block's "
                                 f"({block.arrival_date} to {block.departure_date})"))
            continue
        old_nights = stay_nights(res.arrival_date, res.departure_date)
        for d in old_nights:
            left[(res.room_type_id, d)] = left.get((res.room_type_id, d), 0) + 1
        short = [d for d in stay_nights(*new) if left.get((res.room_type_id, d), 0) < 1]
        if short:
            for d in old_nights:
                left[(res.room_type_id, d)] -= 1
            outs.append(_refused(i, res, "block_allocation_exhausted",
                                 "the block's allocation is exhausted",
                                 [d.isoformat() for d in short]))
            continue
        for d in stay_nights(*new):
            left[(res.room_type_id, d)] -= 1
        outs.append(_out(i, "valid", res, arrival_date=new[0], departure_date=new[1]))
    return outs


def start_bulk(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID, kind: str,
               body: s.BulkCancelIn | s.BulkDateChangeIn) -> tuple[Any, s.BulkOut | None]:
    """A dry run answers every row's outcome at once: (None, answer). Otherwise the rows are
    resolved and queued as a job of `kind` with its event and audit row: (job, None).

    Raises: NotFound (block). ValidationFailed (422): shift_days and dates both or neither.
    """
    from pms.services.groups.rooming_lists import queue_block_job

    _check_body(body)
    with read_scope(ctx):
        block = load_block(property_id, block_id)
        rows = _targets(block, body)
        if body.dry_run:
            return None, _result(block.id, kind, body.mode, True, False,
                                 _precheck(kind, block, rows))
    job = queue_block_job(ctx, kind, property_id,
                          {"block_id": str(block_id), "mode": body.mode, "rows": rows},
                          len(rows))
    return job, None


def _result(block_id: uuid.UUID, kind: str, mode: str, dry_run: bool, applied: bool,
            outs: list[s.BulkRowOut]) -> s.BulkOut:
    return s.BulkOut(block_id=block_id, action=ACTIONS[kind], mode=mode, dry_run=dry_run,
                     applied=applied,
                     changed=sum(1 for o in outs if o.outcome in ("cancelled", "moved")),
                     refused=sum(1 for o in outs if o.outcome == "refused"), rows=outs)


def _apply(ctx: Ctx, kind: str, block: RoomBlock, row: dict[str, Any], *,
           back: bool = False) -> Reservation:
    """One row in its own transaction (through the reservation's use case): cancel it, or
    move it to its new dates (`back`: to the dates it had)."""
    from pms.schemas.reservations import ReservationPatch
    from pms.services.groups.pickups import block_pickup
    from pms.services.reservations.reservations import cancel_reservation, edit_reservation

    rid = uuid.UUID(row["reservation_id"])
    if kind == BULK_CANCEL:
        return cancel_reservation(ctx, block.property_id, rid)
    keys = ("from_arrival", "from_departure") if back else ("arrival_date", "departure_date")
    patch = ReservationPatch(arrival_date=date.fromisoformat(row[keys[0]]),
                             departure_date=date.fromisoformat(row[keys[1]]))
    return edit_reservation(ctx, block.property_id, rid, patch,
                            pickup=block_pickup(block.property_id, block.id))


def run_bulk(ctx: Ctx, job: Any, *, progress: Callable[[int, int], None] | None = None,
             batch: int = 50) -> dict[str, Any]:
    """The job's work (see the module): every row checked, then applied one short
    transaction at a time, progress after each batch of `batch` rows."""
    kind, mode, rows = job.kind, job.input["mode"], job.input["rows"]
    with read_scope(ctx):
        block = load_block(job.property_id, uuid.UUID(job.input["block_id"]))
        outs = _precheck(kind, block, rows)
    failed = mode == "all_or_nothing" and any(o.outcome == "refused" for o in outs)
    done: list[int] = []
    total = len(rows)
    for start in range(0, total, batch):
        for i in range(start, min(start + batch, total)):
            if outs[i].outcome != "valid":
                continue
            if failed:
                outs[i] = _out(i, "not_applied", None, reservation_id=outs[i].reservation_id,
                               confirmation_number=outs[i].confirmation_number)
                continue
            try:
                res = _apply(ctx, kind, block, rows[i])
            except (Conflict, ValidationFailed, NotFound) as exc:
                extra = getattr(exc, "extra", {}) or {}
                outs[i] = s.BulkRowOut(index=i, outcome="refused",
                                       reservation_id=outs[i].reservation_id,
                                       confirmation_number=outs[i].confirmation_number,
                                       code=getattr(exc, "code", "conflict"),
                                       detail=getattr(exc, "detail", str(exc)),
                                       nights=extra.get("nights"))
                failed = mode == "all_or_nothing"
                continue
            outs[i] = _out(i, "cancelled" if kind == BULK_CANCEL else "moved", res)
            done.append(i)
        if progress is not None:
            progress(min(start + batch, total), total)
    if failed and kind == BULK_DATE_CHANGE:  # all or nothing: the moved rows move back
        for i in reversed(done):
            try:
                res = _apply(ctx, kind, block, rows[i], back=True)
                outs[i] = _out(i, "rolled_back", res)
            except (Conflict, ValidationFailed, NotFound) as exc:
                outs[i] = msgspec.structs.replace(outs[i], code="rollback_failed",
                                                  detail=getattr(exc, "detail", str(exc)))
    applied = bool(done) and not (failed and kind == BULK_DATE_CHANGE)
    out = _result(block.id, kind, mode, False, applied, outs)
    return {**to_data(out), "progress": {"done": total, "total": total}}
