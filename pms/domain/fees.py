"""Cancellation and no-show fees from a rate plan's policy. Pure; no I/O.

A policy is `{"fee_type": NONE|FIRST_NIGHT|PERCENT|FIXED, "fee_value": "...", "deadline_hours": n}`.
A cancellation is free until `deadline_hours` before the arrival day starts (00:00 at the
property); after that the fee applies. A fee never exceeds the stay's total.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from pms.domain.money import quantize, zero


def policy_fee(policy: dict[str, Any] | None, nightly_prices: list[dict[str, Any]] | None,
               total: Decimal, currency: str) -> Decimal:
    """The fee a policy charges (NONE, FIRST_NIGHT, PERCENT of the total, FIXED), capped at the
    total and never negative."""
    policy = policy or {}
    kind = policy.get("fee_type", "NONE")
    value = Decimal(str(policy.get("fee_value") or 0))
    total = Decimal(str(total))
    if kind == "FIRST_NIGHT":
        fee = Decimal(str(nightly_prices[0]["amount"])) if nightly_prices else Decimal(0)
    elif kind == "PERCENT":
        fee = total * value / Decimal(100)
    elif kind == "FIXED":
        fee = value
    else:
        fee = Decimal(0)
    return quantize(min(max(fee, Decimal(0)), total), currency)


def cancellation_fee(policy: dict[str, Any] | None, nightly_prices: list[dict[str, Any]] | None,
                     total: Decimal, currency: str, *, arrival: date, timezone: str,
                     now: datetime) -> Decimal:
    """The fee for cancelling at `now`: zero before the deadline, the policy fee after it."""
    hours = int((policy or {}).get("deadline_hours") or 0)
    arrival_start = datetime.combine(arrival, time(0), ZoneInfo(timezone))
    if now < arrival_start - timedelta(hours=hours):
        return zero(currency)
    return policy_fee(policy, nightly_prices, total, currency)
