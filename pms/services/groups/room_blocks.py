"""Room blocks: reading, creating, editing and deleting a block and its allocation grid. The
changes that move held rooms (state transitions, a new grid, a wash, the cut-off) are
`pms.services.groups.block_changes`; pick-up is `pms.services.groups.pickups`, the rooming
list `pms.services.groups.rooming_lists`.

Inventory. A block HOLDS its unpicked rooms (allotted - picked, per room type and night) while it
deducts (`RoomBlock.deducts`: DEFINITE and ACTUAL; TENTATIVE when the property's setting
`blocks.tentative_deducts_inventory` was on when the block went TENTATIVE) and is not cut off.
The sum over a property's blocks is `InventoryDay.held`, written only here and only under the
booking's own night locks (`pms.services.inventory.inventory.lock_inventory`: FOR UPDATE of the
inventory_day rows in (room type, date) order); the one sellable formula
(`pms.domain.availability.sellable`) subtracts it, and so do the search's SQL and the booking's
take (`pms_take_nights`, migration 034). Every change of a block computes what it holds before
and after (`_held_map`) and applies the difference (`_apply_held`): a night that would hold MORE
is checked under the locks against the rooms still for sale (409 `room_type_unavailable` naming
the nights short), so a block can never make a room type oversold (SPEC rule 6).

Cancelling a picked-up reservation gives the room back to the block while it holds (before the
cut-off), else to the house.

Lock order, everywhere: the reservation row (a cancel), the block row, the inventory rows.
Dry runs (`dry_run=True`) run the whole change, checks and locks included, and roll it back.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import peewee

from pms.context import Ctx
from pms.db.locking import lock_errors
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope, unit_of_work
from pms.domain.states import BLOCK_INITIAL, BLOCK_MACHINE, BlockStatus
from pms.errors import AlreadyExists, Conflict, ValidationFailed
from pms.models.catalog import RatePlan
from pms.models.property import RoomType
from pms.models.room_blocks import RoomBlock, RoomBlockNight
from pms.schemas import room_blocks as s
from pms.schemas.common import to_data
from pms.services.cashiering.master_folios import drop_master_folio, open_master_folio
from pms.services.catalog.catalog import load_property
from pms.services.groups.block_master_folio import apply_routing
from pms.services.groups.room_block_inventory import (
    Key,
    _nights_of,
    block_out,
    grids_of,
    load_block,
)
from pms.services.rates.rate_fence import negotiated_plan_open
from pms.services.references import unknown_reference

MAX_BLOCK_NIGHTS = 366


class _DryRun(Exception):
    """Rolls a dry run's unit of work back, carrying its answer."""

    def __init__(self, result: Any) -> None:
        super().__init__("dry run")
        self.result = result


def _invalid(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"{field}: {message}", errors=[{"field": field, "message": message}])


# -- reading --------------------------------------------------------------------------------------

def get_block(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID) -> s.BlockOut:
    with read_scope(ctx):
        return block_out(load_block(property_id, block_id))


def list_blocks(ctx: Ctx, property_id: uuid.UUID, query: s.BlockQuery
                ) -> tuple[list[s.BlockOut], str | None]:
    """A page of the property's blocks (with their grids) and the next cursor."""
    with read_scope(ctx):
        load_property(property_id)
        select = RoomBlock.select().where(RoomBlock.property == property_id)
        if query.status is not None:
            select = select.where(RoomBlock.status == query.status)
        if query.arrival_from is not None:
            select = select.where(RoomBlock.arrival_date >= query.arrival_from)
        if query.arrival_to is not None:
            select = select.where(RoomBlock.arrival_date <= query.arrival_to)
        if query.code is not None:
            select = select.where(peewee.fn.UPPER(RoomBlock.code) == query.code.strip().upper())
        if query.company_profile_id is not None:
            select = select.where(RoomBlock.company_profile_id == query.company_profile_id)
        if query.market_segment is not None:
            select = select.where(RoomBlock.market_segment == query.market_segment)
        if query.owner is not None:
            select = select.where(RoomBlock.owner == query.owner)
        page: Page[RoomBlock] = paginate(select, RoomBlock, limit=query.limit,
                                         cursor=query.cursor)
        grids = grids_of([r.id for r in page.items])  # the page's grids in one read
        return [block_out(r, grids.get(r.id, [])) for r in page.items], page.next_cursor


def list_block_reservations(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID,
                            query: s.BlockReservationQuery) -> Any:
    """A page of the block's reservations (its rooming list), oldest first. Raises NotFound."""
    from pms.queries.reservations import list_reservations
    from pms.schemas.reservations import ReservationQuery

    with read_scope(ctx):
        load_block(property_id, block_id)
    return list_reservations(ctx, property_id, ReservationQuery(
        block_id=block_id, status=query.status, limit=query.limit, cursor=query.cursor))


# -- create, edit, delete -------------------------------------------------------------------------

def _check_dates(arrival: date, departure: date, cutoff: date) -> None:
    if departure <= arrival:
        raise _invalid("departure_date", "must be after arrival_date")
    if (departure - arrival).days > MAX_BLOCK_NIGHTS:
        raise _invalid("departure_date", f"a block covers at most {MAX_BLOCK_NIGHTS} nights")
    if cutoff > arrival:
        raise _invalid("cutoff_date", "must be on or before arrival_date")


