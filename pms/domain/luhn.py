"""Card-number detection for the card-data guard (pms/api/carddata.py). Pure functions.

A candidate is a run of digits, optionally split into groups by short runs of separators
(spaces, tabs, newlines, dots, dashes, underscores, slashes), that has a known card brand's
prefix and length and passes the Luhn checksum. The text is normalized first: NFKC (so
full-width "４１１１" reads as "4111"), any Unicode decimal digit read as its ASCII digit, and
invisible format characters (zero-width spaces) removed, so none of them hides a number.

False positives are kept low by the brand rule (an all-zero `floor=0000000000000000` is no
card) and by ignoring UUID-shaped strings. A "+"-prefixed number of at most 15 digits (E.164's
maximum) is a phone number, but only in a field whose name says phone (`phone_field`): in any
other field "+4111111111111111" is a card number written with a plus.

A payment-method reference (`reference_field`: a field named `payment_method_id` or ending so)
holds the payments service's token, an opaque word such as `pm_1N3x...` or `pm_holder_<hex>`
whose letters and digits may run into a Luhn-valid digit string by chance. There, digits glued
to a letter on either side are part of the token's word, not a number someone typed; a number
standing on its own (`4111 1111 1111 1111`, `pm_4111111111111111`, an all-digit token) is
still judged as everywhere else.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Any

MIN_DIGITS, MAX_DIGITS = 13, 19
E164_MAX_DIGITS = 15

# Separators that may sit between groups of a written card number, at most three in a row.
_SEP = r"[\s._/\\-]{1,3}"
_RUN = re.compile(rf"(?<![0-9])[0-9]+(?:{_SEP}[0-9]+)*")
_SPLIT = re.compile(_SEP)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_PHONE_NAME = re.compile(r"phone|mobile|fax|(?:^|_)tel(?:$|_)", re.IGNORECASE)

# (prefix range low, high, lengths): the issuer ranges of the card brands in use (Visa,
# Mastercard incl. the 2-series, Amex, Diners, JCB, Discover/UnionPay/RuPay and other 6-series,
# Maestro, Mir). A number outside them is no card, whatever its checksum.
_BRANDS: tuple[tuple[str, str, frozenset[int]], ...] = (
    ("4", "4", frozenset({13, 16, 19})),
    ("51", "55", frozenset({16})),
    ("2221", "2720", frozenset({16})),
    ("2200", "2204", frozenset(range(16, 20))),
    ("34", "34", frozenset({15})),
    ("37", "37", frozenset({15})),
    ("300", "305", frozenset(range(14, 20))),
    ("36", "36", frozenset(range(14, 20))),
    ("38", "39", frozenset(range(16, 20))),
    ("3528", "3589", frozenset(range(16, 20))),
    ("50", "50", frozenset(range(13, 20))),
    ("56", "58", frozenset(range(13, 20))),
    ("6", "6", frozenset(range(13, 20))),
    ("81", "82", frozenset({16})),
)


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


def card_brand_shaped(digits: str) -> bool:
    """True when `digits` has a card brand's prefix and length (before any checksum)."""
    size = len(digits)
    for low, high, lengths in _BRANDS:
        if size in lengths and low <= digits[:len(low)] <= high:
            return True
    return False


def looks_like_card(digits: str) -> bool:
    """A brand's prefix and length, and a valid Luhn checksum."""
    return card_brand_shaped(digits) and luhn_valid(digits)


def normalize(text: str) -> str:
    """NFKC, every Unicode decimal digit as ASCII, format characters (zero-width) removed."""
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text)
    out = []
    for ch in text:
        if ch.isdecimal() and not ch.isascii():
            out.append(str(unicodedata.decimal(ch)))
        elif unicodedata.category(ch) != "Cf":
            out.append(ch)
    return "".join(out)


def _candidates(run: str, *, glued_first: bool = False,
                glued_last: bool = False) -> Iterator[str]:
    """The run's digits, and every contiguous sub-sequence of its separator groups (so a card
    number written after another number, "room 12 4111 1111 1111 1111", is still found).
    `glued_first`/`glued_last`: the first/last group runs into a letter (a token's word), and
    no candidate includes it."""
    groups = _SPLIT.split(run)
    last = len(groups) - 1
    for i in range(1 if glued_first else 0, len(groups)):
        digits = ""
        for j in range(i, len(groups)):
            if glued_last and j == last:
                break
            digits += groups[j]
            if len(digits) > MAX_DIGITS:
                break
            if len(digits) >= MIN_DIGITS:
                yield digits


_REFERENCE_NAME = re.compile(r"payment_method_id$", re.IGNORECASE)


def reference_field(name: str) -> bool:
    """Whether a field named `name` (its last path segment) holds a payment-method token."""
    last = re.split(r"[.\[]", name)[-1] if name else ""
    return bool(_REFERENCE_NAME.search(last))


def phone_field(name: str) -> bool:
    """Whether a field named `name` (its last path segment) holds a phone number."""
    last = re.split(r"[.\[]", name)[-1] if name else ""
    return bool(_PHONE_NAME.search(last))


