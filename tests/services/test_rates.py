"""quote_stay and the rates services at the service level (both backends)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import msgspec
import pytest

from pms.db.uow import unit_of_work
from pms.errors import ValidationFailed
from pms.schemas.rates import PromoCodeIn, RestrictionIn
from pms.services.inventory.inventory import take_rooms
from pms.services.rates import rates
from pms.services.rates.pricing import quote_stay
from tests.factories import make_hotel, make_package, make_property, make_rate_plan, make_room_type

pytestmark = pytest.mark.usefixtures("database")

ARR, DEP = date(2030, 1, 10), date(2030, 1, 12)


@pytest.fixture
def hotel(ctx):
    return make_hotel(ctx, rooms=1, amount="99.99")


def q(ctx, h, **over):
    args = dict(property=h.property, room_type=h.room_type, rate_plan=h.rate_plan, arrival=ARR,
                departure=DEP, adults=2)
    args.update(over)
    return quote_stay(ctx, **args)


def test_quote_stay_prices_each_night(ctx, hotel):
    quote = q(ctx, hotel)
    assert quote.bookable and quote.reasons == []
    assert [(n.date, n.amount) for n in quote.nights] == [
        (date(2030, 1, 10), Decimal("99.99")), (date(2030, 1, 11), Decimal("99.99"))]
    assert quote.total == Decimal("199.98") and quote.currency == "EUR" and quote.available == 1


def test_quote_stay_inside_the_callers_unit_of_work_sees_its_writes(ctx, hotel):
    with unit_of_work(ctx):
        take_rooms(hotel.property.id, hotel.room_type.id, [ARR])
        quote = q(ctx, hotel)
        assert not quote.bookable and [r.code for r in quote.reasons] == ["sold_out"]


def test_quote_stay_with_promo(ctx, hotel):
    rates.create_promo(ctx, hotel.property.id, msgspec.convert(
        {"code": "HALF", "discount_type": "PERCENT", "discount_value": "50"}, PromoCodeIn))
    quote = q(ctx, hotel, promo_code="half")
    assert quote.discount_total == Decimal("99.99") and quote.total == Decimal("99.99")
    assert quote.promo_code == "half"


def test_quote_stay_with_packages(ctx):
    h = make_hotel(ctx, rooms=1)
    pkg = make_package(ctx, h.property.id, price="7.50", calculation="PER_NIGHT")
    plan = make_rate_plan(ctx, h.property.id, package_codes=[pkg.code])
    from tests.factories import make_rates
    make_rates(ctx, h.property.id, plan.id, h.room_type.id, ARR, DEP, "50")
    quote = q(ctx, h, rate_plan=plan)
    assert quote.packages_total == Decimal("15.00") and quote.total == Decimal("115.00")


def test_quote_stay_restrictions(ctx, hotel):
    rates.set_restrictions(ctx, hotel.property.id, hotel.rate_plan.id, msgspec.convert(
        {"from_date": str(ARR), "to_date": str(ARR), "min_los": 3}, RestrictionIn))
    assert [r.code for r in q(ctx, hotel).reasons] == ["min_los"]


def test_property_wide_restriction_for_one_room_type_only(ctx, hotel):
    other = make_room_type(ctx, hotel.property.id)
    rates.set_restrictions(ctx, hotel.property.id, None, msgspec.convert(
        {"from_date": str(ARR), "to_date": str(ARR), "closed": True,
         "room_type_id": str(other.id)}, RestrictionIn))
    assert q(ctx, hotel).bookable


@pytest.mark.parametrize("over, field", [
    ({"departure": ARR}, "departure_date"),
    ({"departure": date(2030, 1, 1)}, "departure_date"),
    ({"adults": 0}, "adults"),
    ({"children": -1}, "children"),
])
def test_quote_stay_bad_input(ctx, hotel, over, field):
    with pytest.raises(ValidationFailed) as exc:
        q(ctx, hotel, **over)
    assert exc.value.extra["errors"][0]["field"] == field


def test_quote_stay_refuses_another_propertys_room_type_or_plan(ctx, hotel):
    other = make_property(ctx)
    with pytest.raises(ValidationFailed):
        q(ctx, hotel, room_type=make_room_type(ctx, other.id))
    with pytest.raises(ValidationFailed):
        q(ctx, hotel, rate_plan=make_rate_plan(ctx, other.id))


def test_quote_stay_over_occupancy(ctx, hotel):
    assert [r.code for r in q(ctx, hotel, adults=2, children=1).reasons] == ["over_occupancy"]


def test_quote_in_a_zero_decimal_currency(ctx):
    prop = make_property(ctx, currencyCode="JPY")
    rt = make_room_type(ctx, prop.id)
    from tests.factories import make_rates, make_room
    make_room(ctx, prop.id, rt.id)
    plan = make_rate_plan(ctx, prop.id)
    # (a JPY rate with decimals, "10000.6", is refused at write now: pms.domain.money.exact)
    make_rates(ctx, prop.id, plan.id, rt.id, ARR, ARR, "10001")
    quote = quote_stay(ctx, property=prop, room_type=rt, rate_plan=plan, arrival=ARR,
                       departure=date(2030, 1, 11), adults=1)
    assert str(quote.total) == "10001" and quote.currency == "JPY"