def _cells(block: RoomBlock, cells: Sequence[s.AllocationCell]) -> dict[Key, int]:
    """The grid cells a body names, checked: room types of the property, nights of the block."""
    types = {rt.id for rt in RoomType.select(RoomType.id).where(
        RoomType.property == block.property_id)}
    out: dict[Key, int] = {}
    for i, cell in enumerate(cells):
        if cell.room_type_id not in types:
            raise unknown_reference(f"allocation[{i}].room_type_id",
                                    "not a room type of this property")
        last = cell.to_date or cell.date
        if cell.date < block.arrival_date or last >= block.departure_date or last < cell.date:
            raise _invalid(f"allocation[{i}].date",
                           f"nights run from {block.arrival_date} to the night before "
                           f"{block.departure_date}")
        day = cell.date
        while day <= last:
            out[(cell.room_type_id, day)] = cell.allotted
            day += timedelta(days=1)
    return out


def _cell_cutoffs(block: RoomBlock, cells: Sequence[s.AllocationCell]) -> dict[Key, date]:
    """The per-night cut-off dates a body names (after `_cells` checked the cells): each on or
    before its night."""
    for i, cell in enumerate(cells):
        if cell.cutoff_date is not None and cell.cutoff_date > cell.date:
            raise _invalid(f"allocation[{i}].cutoff_date", "must be on or before the night")
    return _cell_values(cells, "cutoff_date")


def _cell_rates(cells: Sequence[s.AllocationCell]) -> dict[Key, Decimal]:
    """The contracted prices a body names (the block's rate grid), per room type and night."""
    return _cell_values(cells, "rate")


def _cell_values(cells: Sequence[s.AllocationCell], name: str) -> dict[Key, Any]:
    out: dict[Key, Any] = {}
    for cell in cells:
        value = getattr(cell, name)
        if value is None:
            continue
        day, last = cell.date, cell.to_date or cell.date
        while day <= last:
            out[(cell.room_type_id, day)] = value
            day += timedelta(days=1)
    return out