def contains_card_number(text: str, *, phone: bool = False, token: bool = False) -> bool:
    """True when `text` holds something that looks like a payment card number. With
    `phone=True` (a phone field), a "+"-prefixed run of at most 15 digits is a phone number;
    with `token=True` (a payment-method reference), digits glued to a letter are the token's."""
    if len(text) < MIN_DIGITS:
        return False
    text = _UUID.sub(" ", normalize(text))
    for match in _RUN.finditer(text):
        run = match.group(0)
        start, end = match.start(), match.end()
        if phone and start and text[start - 1] == "+":
            if sum(ch.isdigit() for ch in run) <= E164_MAX_DIGITS:
                continue
        glued_first = token and start > 0 and text[start - 1].isalpha()
        glued_last = token and end < len(text) and text[end].isalpha()
        if any(looks_like_card(c) for c in _candidates(run, glued_first=glued_first,
                                                       glued_last=glued_last)):
            return True
    return False


# The raw-body pre-check (may_hold_card_number): each byte read as a digit ("0"), a separator
# ("-") or neither (" "), so that bytes.split() yields the digit runs at C speed; and as part
# of a UUID or a run around one ("x") or not, for a UUID that blanking could join runs across.
_SEP_BYTES = b" \t\n\r\x0b\x0c._/\\-"  # what _SEP matches in ASCII
_RUN_TABLE = bytes(48 if 48 <= b <= 57 else 45 if b in _SEP_BYTES else 32 for b in range(256))
_JOIN_TABLE = bytes(120 if (48 <= b <= 57 or b in _SEP_BYTES or b in b"abcdefABCDEF") else 32
                    for b in range(256))
_DENSE_TABLE = _RUN_TABLE.replace(b"-", b"0")
_DENSE = b"0" * MIN_DIGITS
_JOINED = b"x" * 37  # a UUID's 36 characters and one more
_RUN_BYTES = re.compile(_RUN.pattern.encode())
_UUID_BYTES = re.compile(_UUID.pattern.encode())
# A number written with an exponent decodes to a Decimal whose text may put zeros ("0.00000")
# before its digits: a run the raw text does not show, but one that starts with 0, which no
# card brand does (so it holds no candidate the raw run does not).
assert all(not low.startswith("0") for low, _high, _lengths in _BRANDS)


def may_hold_card_number(raw: bytes) -> bool:
    """False when no key, string or number of the JSON document `raw` (valid JSON, decoded
    with numbers as int or Decimal) can hold a card number, so its `card_number_paths` is
    empty; True when it may (then walk it). PERF: a scan of the raw bytes at C
    speed instead of a walk over every field of every request body.

    Exact where it says False: the raw text is ASCII without a backslash, so every decoded key
    and string is its raw text verbatim (no Unicode digits, no format characters, no escaped
    separators) and every number's text is its raw text (or, written with an exponent, the
    same digits with leading zeros or an "E" that ends the run); every digit run of a decoded
    value then lies inside a digit run of the raw text, and a run of fewer than MIN_DIGITS
    digits holds no candidate. A UUID blanked out (as `contains_card_number` does) turns into
    a separator that can join the runs around it: a raw stretch of UUID, digit and separator
    characters longer than a UUID is checked exactly. Anything else answers True."""
    if not raw.isascii() or b"\\" in raw:
        return True
    if len(raw) < MIN_DIGITS:
        return False
    if _DENSE in raw.translate(_DENSE_TABLE):  # MIN_DIGITS digits or separators in a row
        runs = raw.translate(_RUN_TABLE).split()
        if any(len(run) >= MIN_DIGITS and run.count(48) >= MIN_DIGITS for run in runs):
            return True
    if _JOINED not in raw.translate(_JOIN_TABLE):  # no stretch longer than a UUID
        return False
    text = _UUID_BYTES.sub(b" ", raw)  # the exact check, as contains_card_number runs it
    return any(sum(48 <= c <= 57 for c in match.group(0)) >= MIN_DIGITS
               for match in _RUN_BYTES.finditer(text))


CARD_KEY = "<card number>"


def card_number_paths(value: Any) -> list[str]:
    """JSON paths (`a.b[0]`) of every key or value in a decoded JSON document that holds one;
    a key that holds one appears in them as CARD_KEY.
    Walks without recursion (the document's depth is bounded before, but need not be)."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict):
            for key, sub in item.items():
                # a key holding a card number is named masked, never echoed
                card_key = contains_card_number(str(key))
                name = CARD_KEY if card_key else str(key)
                sub_path = f"{path}.{name}" if path else name
                if card_key:
                    found.append(sub_path)
                stack.append((sub_path, sub))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", sub) for i, sub in enumerate(item))
        elif isinstance(item, str):
            if contains_card_number(item, phone=phone_field(path),
                                    token=reference_field(path)):
                found.append(path or "body")
        elif item is not None and not isinstance(item, bool):
            if contains_card_number(str(item)):
                found.append(path or "body")
    return sorted(found)  # the stack walk visits in reverse; name the fields in a stable order
