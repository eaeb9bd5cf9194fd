"""Card numbers kept out of the logs: a request path may carry one where an id is
expected (`PUT .../rooms/4111111111111111`), and the access line and the error lines log paths.

`mask_card_numbers` replaces every digit of a PAN-like run with `*`: a run of at least
MIN_DIGITS digits (any Unicode decimal digits), whose groups may be split by up to three
spaces, dots, dashes or underscores. It is deliberately wider than the card guard's test
(pms/domain/luhn.py: brand, length, checksum): a log line loses nothing useful by hiding a long
number, and a mistyped card is still a card. UUIDs are left as they are (their digit groups are
not numbers), and so is everything else, so the line still says which route was called.

PERF: it runs on every request's access line; a path without 13 digits close together outside
its UUIDs (nearly every path) costs two regular-expression passes, about 2 us.
"""

from __future__ import annotations

import re

MIN_DIGITS = 13

_SEP = r"[ ._\-]{1,3}"
# any MIN_DIGITS digits that may be one run: the cheap first test
_MAYBE = re.compile(rf"\d(?:(?:{_SEP})?\d){{{MIN_DIGITS - 1}}}")
_RUN = re.compile(rf"(?<!\d)\d+(?:{_SEP}\d+)*")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_BLANK_UUID = "u" * 36
_NOT_DIGIT = re.compile(r"\D")


def mask_card_numbers(text: str) -> str:
    """`text` with the digits of every PAN-like run replaced by `*` (UUIDs untouched)."""
    if not text:
        return text
    # UUIDs blanked to letters of the same length, so their digits neither count nor join a run
    scan = _UUID.sub(_BLANK_UUID, text)
    if _MAYBE.search(scan) is None:
        return text
    out, last = [], 0
    for match in _RUN.finditer(scan):
        run = match.group()
        if len(_NOT_DIGIT.sub("", run)) < MIN_DIGITS:
            continue
        start, end = match.span()
        out.append(text[last:start])
        out.append("".join("*" if ch.isdigit() else ch for ch in text[start:end]))
        last = end
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)
