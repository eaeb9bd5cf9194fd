"""Money arithmetic: Decimal amounts quantized to each currency's minor units. Pure; no I/O."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

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
