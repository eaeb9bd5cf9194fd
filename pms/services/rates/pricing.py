"""Quoting a stay: one room type under one rate plan, priced night by night.

`quote_for` is the one calculation behind the quote, the availability searches and the promo
validation; `quote_stay` is the entry point the reservation services call (inside their unit of
work or outside it). Nothing here writes.
"""

from __future__ import annotations

from datetime import date

from pms.context import Ctx
from pms.db.uow import read_scope
from pms.domain.pricing import Quote, price_nights
from pms.domain.stay import stay_nights
from pms.errors import ValidationFailed
from pms.models.catalog import RatePlan
from pms.models.property import Property, RoomType
from pms.queries.availability import SearchData, load_search_data
from pms.queries.catalog import RatePlanRow, RoomTypeRow


def check_occupancy(adults: int, children: int) -> None:
    """Raises ValidationFailed unless 1 <= adults and 0 <= children."""
    if adults < 1:
        raise ValidationFailed("a stay needs at least one adult",
                               errors=[{"field": "adults", "message": "must be >= 1"}])
    if children < 0:
        raise ValidationFailed("children cannot be negative",
                               errors=[{"field": "children", "message": "must be >= 0"}])


def quote_for(data: SearchData, room_type: RoomType | RoomTypeRow,
              rate_plan: RatePlan | RatePlanRow, *, adults: int, children: int,
              promo_code: str | None = None) -> Quote:
    """Price one (room type, rate plan) from batch-loaded data (models or catalog rows)."""
    return price_nights(
        nights=data.nights, departure=data.departure, currency=rate_plan.currency,
        amounts=data.rates_for(rate_plan.id, room_type.id),
        rules=data.rules_for(rate_plan.id, room_type.id),
        adults=adults, children=children, max_occupancy=room_type.max_occupancy,
        packages=data.packages_for(rate_plan),
        sellable=data.sellable_for(room_type.id, rate_plan.id),
        allotment=data.allotment_for(rate_plan.id, room_type.id),
        promo=data.promo, promo_code=promo_code, rate_plan_id=rate_plan.id,
        active=bool(rate_plan.active), memo=data.memo)


def quote_stay(ctx: Ctx, *, property: Property, room_type: RoomType, rate_plan: RatePlan,
               arrival: date, departure: date, adults: int, children: int = 0,
               promo_code: str | None = None, check_inventory: bool = True) -> Quote:
    """Price a stay and say whether it can be booked, with every reason it cannot.

    Works inside the caller's unit of work (it reads what that transaction sees) or on its own.
    The sold-out check here is informational; `take_rooms` decides under the lock.

    Args:
        property, room_type, rate_plan: models of the same property (checked).
        arrival, departure: stay dates; the nights are [arrival, departure).
        adults, children: occupancy (adults >= 1).
        promo_code: optional; an unusable code makes the quote unbookable with a promo_* reason.
        check_inventory: False when the caller sells the nights under a lock right after
            (a booking): the quote then prices without reading the inventory counts.
    Raises:
        ValidationFailed: departure not after arrival, bad occupancy, or a room type / rate plan
            of another property.
    """
    nights = stay_nights(arrival, departure)
    check_occupancy(adults, children)
    if room_type.property_id != property.id:
        raise ValidationFailed("room_type_id is not a room type of this property",
                               errors=[{"field": "room_type_id", "message": "unknown room type"}])
    if rate_plan.property_id != property.id:
        raise ValidationFailed("rate_plan_id is not a rate plan of this property",
                               errors=[{"field": "rate_plan_id", "message": "unknown rate plan"}])
    with read_scope(ctx):
        data = load_search_data(property.id, [room_type], [rate_plan], arrival, departure,
                                nights, promo_code=promo_code, with_counts=check_inventory)
    return quote_for(data, room_type, rate_plan, adults=adults, children=children,
                     promo_code=promo_code)
