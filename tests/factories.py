"""Plain factory functions with sensible defaults; they go through the services (and so write
outbox and audit rows like any other change)."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import msgspec

from pms.context import Ctx
from pms.schemas import catalog as s
from pms.schemas.profiles import ProfileIn
from pms.services.catalog import catalog
from pms.services.profiles import profiles
from tests.helpers import random_ref


def make_property(ctx: Ctx, **over: Any) -> Any:
    body = {"propertyCode": random_ref("P").upper(), "timezone": "Europe/Berlin",
            "currencyCode": "EUR", "name": "Hotel Test", "languages": ["en", "de"]}
    body.update(over)
    return catalog.create_property(ctx, msgspec.convert(body, s.PropertyIn))


def make_room_type(ctx: Ctx, property_id: uuid.UUID, **over: Any) -> Any:
    body = {"code": random_ref("RT"), "name": "Double", "max_occupancy": 2}
    body.update(over)
    return catalog.create_child(ctx, catalog.ROOM_TYPE, property_id, msgspec.convert(body, s.RoomTypeIn))


def make_room(ctx: Ctx, property_id: uuid.UUID, room_type_id: uuid.UUID, **over: Any) -> Any:
    body = {"room_number": random_ref("R")[-6:], "room_type_id": str(room_type_id)}
    body.update(over)
    return catalog.create_child(ctx, catalog.ROOM, property_id, msgspec.convert(body, s.RoomIn))


def make_rate_plan(ctx: Ctx, property_id: uuid.UUID, **over: Any) -> Any:
    body = {"code": random_ref("BAR"), "name": "Best available"}
    body.update(over)
    return catalog.create_child(ctx, catalog.RATE_PLAN, property_id, msgspec.convert(body, s.RatePlanIn))


def make_item(ctx: Ctx, property_id: uuid.UUID, **over: Any) -> Any:
    body = {"code": random_ref("IT"), "name": "Water", "category": "mini bar", "price": "3.50"}
    body.update(over)
    return catalog.create_child(ctx, catalog.ITEM, property_id, msgspec.convert(body, s.ItemIn))


def make_package(ctx: Ctx, property_id: uuid.UUID, **over: Any) -> Any:
    body = {"code": random_ref("PK"), "name": "Breakfast", "price": str(Decimal("15.00")),
            "calculation": "PER_PERSON_PER_NIGHT"}
    body.update(over)
    return catalog.create_child(ctx, catalog.PACKAGE, property_id, msgspec.convert(body, s.PackageIn))


def make_profile(ctx: Ctx, property_id: uuid.UUID, **over: Any) -> Any:
    body = {"first_name": "Ada", "last_name": "Lovelace", "email": f"{random_ref('g')}@example.com"}
    body.update(over)
    row, _ = profiles.ensure_profile(ctx, property_id, msgspec.convert(body, ProfileIn))
    return row


# -- reservations and front desk -------------------------------------------------------

class Hotel:
    """A property with one room type, its rooms and a rate plan with rates loaded."""

    def __init__(self, prop: Any, room_type: Any, rooms: list[Any], rate_plan: Any,
                 today: Any) -> None:
        self.prop, self.room_type, self.rooms, self.rate_plan = prop, room_type, rooms, rate_plan
        self.today = today

    @property
    def id(self) -> uuid.UUID:
        return self.prop.id


def load_rates(ctx: Ctx, property_id: uuid.UUID, rate_plan_id: uuid.UUID, room_type_id: uuid.UUID,
               *, amount: str = "100.00", days: int = 60, start: Any = None) -> None:
    from datetime import timedelta

    from pms.schemas.rates import RatesIn
    from pms.services.rates import rates

    start = start or ctx.now.date() - timedelta(days=2)
    body = {"rates": [{"room_type_id": str(room_type_id), "from_date": start.isoformat(),
                       "to_date": (start + timedelta(days=days)).isoformat(), "amount": amount}]}
    rates.set_rates(ctx, property_id, rate_plan_id, msgspec.convert(body, RatesIn))


def make_booking_hotel(ctx: Ctx, *, rooms: int = 3, amount: str = "100.00", max_occupancy: int = 2,
               rate_plan: dict[str, Any] | None = None, **prop_over: Any) -> Hotel:
    from pms.services.reservations.reservations import business_date

    prop = make_property(ctx, **prop_over)
    room_type = make_room_type(ctx, prop.id, max_occupancy=max_occupancy)
    made = [make_room(ctx, prop.id, room_type.id, room_number=f"{100 + i}") for i in range(rooms)]
    plan = make_rate_plan(ctx, prop.id, **(rate_plan or {}))
    load_rates(ctx, prop.id, plan.id, room_type.id, amount=amount)
    return Hotel(prop, room_type, made, plan, business_date(prop, ctx.now))


def reservation_body(hotel: Hotel, **over: Any) -> dict[str, Any]:
    from datetime import timedelta

    body: dict[str, Any] = {
        "room_type_id": str(hotel.room_type.id), "rate_plan_id": str(hotel.rate_plan.id),
        "arrival_date": hotel.today.isoformat(),
        "departure_date": (hotel.today + timedelta(days=2)).isoformat(),
        "adults": 2, "guest": {"first_name": "Ada", "last_name": "Lovelace"},
    }
    body.update(over)
    return body


def make_reservation(ctx: Ctx, hotel: Hotel, **over: Any) -> Any:
    from pms.schemas.reservations import ReservationIn
    from pms.services.reservations import reservations

    row, _ = reservations.create_reservation(
        ctx, hotel.id, msgspec.convert(reservation_body(hotel, **over), ReservationIn))
    return row


def make_checked_in(ctx: Ctx, hotel: Hotel, *, room_number: str | None = None, **over: Any) -> Any:
    from pms.schemas.reservations import CheckInIn
    from pms.services.frontdesk import checkin

    row = make_reservation(ctx, hotel, **over)
    return checkin.check_in(ctx, hotel.id, row.id, CheckInIn(room_number=room_number))


def make_fb_stay(ctx: Ctx) -> tuple[Hotel, Any, Any]:
    """A one-room hotel with an F&B transaction code (FB) and a checked-in guest: (hotel,
    reservation, guest folio)."""
    from pms.db.uow import read_scope
    from pms.models import Folio
    from pms.schemas.cashiering import TransactionCodeIn
    from pms.services.cashiering.transaction_codes import TRANSACTION_CODE

    hotel = make_booking_hotel(ctx, rooms=1)
    catalog.create_child(ctx, TRANSACTION_CODE, hotel.id, msgspec.convert(
        {"code": "FB", "name": "F&B", "category": "F&B"}, TransactionCodeIn))
    res = make_checked_in(ctx, hotel)
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == res.id)
    return hotel, res, folio


def pay_folio(ctx: Ctx, reservation: Any, amount: Any) -> Any:
    """Record a captured payment directly (without the cashiering routes)."""
    from pms.db.uow import unit_of_work
    from pms.models import FolioPayment
    from pms.services.cashiering.folios import guest_folio

    with unit_of_work(ctx):
        folio = guest_folio(reservation)
        return FolioPayment.create(folio=folio.id, amount=Decimal(str(amount)),
                                   currency=folio.currency, method="CARD",
                                   payment_method_id="pm_test", status="CAPTURED")


# -- rates and inventory (engineer A) -------------------------------------------------------------

def make_rates(ctx: Ctx, property_id: uuid.UUID, rate_plan_id: uuid.UUID, room_type_id: uuid.UUID,
               from_date: Any, to_date: Any, amount: str = "100.00") -> Any:
    """Load one nightly amount for from_date..to_date (inclusive) through the rates service."""
    from pms.schemas.rates import RatesIn
    from pms.services.rates import rates

    body = msgspec.convert({"rates": [{"room_type_id": str(room_type_id), "from_date": str(from_date),
                                       "to_date": str(to_date), "amount": amount}]}, RatesIn)
    return rates.set_rates(ctx, property_id, rate_plan_id, body)


def make_hotel(ctx: Ctx, *, rooms: int = 2, amount: str = "100.00", from_date: Any = None,
               days: int = 30, max_occupancy: int = 2, **plan: Any) -> Any:
    """A property with one room type of `rooms` rooms and one rate plan priced for `days` nights
    from `from_date` (default: 2030-01-01). Returns a namespace (property, room_type, rate_plan,
    rooms)."""
    from datetime import date, timedelta
    from types import SimpleNamespace

    start = from_date or date(2030, 1, 1)
    # bookings from 2030 lie beyond the default 550-day horizon: the longest one
    prop = make_property(ctx, bookingHorizonDays=3660)
    room_type = make_room_type(ctx, prop.id, max_occupancy=max_occupancy)
    room_rows = [make_room(ctx, prop.id, room_type.id) for _ in range(rooms)]
    rate_plan = make_rate_plan(ctx, prop.id, **plan)
    make_rates(ctx, prop.id, rate_plan.id, room_type.id, start, start + timedelta(days=days - 1),
               amount)
    return SimpleNamespace(property=prop, room_type=room_type, rate_plan=rate_plan,
                           rooms=room_rows, start=start)
