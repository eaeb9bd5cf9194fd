"""Function spaces, banquet events, event resources and postings."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Annotated

import msgspec
from msgspec import UNSET, UnsetType

from pms.schemas.common import Amount, Code, ListQuery, Name, Out, Strict


class SetupStyle(StrEnum):
    THEATRE = "THEATRE"
    CLASSROOM = "CLASSROOM"
    BANQUET = "BANQUET"
    RECEPTION = "RECEPTION"
    BOARDROOM = "BOARDROOM"
    U_SHAPE = "U_SHAPE"
    HOLLOW_SQUARE = "HOLLOW_SQUARE"
    CABARET = "CABARET"


class ResourceKind(StrEnum):
    EQUIPMENT = "EQUIPMENT"
    MENU = "MENU"


Instant = Annotated[datetime, msgspec.Meta(tz=True, description="RFC 3339 with an offset")]
Headcount = Annotated[int, msgspec.Meta(ge=0, le=100000)]
Minutes = Annotated[int, msgspec.Meta(ge=0, le=1440)]
Capacity = Annotated[int, msgspec.Meta(ge=1, le=100000)]
Quantity = Annotated[int, msgspec.Meta(ge=1, le=100000)]
Capacities = Annotated[dict[SetupStyle, Capacity], msgspec.Meta(min_length=1, max_length=16)]
Reason = Annotated[str, msgspec.Meta(max_length=500)]


class OutOfOrderPeriod(Strict):
    start: Instant
    end: Instant
    reason: Reason | None = None


class OutOfOrderPeriodOut(Out):
    start: datetime
    end: datetime
    reason: str | None


class FunctionSpaceIn(Strict):
    """A function space; a combination lists its element spaces (elements themselves)."""

    name: Name
    capacities: Capacities
    element_ids: Annotated[list[uuid.UUID], msgspec.Meta(max_length=20)] = []
    out_of_order: Annotated[list[OutOfOrderPeriod], msgspec.Meta(max_length=50)] = []
    rental_price: Amount | None = None
    rental_transaction_code: Code | None = None


class FunctionSpacePatch(Strict):
    name: Name | UnsetType = UNSET
    capacities: Capacities | UnsetType = UNSET
    out_of_order: Annotated[list[OutOfOrderPeriod], msgspec.Meta(max_length=50)] | UnsetType \
        = UNSET
    rental_price: Amount | None | UnsetType = UNSET
    rental_transaction_code: Code | None | UnsetType = UNSET


class FunctionSpaceOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    name: str
    capacities: dict[str, int]
    element_ids: list[uuid.UUID]
    out_of_order: list[OutOfOrderPeriodOut]
    rental_price: Decimal | None
    rental_transaction_code: str | None
    version: int
    created_at: datetime
    updated_at: datetime


class BanquetEventIn(Strict):
    """A banquet event (born INQUIRY). `folio_id`: the open folio its resources post to."""

    name: Name
    space_id: uuid.UUID
    setup_style: SetupStyle
    start_at: Instant
    end_at: Instant
    attendees_forecast: Headcount
    setup_minutes: Minutes = 0
    teardown_minutes: Minutes = 0
    attendees_guaranteed: Headcount | None = None
    folio_id: uuid.UUID | None = None
    # the room block the event belongs to: the event's dates must lie inside the
    # block's, give or take BLOCK_SHOULDER_DAYS (pms.services.groups.banquets)
    block_id: uuid.UUID | None = None


class BanquetEventPatch(Strict):
    name: Name | UnsetType = UNSET
    space_id: uuid.UUID | UnsetType = UNSET
    setup_style: SetupStyle | UnsetType = UNSET
    start_at: Instant | UnsetType = UNSET
    end_at: Instant | UnsetType = UNSET
    setup_minutes: Minutes | UnsetType = UNSET
    teardown_minutes: Minutes | UnsetType = UNSET
    attendees_forecast: Headcount | UnsetType = UNSET
    attendees_guaranteed: Headcount | None | UnsetType = UNSET
    attendees_actual: Headcount | None | UnsetType = UNSET
    folio_id: uuid.UUID | None | UnsetType = UNSET
    block_id: uuid.UUID | None | UnsetType = UNSET


class BanquetEventQuery(ListQuery):
    """Filters: status, space, and the function diary's window: events whose time
    [start_at, end_at) overlaps [from_at, to_at) (either bound may be left out)."""

    status: Annotated[str, msgspec.Meta(max_length=16, pattern=r"^[A-Z]+$")] | None = None
    space_id: uuid.UUID | None = None
    from_at: Instant | None = None
    to_at: Instant | None = None


class SpaceSlotsQuery(msgspec.Struct, kw_only=True):
    """A function space's window [from_at, to_at), at most 31 days."""

    from_at: Instant
    to_at: Instant


class SpaceBusyOut(Out):
    start: datetime
    end: datetime
    event_id: uuid.UUID | None  # the event holding it; null for an out-of-order period
    space_id: uuid.UUID  # the element booked or out of order (the space or one of its parts)
    reason: str  # "event" or "out_of_order"


class SpaceSlotOut(Out):
    start: datetime
    end: datetime


class SpaceSlotsOut(Out):
    space_id: uuid.UUID
    from_at: datetime
    to_at: datetime
    busy: list[SpaceBusyOut]
    free: list[SpaceSlotOut]


class BanquetEventOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    space_id: uuid.UUID
    block_id: uuid.UUID | None
    folio_id: uuid.UUID | None
    name: str
    status: str
    setup_style: str
    start_at: datetime
    end_at: datetime
    setup_minutes: int
    teardown_minutes: int
    attendees_forecast: int
    attendees_guaranteed: int | None
    attendees_actual: int | None
    version: int
    created_at: datetime
    updated_at: datetime


class ResourceItemIn(Strict):
    """Equipment or a menu the property holds `stock` of; posted at `unit_price` by
    `transaction_code` (per attendee: times the event's actual attendees)."""

    code: Code
    name: Name
    kind: ResourceKind
    stock: Annotated[int, msgspec.Meta(ge=0, le=1000000)]
    unit_price: Amount
    transaction_code: Code
    per_attendee: bool = False


class ResourceItemPatch(Strict):
    name: Name | UnsetType = UNSET
    stock: Annotated[int, msgspec.Meta(ge=0, le=1000000)] | UnsetType = UNSET
    unit_price: Amount | UnsetType = UNSET


class ResourceItemOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    code: str
    name: str
    kind: str
    stock: int
    unit_price: Decimal
    transaction_code: str
    per_attendee: bool
    version: int


class EventResourceIn(Strict):
    """Book `quantity` of an item for the event's interval (setup and tear-down included); a
    second booking of the same item replaces the quantity."""

    item_id: uuid.UUID
    quantity: Quantity


class EventResourceQuery(Strict):
    """Which booking DELETE removes."""

    item_id: uuid.UUID


class EventResourceOut(Out):
    id: uuid.UUID
    event_id: uuid.UUID
    item_id: uuid.UUID
    code: str
    name: str
    kind: str
    quantity: int
    unit_price: Decimal
    per_attendee: bool


class EventResourceList(Out):
    data: list[EventResourceOut]


class EventPostingOut(Out):
    resource_id: uuid.UUID
    folio_id: uuid.UUID
    posted_quantity: int
    posted_amount: Decimal
    posted_now: Decimal


class EventPostResult(Out):
    event_id: uuid.UUID
    folio_id: uuid.UUID
    postings: list[EventPostingOut]
