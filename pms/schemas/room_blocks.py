"""Room blocks: the block, its allocation grid, pick-up, cut-off, wash, the receipt."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pms.schemas.common import Amount, Code, ListQuery, Name, Out, Strict
from pms.schemas.reservations import ReservationIn, ReservationOut

Rooms = Annotated[int, msgspec.Meta(ge=0, le=10000)]


class AllocationCell(Strict):
    """Rooms allotted to the block for one room type on one night (or, with to_date, on every
    night from `date` to `to_date` inclusive); `cutoff_date`: the day those nights' unpicked
    rooms go back to the house (on or before the night; left out: the block's cut-off date);
    `rate`: the contracted price of one room of the type on those nights, in the rate plan's
    currency (the block's rate grid; left out: a cell keeps its rate, a new one has none and
    the block's rate plan prices the night). Occupancy extras and packages come from the plan."""

    room_type_id: uuid.UUID
    date: date
    allotted: Rooms
    to_date: date | None = None
    cutoff_date: date | None = None
    rate: Amount | None = None


Grid = Annotated[list[AllocationCell], msgspec.Meta(max_length=2000)]


# members' room nights billed to the block's master folio: NONE (each guest pays their own),
# ROOM_AND_TAX (the room line and its taxes), ROOM_TAX_AND_PACKAGES (the night's packages too)
Routing = Literal["NONE", "ROOM_AND_TAX", "ROOM_TAX_AND_PACKAGES"]

# the sales manager who owns the block (a user name or id, as the sales system names them)
Owner = Annotated[str, msgspec.Meta(min_length=1, max_length=120)]


class BlockIn(Strict):
    code: Code
    name: Name
    arrival_date: date
    departure_date: date
    rate_plan_id: uuid.UUID
    company_profile_id: uuid.UUID | None = None
    cutoff_date: date | None = None  # default: the arrival date
    allocation: Grid = []
    market_segment: Code | None = None
    source: Code | None = None
    owner: Owner | None = None
    master_folio_routing: Routing = "NONE"


class BlockPatch(Strict):
    name: Name | UnsetType = UNSET
    cutoff_date: date | UnsetType = UNSET
    company_profile_id: uuid.UUID | None | UnsetType = UNSET
    market_segment: Code | None | UnsetType = UNSET
    source: Code | None | UnsetType = UNSET
    owner: Owner | None | UnsetType = UNSET
    master_folio_routing: Routing | UnsetType = UNSET


class BlockDatesIn(Strict):
    """The block's new dates: the same number of nights elsewhere moves the grid; other dates
    keep the nights inside them and add new ones at 0 (or as `allocation` sets them).
    `cutoff_date` left out keeps its distance to the arrival; `move_pickups` on a move moves
    the block's CONFIRMED reservations by the same days."""

    arrival_date: date
    departure_date: date
    cutoff_date: date | None = None
    move_pickups: bool = False
    allocation: Grid = []


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
    """Filters, all optional and combined: status, arrivals from..to (both included), the
    block's code (exact, case-insensitive), its company, market segment and owner."""

    status: Annotated[str, msgspec.Meta(max_length=16, pattern=r"^[A-Z]+$")] | None = None
    arrival_from: date | None = None
    arrival_to: date | None = None
    code: Annotated[str, msgspec.Meta(min_length=1, max_length=32)] | None = None
    company_profile_id: uuid.UUID | None = None
    market_segment: Code | None = None
    owner: Owner | None = None


class BlockReservationQuery(ListQuery, kw_only=True):
    """A block's reservations (its rooming list), by status."""

    status: Literal["CONFIRMED", "CHECKED_IN", "CHECKED_OUT", "CANCELLED", "NO_SHOW"] | None = None


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
    cutoff_date: date  # the night's own cut-off date, else the block's
    cut_off: bool  # its unpicked rooms went back to the house
    rate: Decimal | None  # the contracted price of a room that night; null: the rate plan's


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
    market_segment: str | None
    source: str | None
    owner: str | None  # the sales manager owning it
    folio_id: uuid.UUID | None
    master_folio_routing: str  # NONE | ROOM_AND_TAX | ROOM_TAX_AND_PACKAGES
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


class MasterFolioSettledOut(Out):
    """The block with its master folio closed (its balance at the close: 0)."""

    block: BlockOut
    folio_id: uuid.UUID
    folio_status: str
    closed_at: datetime | None
    balance: str


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


class RoomingExportQuery(msgspec.Struct, kw_only=True):
    """`format`: json (the default) or csv; `status`: one status only (default: every stay
    that is not cancelled or a no-show)."""

    format: Literal["json", "csv"] = "json"
    status: Literal["CONFIRMED", "CHECKED_IN", "CHECKED_OUT", "CANCELLED", "NO_SHOW"] | None = None


class RoomingPickupOut(Out):
    """A stay as a rooming list's row takes it: sent back to POST .../rooming-list, every row
    folds into the stay it names (its confirmation number)."""

    confirmation_number: str
    room_type_id: uuid.UUID
    arrival_date: date
    departure_date: date
    adults: int
    children: int
    guest_profile_id: uuid.UUID | None = None
    guest: dict[str, str] | None = None
    notes: str | None = None


class RoomingExportRowOut(Out):
    reservation_id: uuid.UUID
    confirmation_number: str
    status: str
    room_type_id: uuid.UUID
    room_type_code: str
    arrival_date: date
    departure_date: date
    nights: int
    adults: int
    children: int
    guest_first_name: str | None
    guest_last_name: str | None
    guest_profile_id: uuid.UUID | None
    room_number: str | None
    notes: str | None
    pickup: RoomingPickupOut  # the row as POST .../rooming-list takes it


class RoomingExportOut(Out):
    block_id: uuid.UUID
    code: str
    name: str
    arrival_date: date
    departure_date: date
    count: int
    rows: list[RoomingExportRowOut]


class RoomingRowOut(Out):
    index: int
    outcome: str  # valid | created | existing | refused | not_applied | rolled_back
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


class AttritionNightOut(Out):
    room_type_id: uuid.UUID
    date: date
    contracted: int  # the grid before washes: current + washed
    current: int  # allotted now
    picked: int
    washed: int
    released: int  # given to the house at the cut-off
    pickup_percent: Decimal  # picked of contracted, 0 when nothing was contracted


class WashOut(Out):
    at: datetime
    actor_sub: str
    rooms: int  # rooms washed by this wash, all nights together
    reason: str | None


class AttritionOut(Out):
    """Contract against pick-up: what a sales manager reads before an attrition clause."""

    block_id: uuid.UUID
    code: str
    status: str
    contracted: int
    current: int
    picked: int
    washed: int
    released: int
    pickup_percent: Decimal  # picked of contracted
    current_pickup_percent: Decimal  # picked of current
    currency: str
    room_revenue: Decimal  # room totals of the block's stays that are not cancelled or no-show
    reservations: int  # those stays
    by_night: list[AttritionNightOut]
    washes: list[WashOut]  # oldest first
