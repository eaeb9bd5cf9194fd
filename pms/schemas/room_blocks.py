"""Room blocks (issue 33): the block, its allocation grid, pick-up, cut-off, wash, the receipt."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pms.schemas.common import Code, ListQuery, Name, Out, Strict
from pms.schemas.reservations import ReservationIn, ReservationOut

Rooms = Annotated[int, msgspec.Meta(ge=0, le=10000)]


class AllocationCell(Strict):
    """Rooms allotted to the block for one room type on one night (or, with to_date, on every
    night from `date` to `to_date` inclusive)."""

    room_type_id: uuid.UUID
    date: date
    allotted: Rooms
    to_date: date | None = None


Grid = Annotated[list[AllocationCell], msgspec.Meta(max_length=2000)]


class BlockIn(Strict):
    code: Code
    name: Name
    arrival_date: date
    departure_date: date
    rate_plan_id: uuid.UUID
    company_profile_id: uuid.UUID | None = None
    cutoff_date: date | None = None  # default: the arrival date
    allocation: Grid = []


class BlockPatch(Strict):
    name: Name | UnsetType = UNSET
    cutoff_date: date | UnsetType = UNSET
    company_profile_id: uuid.UUID | None | UnsetType = UNSET


class AllocationIn(Strict):
    """Cells to set (others keep their values); an allotment below what is picked up is 409."""

    allocation: Grid


class WashIn(Strict):
    """Take unpicked rooms off the allocation: `rooms` per night, or `percent` of each night's
    allotment (rounded down), never below what is picked up; optionally one room type."""

    rooms: Annotated[int, msgspec.Meta(ge=1, le=10000)] | None = None
    percent: Annotated[int, msgspec.Meta(ge=1, le=100)] | None = None
    room_type_id: uuid.UUID | None = None


class DryRunQuery(msgspec.Struct, kw_only=True):
    dry_run: bool = False


class TransitionQuery(msgspec.Struct, kw_only=True):
    dry_run: bool = False
    cancel_picked: bool = False  # cancel: consent to cancel the picked-up reservations too


class BlockQuery(ListQuery, kw_only=True):
    status: Annotated[str, msgspec.Meta(max_length=16, pattern=r"^[A-Z]+$")] | None = None


class PickupIn(ReservationIn, kw_only=True):
    """A reservation in the block: the block's rate plan (rate_plan_id may be left out; another
    plan is 422), dates inside the block's."""

    rate_plan_id: uuid.UUID | None = None  # type: ignore[assignment]


class NightOut(Out):
    room_type_id: uuid.UUID
    date: date
    allotted: int
    picked: int
    washed: int
    released: int
    held: int


class BlockOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    code: str
    name: str
    arrival_date: date
    departure_date: date
    cutoff_date: date
    rate_plan_id: uuid.UUID
    company_profile_id: uuid.UUID | None
    folio_id: uuid.UUID | None
    status: str
    deducts: bool
    cut_off_at: datetime | None
    allotted: int
    picked: int
    held: int
    allocation: list[NightOut]
    version: int
    created_at: datetime
    updated_at: datetime


class HeldChangeOut(Out):
    room_type_id: uuid.UUID
    date: date
    held_before: int
    held_after: int


class BlockChangeOut(Out):
    """The block after a change (or, dry run, as it would be) and the rooms it holds out of
    house inventory per room type and night, before and after."""

    dry_run: bool
    block: BlockOut
    held_changes: list[HeldChangeOut]


class PickupOut(Out):
    block_id: uuid.UUID
    reservation: ReservationOut


class ReceiptNightOut(Out):
    room_type_id: uuid.UUID
    date: date
    allotted: int
    picked: int
    released: int
    washed: int
    held: int
    physical: int
    out_of_order: int
    out_of_service: int
    sell_limit: int | None
    sold: int
    held_by_blocks: int
    sellable: int
    arithmetic: str


class PickupReceiptOut(Out):
    block_id: uuid.UUID
    status: str
    deducts: bool
    cut_off: bool
    formula: str
    data: list[ReceiptNightOut]


class RoomingListIn(Strict):
    """A rooming list: one reservation per row (each row a pick-up body: room_type_id, dates,
    adults, children, guest or guest_profile_id, notes). `all_or_nothing` validates every row
    first and applies none when one is refused; `per_row` applies the rows that can be.
    `dry_run` answers every row's outcome at once and changes nothing."""

    rows: Annotated[list[Annotated[dict[str, Any], msgspec.Meta(max_length=16)]],
                    msgspec.Meta(min_length=1, max_length=2000)]
    mode: Literal["all_or_nothing", "per_row"] = "all_or_nothing"
    dry_run: bool = False


class RoomingRowOut(Out):
    index: int
    outcome: str  # valid | created | refused | not_applied | rolled_back
    reservation_id: uuid.UUID | None = None
    confirmation_number: str | None = None
    code: str | None = None
    detail: str | None = None
    nights: list[str] | None = None


class RoomingListOut(Out):
    block_id: uuid.UUID
    mode: str
    dry_run: bool
    applied: bool
    created: int
    refused: int
    rows: list[RoomingRowOut]


BulkIds = Annotated[list[uuid.UUID], msgspec.Meta(min_length=1, max_length=2000)]
BulkMode = Literal["all_or_nothing", "per_row"]


class BulkCancelIn(Strict):
    """Cancel reservations of the block (a job): the ones named, or every CONFIRMED one of the
    block when `reservation_ids` is left out (resolved when the job is queued). Each is
    cancelled in its own short transaction; before the block's cut-off its rooms go back to
    the block, after it to the house. `all_or_nothing` validates every row first and cancels
    none when one is refused (a cancel cannot be undone: a row refused while applying stops
    the rest, which are echoed not_applied); `per_row` cancels what it can. `dry_run` answers
    every row's outcome at once and changes nothing."""

    reservation_ids: BulkIds | None = None
    mode: BulkMode = "all_or_nothing"
    dry_run: bool = False


class BulkDateChangeIn(Strict):
    """Move reservations of the block (a job): by `shift_days`, or to `arrival_date` and
    `departure_date`; the new dates must lie inside the block's. Each move re-checks the
    block's allocation (and, for a block that holds no rooms, the house's availability)
    under the booking's night locks and is re-priced at the block's rate plan.
    `all_or_nothing` validates every row first and moves none when one is refused; a row
    refused while applying moves the rows already moved back. `dry_run` answers at once."""

    reservation_ids: BulkIds | None = None
    shift_days: Annotated[int, msgspec.Meta(ge=-366, le=366)] | None = None
    arrival_date: date | None = None
    departure_date: date | None = None
    mode: BulkMode = "all_or_nothing"
    dry_run: bool = False


class BulkRowOut(RoomingRowOut):
    # outcome: valid | cancelled | moved | unchanged | refused | not_applied | rolled_back
    arrival_date: date | None = None
    departure_date: date | None = None


class BulkOut(Out):
    block_id: uuid.UUID
    action: str  # cancel | date_change
    mode: str
    dry_run: bool
    applied: bool
    changed: int
    refused: int
    rows: list[BulkRowOut]
