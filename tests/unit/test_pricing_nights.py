"""`price_nights` (the search's pricing over lists aligned with the nights, with a per-search memo)
prices exactly as `price_stay` (the mapping form quotes use), whatever the memo has seen."""

from __future__ import annotations

import random
import uuid
from datetime import date, timedelta
from decimal import Decimal

from pms.domain.pricing import PackageLine, PriceMemo, Promo, Rule, price_nights, price_stay

ARR = date(2030, 6, 1)


def _case(rnd: random.Random, count: int) -> dict:
    start = ARR + timedelta(days=rnd.randint(0, 2))
    nights = [start + timedelta(days=i) for i in range(count)]
    amounts = [None if rnd.random() < 0.1 else Decimal(rnd.choice(["99.995", "100", "120.5"]))
               for _ in nights]
    rules = {}
    if rnd.random() < 0.3:
        rules[rnd.choice(nights)] = Rule(closed=True)
    if rnd.random() < 0.3:
        rules[ARR] = Rule(min_los=rnd.randint(1, 4), closed_to_arrival=rnd.random() < 0.5)
    sellable = None if rnd.random() < 0.2 else [rnd.choice([0, 1, 3, -1]) if rnd.random() < 0.2
                                                 else 2 for _ in nights]
    return {"nights": nights, "amounts": amounts, "rules": rules, "sellable": sellable,
            "currency": rnd.choice(["EUR", "JPY"]), "adults": rnd.randint(1, 3),
            "children": rnd.randint(0, 1)}


def test_price_nights_prices_as_price_stay_with_or_without_a_shared_memo():
    rnd = random.Random(7)
    memo = PriceMemo()
    promo = Promo(code="P", discount_type="PERCENT", value=Decimal(10), currency=None,
                  valid_from=None, valid_to=None, min_nights=None, rate_plan_ids=frozenset(),
                  active=True)
    packages = [PackageLine("B", "PER_PERSON_PER_NIGHT", Decimal("7.50"), "EUR")]
    for _ in range(300):
        c = _case(rnd, rnd.randint(1, 8))
        common = {"departure": c["nights"][-1] + timedelta(days=1), "currency": c["currency"],
                  "rules": c["rules"], "adults": c["adults"], "children": c["children"],
                  "max_occupancy": 3, "packages": packages, "promo": promo,
                  "promo_code": "P" if rnd.random() < 0.5 else None,
                  "rate_plan_id": uuid.UUID(int=1)}
        rates = {n: a for n, a in zip(c["nights"], c["amounts"], strict=True) if a is not None}
        sellable = (None if c["sellable"] is None
                    else dict(zip(c["nights"], c["sellable"], strict=True)))
        want = price_stay(nights=c["nights"], rates=rates, sellable=sellable, **common)
        alone = price_nights(nights=c["nights"], amounts=c["amounts"], sellable=c["sellable"],
                             **common)
        shared = price_nights(nights=c["nights"], amounts=c["amounts"], sellable=c["sellable"],
                              memo=memo, **common)
        assert alone == want and shared == want


def test_offers_sharing_a_memo_do_not_share_their_night_lists():
    memo = PriceMemo()
    nights = [ARR, ARR + timedelta(days=1)]
    args = {"nights": nights, "departure": ARR + timedelta(days=2), "currency": "EUR",
            "amounts": [Decimal(100), Decimal(100)], "rules": {}, "adults": 2, "children": 0,
            "max_occupancy": 2, "sellable": [1, 1], "memo": memo}
    first, second = price_nights(**args), price_nights(**args)
    first.nights.clear()
    assert [n.amount for n in second.nights] == [Decimal("100.00")] * 2
    assert second.room_total == Decimal("200.00") and second.available == 1
