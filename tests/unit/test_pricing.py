"""Pricing a stay (pure): nightly rates, restrictions, packages, promo codes, occupancy."""

import uuid
from datetime import date, timedelta
from decimal import Decimal

import pytest

from pms.domain.pricing import (
    OPEN,
    PackageLine,
    Promo,
    Rule,
    merge_rules,
    package_amount,
    price_stay,
)

ARR = date(2030, 3, 1)
NIGHTS = [ARR + timedelta(days=i) for i in range(3)]
DEP = ARR + timedelta(days=3)
PLAN = uuid.uuid4()


def quote(**over):
    args = dict(nights=NIGHTS, departure=DEP, currency="EUR",
                rates={n: Decimal("100") for n in NIGHTS}, rules={}, adults=2, children=0,
                max_occupancy=2, rate_plan_id=PLAN)
    args.update(over)
    return price_stay(**args)


def codes(q):
    return [(r.code, r.date) for r in q.reasons]


def test_open_stay_is_bookable_with_nightly_prices():
    q = quote()
    assert q.bookable and q.reasons == []
    assert [str(n.amount) for n in q.nights] == ["100.00"] * 3
    assert str(q.total) == "300.00" and q.currency == "EUR"


def test_nightly_amounts_are_quantized_before_summing():
    q = quote(rates={n: Decimal("33.335") for n in NIGHTS})
    assert str(q.room_total) == "100.02"


def test_missing_rate_night_is_no_rate():
    rates = {NIGHTS[0]: Decimal(1), NIGHTS[2]: Decimal(1)}
    assert codes(quote(rates=rates)) == [("no_rate", NIGHTS[1])]


def test_closed_night_anywhere_in_the_stay():
    assert codes(quote(rules={NIGHTS[1]: Rule(closed=True)})) == [("closed", NIGHTS[1])]


def test_closed_on_departure_date_does_not_matter():
    assert quote(rules={DEP: Rule(closed=True)}).bookable


def test_closed_to_arrival_only_on_the_arrival_date():
    assert codes(quote(rules={ARR: Rule(closed_to_arrival=True)})) == [("closed_to_arrival", ARR)]
    assert quote(rules={NIGHTS[1]: Rule(closed_to_arrival=True)}).bookable


def test_closed_to_departure_only_on_the_departure_date():
    assert codes(quote(rules={DEP: Rule(closed_to_departure=True)})) == [("closed_to_departure", DEP)]
    assert quote(rules={NIGHTS[2]: Rule(closed_to_departure=True)}).bookable


@pytest.mark.parametrize("rule, ok", [
    (Rule(min_los=3), True), (Rule(min_los=4), False),
    (Rule(max_los=3), True), (Rule(max_los=2), False),
])
def test_length_of_stay_counted_from_arrival(rule, ok):
    assert quote(rules={ARR: rule}).bookable is ok
    assert quote(rules={NIGHTS[1]: rule}).bookable   # not the arrival date: no effect


def test_over_occupancy():
    assert codes(quote(adults=2, children=1)) == [("over_occupancy", None)]
    assert quote(adults=1, children=1).bookable


def test_sold_out_nights_and_available():
    sellable = {NIGHTS[0]: 2, NIGHTS[1]: 0, NIGHTS[2]: 1}
    q = quote(sellable=sellable)
    assert codes(q) == [("sold_out", NIGHTS[1])] and q.available == 0
    assert quote(sellable={n: 3 for n in NIGHTS}).available == 3


def test_inactive_plan_is_not_bookable():
    assert codes(quote(active=False)) == [("rate_plan_inactive", None)]


@pytest.mark.parametrize("calculation, expected", [
    ("PER_STAY", "10"), ("PER_NIGHT", "30"), ("PER_PERSON", "20"), ("PER_PERSON_PER_NIGHT", "60"),
])
def test_package_calculations(calculation, expected):
    pkg = PackageLine("P", calculation, Decimal("10"), "EUR")
    assert package_amount(pkg, nights=3, persons=2) == Decimal(expected)
    q = quote(packages=[pkg])
    assert q.packages_total == Decimal(expected) and q.total == Decimal(300) + Decimal(expected)


def test_package_in_another_currency_is_a_reason():
    q = quote(packages=[PackageLine("P", "PER_STAY", Decimal("10"), "USD")])
    assert [r.code for r in q.reasons] == ["package_currency_mismatch"]


def test_unknown_package_calculation_raises():
    with pytest.raises(ValueError):
        package_amount(PackageLine("P", "PER_MOON", Decimal(1), "EUR"), nights=1, persons=1)


def promo(**over):
    args = dict(code="P", discount_type="PERCENT", value=Decimal("10"), currency=None,
                valid_from=None, valid_to=None, min_nights=None, rate_plan_ids=frozenset(),
                active=True)
    args.update(over)
    return Promo(**args)


def test_percent_promo_discounts_the_room_total_only():
    q = quote(promo=promo(), promo_code="P", packages=[PackageLine("B", "PER_STAY", Decimal(50), "EUR")])
    assert q.discount_total == Decimal("30.00") and q.total == Decimal("320.00")


def test_fixed_promo_is_capped_at_the_room_total():
    q = quote(promo=promo(discount_type="FIXED", value=Decimal(500), currency="EUR"), promo_code="P")
    assert q.discount_total == Decimal("300.00") and q.total == Decimal("0.00")


@pytest.mark.parametrize("over, code", [
    ({"active": False}, "promo_invalid"),
    ({"valid_from": ARR + timedelta(days=1)}, "promo_not_yet_valid"),
    ({"valid_to": ARR - timedelta(days=1)}, "promo_expired"),
    ({"min_nights": 4}, "promo_min_nights"),
    ({"rate_plan_ids": frozenset({uuid.uuid4()})}, "promo_not_applicable"),
    ({"discount_type": "FIXED", "currency": "USD", "value": Decimal(5)}, "promo_not_applicable"),
])
def test_unusable_promo_makes_the_quote_unbookable(over, code):
    q = quote(promo=promo(**over), promo_code="P")
    assert [r.code for r in q.reasons] == [code] and q.discount_total == 0


def test_unknown_promo_code():
    assert [r.code for r in quote(promo=None, promo_code="NOPE").reasons] == ["promo_invalid"]


def test_promo_valid_on_its_boundaries():
    assert quote(promo=promo(valid_from=ARR, valid_to=ARR), promo_code="P").bookable


def test_merge_rules_takes_the_strictest():
    merged = merge_rules([Rule(min_los=2, max_los=7), Rule(min_los=3, max_los=5, closed=True),
                          Rule(closed_to_arrival=True)])
    assert merged == Rule(closed=True, closed_to_arrival=True, min_los=3, max_los=5)
    assert merge_rules([]) == OPEN


def test_every_reason_is_reported_not_just_the_first():
    q = quote(adults=3, rates={}, rules={ARR: Rule(closed_to_arrival=True, min_los=5)})
    assert {r.code for r in q.reasons} == {"over_occupancy", "closed_to_arrival", "min_los", "no_rate"}