def _set_allocation(ctx: Ctx, block: RoomBlock, nights: list[RoomBlockNight],
                    cells: dict[Key, int], cutoffs: dict[Key, date] | None = None,
                    rates: dict[Key, Decimal] | None = None) -> list[RoomBlockNight]:
    """Set allotments, per-night cut-off dates and contracted rates (rows made as needed);
    never below what is picked up (409)."""
    cutoffs, rates = cutoffs or {}, rates or {}
    by_key = {(n.room_type_id, n.date): n for n in nights}
    below = [k for k, v in cells.items() if k in by_key and v < by_key[k].picked
             and v < by_key[k].allotted]
    if below:
        raise Conflict("the allocation cannot go below the rooms picked up on "
                       + ", ".join(sorted({d.isoformat() for _, d in below})),
                       code="allocation_below_pickup",
                       nights=sorted({d.isoformat() for _, d in below}))
    for key, allotted in sorted(cells.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        night = by_key.get(key)
        if night is None:
            night = RoomBlockNight(env_id=ctx.env_id, block=block.id, room_type_id=key[0],
                                   date=key[1], allotted=allotted, cutoff_date=cutoffs.get(key),
                                   rate=rates.get(key))
            night.save(force_insert=True)
            by_key[key] = night
        elif (night.allotted, night.cutoff_date, night.rate) != (
                allotted, cutoffs.get(key, night.cutoff_date), rates.get(key, night.rate)):
            night.allotted = allotted
            night.cutoff_date = cutoffs.get(key, night.cutoff_date)
            night.rate = rates.get(key, night.rate)
            night.save()
    return sorted(by_key.values(), key=lambda n: (str(n.room_type_id), n.date))


def _check_company(company_id: uuid.UUID | None) -> None:
    from pms.models.profiles import Profile

    if company_id is not None and not Profile.select(Profile.id).where(
            (Profile.id == company_id) & (Profile.kind == "COMPANY")).exists():
        raise unknown_reference("company_profile_id", "company_profile_id: not a company "
                                                      "profile")


def _check_fence(ctx: Ctx, plan: RatePlan, company_id: uuid.UUID | None) -> None:
    """The rate fence (`pms.services.rates.rate_fence`): a block on a negotiated plan
    names a company the plan is negotiated for, so its pick-ups (and its answers) never carry
    another company's negotiated price."""
    if not negotiated_plan_open(ctx, plan, company_id):
        raise ValidationFailed(
            "rate_plan_id is a negotiated plan: the block names a company_profile_id it is "
            "negotiated for", code="rate_plan_not_negotiated_for_company",
            errors=[{"field": "company_profile_id",
                     "message": "not a company this negotiated plan is for"}])


def _code_free(property_id: uuid.UUID, code: str) -> None:
    if RoomBlock.select(RoomBlock.id).where((RoomBlock.property == property_id)
                                           & (RoomBlock.code == code)).exists():
        raise AlreadyExists(f"a block with code {code!r} exists")


def create_block(ctx: Ctx, property_id: uuid.UUID, body: s.BlockIn) -> s.BlockOut:
    """A block, born INQUIRY (it holds nothing until it deducts), with its allocation grid.

    Raises: NotFound (property). ValidationFailed: dates, unknown rate plan or company, grid
    cells outside the block. AlreadyExists (409): the code is taken.
    """
    cutoff = body.cutoff_date or body.arrival_date
    _check_dates(body.arrival_date, body.departure_date, cutoff)
    with lock_errors(), unit_of_work(ctx) as uow:
        load_property(property_id)
        plan = RatePlan.get_or_none((RatePlan.id == body.rate_plan_id)
                                    & (RatePlan.property == property_id))
        if plan is None:
            raise unknown_reference("rate_plan_id", "rate_plan_id: not a rate plan of this "
                                                    "property")
        _check_company(body.company_profile_id)
        _check_fence(ctx, plan, body.company_profile_id)
        _code_free(property_id, body.code)
        row = RoomBlock(env_id=ctx.env_id, property=property_id, code=body.code,
                        name=body.name, arrival_date=body.arrival_date,
                        departure_date=body.departure_date, cutoff_date=cutoff,
                        rate_plan_id=body.rate_plan_id,
                        company_profile_id=body.company_profile_id,
                        market_segment=body.market_segment, source=body.source,
                        owner=body.owner, master_folio_routing=body.master_folio_routing,
                        status=BLOCK_MACHINE.states(BLOCK_INITIAL).value, deducts=False,
                        version=1)
        try:
            with RoomBlock._meta.database.atomic():
                row.save(force_insert=True)
        except peewee.IntegrityError:
            raise AlreadyExists(f"a block with code {body.code!r} exists") from None
        open_master_folio(row)  # the block's master folio, opened with it
        nights = _set_allocation(ctx, row, [], _cells(row, body.allocation),
                                 _cell_cutoffs(row, body.allocation),
                                 _cell_rates(body.allocation))
        out = block_out(row, nights)
        uow.record("block", "created", row, to_data(out), property_id=property_id)
    return out


def update_block(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID,
                 body: s.BlockPatch) -> s.BlockOut:
    """Rename, move the cut-off date (a block not cut off yet), change the company, the
    market segment, the source or the owner."""
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_block(property_id, block_id, lock=True)
        BLOCK_MACHINE.transition(row.status, "edit")
        before = to_data(block_out(row))
        if body.name is not s.UNSET:
            row.name = body.name
        if body.cutoff_date is not s.UNSET:
            if row.cut_off_at is not None:
                raise Conflict("the block is cut off already", code="block_cut_off")
            _check_dates(row.arrival_date, row.departure_date, body.cutoff_date)
            row.cutoff_date = body.cutoff_date
        if body.company_profile_id is not s.UNSET:
            _check_company(body.company_profile_id)
            _check_fence(ctx, RatePlan.get_by_id(row.rate_plan_id), body.company_profile_id)
            row.company_profile_id = body.company_profile_id
        for field in ("market_segment", "source", "owner"):
            if getattr(body, field) is not s.UNSET:
                setattr(row, field, getattr(body, field))
        if body.master_folio_routing is not s.UNSET:
            apply_routing(row, body.master_folio_routing)
        row.updated_at = ctx.now
        row.save()
        out = block_out(row)
        uow.record("block", "updated", row, to_data(out), before=before,
                   property_id=property_id)
    return out


def delete_block(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID) -> None:
    """Delete an INQUIRY, CANCELLED or LOST block with nothing picked up (409 otherwise), no
    banquet event linked to it (409 block_has_events) and its master folio (409
    block_folio_in_use while that holds a line or a payment)."""
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_block(property_id, block_id, lock=True)
        nights = _nights_of(row)
        if BlockStatus(row.status) not in (BlockStatus.INQUIRY, BlockStatus.CANCELLED,
                                           BlockStatus.LOST) or any(n.picked for n in nights):
            raise Conflict("only an inquiry, or a cancelled or lost block with nothing picked "
                           "up, can be deleted", code="block_in_use")
        _no_linked_events(row)
        data = to_data(block_out(row, nights))
        drop_master_folio(row)  # 409 block_folio_in_use while it holds a line or a payment
        uow.record("block", "deleted", row, data, before=data, property_id=property_id)
        RoomBlockNight.delete().where(RoomBlockNight.block == row.id).execute()
        RoomBlock.delete().where(RoomBlock.id == row.id).execute()


def _no_linked_events(block: RoomBlock) -> None:
    """A block that banquet events link to is not deleted (409 block_has_events naming them):
    unlink the events (PUT block_id null) or delete them first."""
    from pms.models.banquets import BanquetEvent

    linked = list(BanquetEvent.select(BanquetEvent.id, BanquetEvent.name).where(
        BanquetEvent.block_id == block.id).order_by(BanquetEvent.id).limit(20))
    if linked:
        raise Conflict("banquet events link to this block: unlink or delete them first",
                       code="block_has_events",
                       events=[{"id": str(e.id), "name": e.name} for e in linked])
