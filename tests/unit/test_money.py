"""Money: quantized per currency's minor units, half-up; the one parser of client amounts; exact
currency scale before quantizing; the form sent to other services."""

from decimal import Decimal

import pytest

from pms.domain.money import (
    MoneyFormError,
    exact,
    minor_units,
    parse_money,
    quantize,
    to_wire,
    zero,
)
from pms.errors import ValidationFailed


@pytest.mark.parametrize("currency, amount, expected", [
    ("EUR", "10.005", "10.01"),
    ("EUR", "10.004", "10.00"),
    ("EUR", "-10.005", "-10.01"),
    ("JPY", "1234.5", "1235"),
    ("JPY", "1234.4", "1234"),
    ("KWD", "1.0005", "1.001"),
    ("BHD", "2", "2.000"),
    ("usd", "3.1", "3.10"),
])
def test_quantize_rounds_half_up_to_minor_units(currency, amount, expected):
    assert str(quantize(Decimal(amount), currency)) == expected


def test_minor_units_default_is_two():
    assert minor_units("EUR") == 2 and minor_units("XXX") == 2
    assert minor_units("JPY") == 0 and minor_units("KWD") == 3


def test_zero_renders_in_minor_units():
    assert str(zero("EUR")) == "0.00" and str(zero("JPY")) == "0" and str(zero("KWD")) == "0.000"


def test_quantize_accepts_ints():
    assert quantize(5, "EUR") == Decimal("5.00")


# -- the one money parser (CONTRACT §3: a decimal string) -----------------------------------------

@pytest.mark.parametrize("raw, expected", [("129.00", "129.00"), ("5", "5"), ("0.5", "0.5"),
                                           ("99999999.9999", "99999999.9999")])
def test_money_parser_reads_plain_decimal_strings(raw, expected):
    assert str(parse_money(raw)) == expected


@pytest.mark.parametrize("raw", [
    "1_000", " 1.00", "1.00 ", "1.00\n", "+1.00", "-1.00", "1.", ".5", "1,00", "Infinity", "NaN",
    "sNaN", "-Infinity", "1E+400", "1e30", "123456789", "1.00001", "", "١٢٣", "１２３",
    1.5, 10, 0, None, True, Decimal("1.00"),
])
def test_money_parser_refuses_anything_but_a_plain_decimal_string(raw):
    with pytest.raises(MoneyFormError):
        parse_money(raw)


def test_money_parser_signed_accepts_a_minus_only_when_asked():
    assert parse_money("-12.50", signed=True) == Decimal("-12.50")
    with pytest.raises(MoneyFormError):
        parse_money("-12.50")


@pytest.mark.parametrize("currency, raw", [("EUR", "0.004"), ("EUR", "10.001"), ("JPY", "1.5"),
                                           ("KWD", "1.0005")])
def test_amount_with_more_places_than_the_currency_is_refused_not_rounded(currency, raw):
    with pytest.raises(ValidationFailed) as caught:
        exact(Decimal(raw), currency, "amount")
    assert caught.value.extra["errors"][0]["field"] == "amount"


@pytest.mark.parametrize("currency, raw, expected", [("EUR", "80", "80.00"),
                                                     ("EUR", "80.0000", "80.00"),
                                                     ("JPY", "12000.00", "12000"),
                                                     ("KWD", "1.5", "1.500")])
def test_exact_amounts_are_quantized_to_the_currency(currency, raw, expected):
    assert str(exact(Decimal(raw), currency)) == expected


def test_outbound_amounts_are_sent_at_the_currency_scale():
    assert to_wire(Decimal("80.0000"), "EUR") == "80.00"
    assert to_wire(Decimal("80.0000"), "JPY") == "80"
    with pytest.raises(ValueError):
        to_wire(Decimal("80.005"), "EUR")  # a bug upstream: never rounded silently
