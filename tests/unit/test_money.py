"""Money: quantized per currency's minor units, half-up."""

from decimal import Decimal

import pytest

from pms.domain.money import minor_units, quantize, zero


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
