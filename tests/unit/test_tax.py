"""Taxes per transaction code: inclusive/exclusive, percentage/per night, quantized per currency;
the net line plus the tax lines always add up to what the guest owes."""

from decimal import Decimal as D

import pytest

from pms.domain.tax import TaxRule, parse_rules, split_taxes
from pms.errors import ValidationFailed

VAT7_INCL = TaxRule("VAT7", "percentage", D("7"), inclusive=True)
VAT19_EXCL = TaxRule("VAT19", "percentage", D("19"))
CITY_TAX = TaxRule("CITY", "per_night", D("2.50"))
CITY_INCL = TaxRule("CITYI", "per_night", D("2.50"), inclusive=True)


def test_inclusive_percentage_is_taken_out_of_the_gross():
    split = split_taxes(D("107.00"), [VAT7_INCL], "EUR")
    assert split.net == D("100.00") and [t.amount for t in split.taxes] == [D("7.00")]
    assert split.total == D("107.00")


def test_exclusive_percentage_is_added_on_top():
    split = split_taxes(D("100"), [VAT19_EXCL], "EUR")
    assert split.net == D("100.00") and split.total == D("119.00")


def test_per_night_tax_counts_nights_exclusive_and_inclusive():
    assert split_taxes(D("100"), [CITY_TAX], "EUR", quantity=3).total == D("107.50")
    incl = split_taxes(D("100"), [CITY_INCL, VAT7_INCL], "EUR")
    assert incl.total == D("100.00") and incl.taxes[0].amount == D("2.50")


def test_rounding_never_loses_a_cent_with_several_inclusive_rates():
    rules = [TaxRule("A", "percentage", D("7"), True), TaxRule("B", "percentage", D("5.5"), True)]
    for cents in range(1, 2000, 37):
        gross = D(cents) / 100
        assert split_taxes(gross, rules, "EUR").total == gross


def test_currency_minor_units_apply():
    assert split_taxes(D("1070"), [VAT7_INCL], "JPY").net == D("1000")
    assert split_taxes(D("1.07"), [VAT7_INCL], "KWD").net == D("1.000")


def test_negative_amounts_reverse_their_taxes():
    split = split_taxes(D("-107.00"), [VAT7_INCL], "EUR")
    assert split.net == D("-100.00") and split.taxes[0].amount == D("-7.00")


def test_bad_rules_are_refused():
    with pytest.raises(ValidationFailed):
        parse_rules([{"code": "X", "kind": "weird", "rate": "1"}])
    with pytest.raises(ValidationFailed):
        parse_rules([{"code": "X", "kind": "percentage", "rate": "150"}])
