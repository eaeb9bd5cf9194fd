"""Taxes per transaction code. Pure; no I/O.

A transaction code carries tax rules: each a percentage of the amount or a fixed amount per night
(per unit), either inclusive (already contained in the posted gross) or exclusive (added on top).
`split_taxes` turns one posting into its net charge line and its tax lines, so that a folio's
lines always add up to what the guest owes: for inclusive taxes the charge line is the net and
the tax lines the rest of the gross; for exclusive taxes the charge line is the amount and the tax
lines come on top. Every figure is quantized to the currency's minor units.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pms.domain.money import quantize
from pms.errors import ValidationFailed

PERCENTAGE, PER_NIGHT = "percentage", "per_night"


@dataclass(frozen=True)
class TaxRule:
    code: str
    kind: str  # percentage | per_night
    rate: Decimal  # percent (7 = 7 %) or an amount per night and unit
    inclusive: bool = False
    name: str = ""

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TaxRule:
        rule = cls(code=str(raw["code"]), kind=str(raw["kind"]), rate=Decimal(str(raw["rate"])),
                   inclusive=bool(raw.get("inclusive", False)), name=str(raw.get("name") or ""))
        rule.check()
        return rule

    def check(self) -> None:
        if self.kind not in (PERCENTAGE, PER_NIGHT):
            raise ValidationFailed(f"tax kind must be {PERCENTAGE} or {PER_NIGHT}")
        if self.rate < 0 or (self.kind == PERCENTAGE and self.rate >= 100):
            raise ValidationFailed("a tax rate is a percentage from 0 to 100 or a non-negative amount")


@dataclass(frozen=True)
class TaxLine:
    code: str
    name: str
    amount: Decimal


@dataclass(frozen=True)
class TaxSplit:
    """One posting split into its net charge line and tax lines: net + sum(taxes) = total."""

    net: Decimal
    taxes: tuple[TaxLine, ...]

    @property
    def total(self) -> Decimal:
        return self.net + sum((t.amount for t in self.taxes), Decimal("0"))


def split_taxes(amount: Decimal, rules: list[TaxRule], currency: str, *,
                quantity: int = 1) -> TaxSplit:
    """Split `amount` (the posted figure: gross for inclusive rules, net for exclusive ones).

    Inclusive percentages are taken out of the gross together (gross = net * (1 + sum of rates));
    inclusive per-night amounts are subtracted first. Negative amounts (reversals, allowances) are
    split like positive ones and come out negated, so a correction reverses its taxes too.
    """
    if amount < 0:
        positive = split_taxes(-amount, rules, currency, quantity=quantity)
        return TaxSplit(net=-positive.net, taxes=tuple(
            TaxLine(t.code, t.name, -t.amount) for t in positive.taxes))
    amount = quantize(amount, currency)
    incl_fixed = [r for r in rules if r.inclusive and r.kind == PER_NIGHT]
    incl_pct = [r for r in rules if r.inclusive and r.kind == PERCENTAGE]
    excl = [r for r in rules if not r.inclusive]
    lines: list[TaxLine] = []
    remaining = amount
    for rule in incl_fixed:
        tax = min(quantize(rule.rate * quantity, currency), remaining)
        lines.append(TaxLine(rule.code, rule.name, tax))
        remaining -= tax
    pct_total = sum((r.rate for r in incl_pct), Decimal("0"))
    net = quantize(remaining * 100 / (100 + pct_total), currency) if incl_pct else remaining
    taken = Decimal("0")
    for i, rule in enumerate(incl_pct):
        if i == len(incl_pct) - 1:
            tax = remaining - net - taken  # the last rule takes the rounding remainder
        else:
            tax = quantize(net * rule.rate / 100, currency)
        taken += tax
        lines.append(TaxLine(rule.code, rule.name, tax))
    for rule in excl:
        if rule.kind == PERCENTAGE:
            tax = quantize(net * rule.rate / 100, currency)
        else:
            tax = quantize(rule.rate * quantity, currency)
        lines.append(TaxLine(rule.code, rule.name, tax))
    return TaxSplit(net=net, taxes=tuple(t for t in lines if t.amount != 0))


def parse_rules(raw: list[dict[str, Any]] | None) -> list[TaxRule]:
    return [TaxRule.from_dict(r) for r in (raw or [])]
