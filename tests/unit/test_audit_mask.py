"""The audit journal's masking (pms.db.uow.mask): one pass, same rule as a deepcopy + walk."""

from __future__ import annotations

import copy
import random
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from pms.db import uow
from pms.db.uow import MASKED_KEY_PARTS, mask, masked_key


def reference_mask(data: Any) -> Any:
    """The rule as it was written first: deep-copy, then mask every key that contains a part."""
    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: "***" if any(p in str(k).lower() for p in MASKED_KEY_PARTS) else walk(v)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value
    return None if data is None else walk(copy.deepcopy(data))


KEYS = ["name", "Client_Secret", "TOKEN", "passwordHash", "card_last4", "CVC", "cvv2", "Pan",
        "company", "span", "ok", "nested", "items", "amount", "tokens", 1, 2.5, True, None,
        "Ｐassword", "ＣARD"]


def random_doc(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.random()
    if depth < 4 and pick < 0.35:
        return {rng.choice(KEYS): random_doc(rng, depth + 1) for _ in range(rng.randint(0, 6))}
    if depth < 4 and pick < 0.5:
        return [random_doc(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return rng.choice(["x", 3, 2.5, None, True, Decimal("1.10"), uuid.UUID(int=7),
                       date(2026, 1, 2), datetime(2026, 1, 2, 3, tzinfo=UTC), ("t", 1)])


def test_mask_matches_the_reference_rule_on_random_documents():
    rng = random.Random(10)
    for _ in range(2000):
        doc = {rng.choice(KEYS): random_doc(rng) for _ in range(rng.randint(0, 8))}
        assert mask(doc) == reference_mask(doc)


def test_mask_never_changes_or_shares_the_callers_containers():
    data = {"name": "x", "client_secret": "s3", "nested": {"password": "p", "ok": [1, {"a": 2}]},
            "list": [{"card": "4111"}, [1, 2]], "tuple": ({"k": [1]},)}
    before = copy.deepcopy(data)
    masked = mask(data)
    assert data == before
    assert masked == {"name": "x", "client_secret": "***",
                      "nested": {"password": "***", "ok": [1, {"a": 2}]},
                      "list": [{"card": "***"}, [1, 2]], "tuple": ({"k": [1]},)}
    masked["nested"]["ok"][1]["a"] = 99
    masked["list"][1].append(3)
    masked["tuple"][0]["k"].append(2)
    assert data == before  # nothing mutable is shared with the caller's dict


def test_mask_does_not_mask_inside_tuples_as_before():
    assert mask({"t": ({"password": "p"},)}) == {"t": ({"password": "p"},)}


def test_mask_of_none_is_none():
    assert mask(None) is None


def test_masked_key_cache_is_bounded_and_text_only(monkeypatch):
    monkeypatch.setattr(uow, "_MASK_CACHE", {})
    monkeypatch.setattr(uow, "_MASK_CACHE_MAX", 3)
    for i in range(10):
        assert masked_key(f"field_{i}") is False
    assert masked_key("my_token") is True
    assert len(uow._MASK_CACHE) == 3
    assert masked_key(1) is False and masked_key(True) is False  # never cached (1 == True)
    assert 1 not in uow._MASK_CACHE
    # a decision is the same whether it came from the cache or not
    assert mask({"field_0": "a", "SECRET_x": "b"}) == {"field_0": "a", "SECRET_x": "***"}
