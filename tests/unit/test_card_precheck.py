"""The card guard's raw-body pre-check (pms.domain.luhn.may_hold_card_number): whenever the
field walk would find a card number, the pre-check says the body may hold one."""

from __future__ import annotations

import json
import random
import uuid

import pytest

from pms.api.jsonmedia import inspect_body
from pms.domain.luhn import card_number_paths, luhn_valid, may_hold_card_number


def card(rng: random.Random, prefix: str = "4", length: int = 16) -> str:
    body = prefix + "".join(rng.choice("0123456789") for _ in range(length - len(prefix) - 1))
    return next(body + c for c in "0123456789" if luhn_valid(body + c))


SEPARATORS = [" ", "-", ".", "/", "_", "\t", "\n", "\\", "  ", " - ", "\u3000", "\u200b", "\f"]
DIGIT_FORMS = [str, lambda d: "".join(chr(0xFF10 + int(c)) for c in d),
               lambda d: "".join(chr(0x0660 + int(c)) for c in d)]


def written(rng: random.Random, digits: str) -> str:
    """A card number as a person (or an attacker) might write it."""
    digits = rng.choice(DIGIT_FORMS)(digits)
    if rng.random() < 0.5:
        sep = rng.choice(SEPARATORS)
        digits = sep.join(digits[i:i + 4] for i in range(0, len(digits), 4))
    return rng.choice(["", "+", "card ", "room 12 "]) + digits


def value(rng: random.Random, depth: int = 0):
    pick = rng.random()
    if depth < 3 and pick < 0.25:
        return {rng.choice(["notes", "phone", "a", written(rng, card(rng))[:6]]) + str(i):
                value(rng, depth + 1) for i in range(rng.randint(0, 3))}
    if depth < 3 and pick < 0.4:
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice([
        lambda: written(rng, card(rng)), lambda: written(rng, card(rng, "37", 15)),
        lambda: str(uuid.UUID(int=rng.getrandbits(128))),
        lambda: card(rng)[:8] + str(uuid.UUID(int=rng.getrandbits(128))) + card(rng)[8:],
        lambda: "2026-01-0" + str(rng.randint(1, 9)), lambda: "Zürich", lambda: None,
        lambda: int(card(rng)), lambda: rng.randint(0, 10**6), lambda: True,
        lambda: "NUMBER_" + card(rng)[:12],
    ])()


def encodings(doc) -> list[bytes]:
    text = json.dumps(doc, ensure_ascii=False).encode()
    out = [json.dumps(doc).encode(), text, json.dumps(doc, separators=(",", ":")).encode()]
    if isinstance(doc, dict):  # numbers written with an exponent, as a client may send them
        out.append(b'{"n": 4.111111111111111e15, "d": ' + out[0] + b"}")
        out.append(b'{"n": 411111111111111.1E1, "d": ' + out[0] + b"}")
    return out


def test_the_precheck_never_misses_what_the_walk_finds():
    rng = random.Random(10)
    found = skipped = 0
    for _ in range(3000):
        doc = value(rng)
        for raw in encodings(doc):
            decoded = inspect_body(raw)
            paths = card_number_paths(decoded)
            if paths:
                found += 1
                assert may_hold_card_number(raw), (raw, paths)
            elif not may_hold_card_number(raw):
                skipped += 1
    assert found > 1000 and skipped > 100  # both sides exercised


@pytest.mark.parametrize("raw", [
    b'{"a": "4111111111111111"}', b'{"a": "4111 1111 1111 1111"}',
    b'{"a": "41111111abcdefab-abcd-abcd-abcd-abcdefabcdef11111111"}',  # joined once blanked
    b'{"n": 4.111111111111111e15}', b'{"n": 4111111111111111}', b'[4111111111111111]',
    b'{"a": "4111\\u00201111\\u00201111\\u00201111"}', b'{"a": "4111\\t1111\\t1111\\t1111"}',
    '{"a": "４１１１１１１１１１１１１１１１"}'.encode(), b'{"4111111111111111": 1}',
    b'{"a": "4111\\/1111\\/1111\\/1111"}',
])
def test_the_precheck_passes_card_bodies_to_the_walk(raw):
    assert card_number_paths(inspect_body(raw))
    assert may_hold_card_number(raw)


@pytest.mark.parametrize("raw", [
    b'{"arrival_date": "2026-01-01", "departure_date": "2026-01-03", "adults": 2}',
    b'{"room_type_id": "0b6f3c2e-9a41-4d8e-b7c5-2f1a9e8d4c3b", "amount": 123.45}',
    b'{"phone": "+49 30 1234567", "notes": "room 101"}', b"[]", b"1",
])
def test_an_ordinary_booking_body_skips_the_walk(raw):
    assert not card_number_paths(inspect_body(raw))
    assert not may_hold_card_number(raw)


def test_an_all_digit_uuid_or_a_pretty_printed_body_is_only_slower():
    for raw in (b'{"id": "12345678-1234-5678-1234-567812345678"}',
                json.dumps({"a": {"b": {"c": "2026-01-01 12345678-1234"}}}, indent=40).encode()):
        assert not card_number_paths(inspect_body(raw))
        may_hold_card_number(raw)  # (either answer is right: the walk decides)


def test_numbers_with_exponents_never_hide_a_card():
    rng = random.Random(7)
    for _ in range(2000):
        mantissa = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 20)))
        point = rng.randint(1, len(mantissa))
        number = (mantissa[:point] + ("." + mantissa[point:] if point < len(mantissa) else "")
                  + rng.choice("eE") + rng.choice(["", "-", "+"]) + str(rng.randint(0, 25)))
        if number[0] == "0" and point > 1:
            continue  # (JSON has no leading zeros)
        raw = b'{"n": ' + number.encode() + b"}"
        if card_number_paths(inspect_body(raw)):
            assert may_hold_card_number(raw), raw
