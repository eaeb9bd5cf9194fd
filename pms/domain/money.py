"""Money: Decimal amounts quantized to each currency's minor units, the one parser of amounts as
clients write them (`parse_money`), the check that an amount fits its currency without rounding
(`exact`) and the form sent to other services (`to_wire`). Pure; no I/O."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

from pms.errors import ValidationFailed

# ISO 4217 minor units that differ from the usual 2.
ZERO_DECIMAL = frozenset({"BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF",
                          "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF"})
THREE_DECIMAL = frozenset({"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"})


def minor_units(currency: str) -> int:
    """Digits after the decimal point for `currency` (JPY 0, KWD/BHD 3, default 2)."""
    code = currency.upper()
    if code in ZERO_DECIMAL:
        return 0
    if code in THREE_DECIMAL:
        return 3
    return 2


_EXPONENTS: dict[str, Decimal] = {}


def exponent(currency: str) -> Decimal:
    """The quantum of `currency` (Decimal("0.01") for EUR), computed once per code."""
    found = _EXPONENTS.get(currency)
    if found is None:
        found = _EXPONENTS[currency] = Decimal(1).scaleb(-minor_units(currency))
    return found


def quantize(amount: Decimal, currency: str) -> Decimal:
    """`amount` rounded half-up to the minor units of `currency`."""
    if not isinstance(amount, Decimal):
        amount = Decimal(amount)
    return amount.quantize(exponent(currency), rounding=ROUND_HALF_UP)


def zero(currency: str) -> Decimal:
    """Zero in the minor units of `currency` (renders as "0.00", "0", "0.000")."""
    return quantize(Decimal(0), currency)


# -- amounts as clients write them (CONTRACT §3: money is a decimal string) ---------------------

# The largest amount a request may carry (a unit price, a nightly rate, a payment, a voucher):
# eight integer digits and four places, so that a total of many nights or lines still fits the
# NUMERIC(14, 4) columns. Four places are the most any field keeps (a rate's fourth place); the
# currency's own minor units are checked where the currency is known (`exact`).
MAX_INTEGER_DIGITS = 8
MAX_PLACES = 4
MONEY_PATTERN = rf"^[0-9]{{1,{MAX_INTEGER_DIGITS}}}(\.[0-9]{{1,{MAX_PLACES}}})?$"
SIGNED_MONEY_PATTERN = rf"^-?[0-9]{{1,{MAX_INTEGER_DIGITS}}}(\.[0-9]{{1,{MAX_PLACES}}})?$"
_MONEY = re.compile(MONEY_PATTERN)
_SIGNED_MONEY = re.compile(SIGNED_MONEY_PATTERN)


class MoneyFormError(ValueError):
    """A value that is not a plain decimal string within the limits above."""


def parse_money(raw: object, *, signed: bool = False) -> Decimal:
    """The one parser of money written by a client: a JSON string of plain decimal digits
    ("129.00", "5", "0.5"), at most MAX_INTEGER_DIGITS before the point and MAX_PLACES after.

    Refused (MoneyFormError): JSON numbers (129.0, 1e30: binary floats are not money), blanks
    (" 1.00"), underscores ("1_000"), exponents ("1E+400"), "Infinity" and "NaN", signs (unless
    `signed`), and anything longer.
    """
    if not isinstance(raw, str):
        raise MoneyFormError('must be a decimal string such as "129.00", not a JSON number')
    if not (_SIGNED_MONEY if signed else _MONEY).fullmatch(raw):
        raise MoneyFormError(
            f'must be a decimal string such as "129.00" ({"" if signed else "not negative, "}'
            f"at most {MAX_INTEGER_DIGITS} digits before the point and {MAX_PLACES} after)")
    return Decimal(raw)


def exact(amount: Decimal, currency: str, field: str = "amount") -> Decimal:
    """`amount` at the scale of `currency`, refused when that would round it: "0.004" is no
    EUR amount (checked BEFORE quantizing, so nothing is captured as 0.00).

    Raises:
        ValidationFailed: not finite, or more places than the currency's minor units.
    """
    if not isinstance(amount, Decimal):
        amount = Decimal(str(amount))
    places = minor_units(currency)
    if not amount.is_finite() or amount.quantize(exponent(currency)) != amount:
        raise ValidationFailed(
            f"{field} has more decimal places than {currency} allows ({places})",
            errors=[{"field": field, "message": f"at most {places} decimal places in {currency}"}])
    return quantize(amount, currency)


def to_wire(amount: Decimal, currency: str) -> str:
    """`amount` as the decimal string sent to another service, at the currency's scale
    ("80.00", never "80.0000"). An amount that would need rounding is a bug, not a value to
    send: ValueError."""
    quantized = quantize(amount, currency)
    if quantized != amount:
        raise ValueError(f"{amount} is not an exact {currency} amount")
    return str(quantized)
