"""Card-number detection: Luhn-valid runs of 13 to 19 digits, with optional single spaces or
dashes between digits. Pure functions; used by the card-data guard before a body is parsed or
logged. UUID-shaped strings and "+"-prefixed phone numbers are ignored (false positives).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

_RUN = re.compile(r"(?<![0-9])[0-9](?:[ -]?[0-9])*")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
MIN_DIGITS, MAX_DIGITS = 13, 19


def luhn_valid(digits: str) -> bool:
    """True when `digits` (0-9 only) passes the Luhn checksum."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _candidates(run: str) -> Iterator[str]:
    """The run's digits, and every contiguous sub-sequence of its separator groups (so a card
    number written after another number, "room 12 4111 1111 1111 1111", is still found)."""
    groups = re.split(r"[ -]", run)
    for i in range(len(groups)):
        digits = ""
        for group in groups[i:]:
            digits += group
            if len(digits) > MAX_DIGITS:
                break
            if len(digits) >= MIN_DIGITS:
                yield digits


def contains_card_number(text: str) -> bool:
    """True when `text` holds something that looks like a payment card number."""
    if len(text) < MIN_DIGITS:
        return False
    text = _UUID.sub(" ", text)
    for match in _RUN.finditer(text):
        if match.start() and text[match.start() - 1] == "+":
            continue  # an international phone number (+49 30 ...), never a card
        if any(luhn_valid(c) for c in _candidates(match.group(0))):
            return True
    return False


def card_number_paths(value: Any, path: str = "") -> list[str]:
    """JSON paths (`a.b[0]`) of every key or value in a decoded JSON document that holds one."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if contains_card_number(str(key)):
                found.append(sub)
            found.extend(card_number_paths(item, sub))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(card_number_paths(item, f"{path}[{i}]"))
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
        if contains_card_number(str(value) if not isinstance(value, float) else repr(value)):
            found.append(path or "body")
    return found
