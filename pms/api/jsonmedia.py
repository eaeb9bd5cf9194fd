"""msgspec-backed JSON for Falcon: Decimal as "129.00", UUID, dates and datetimes as strings.

Also the one inspection every request body gets before any schema sees it (`inspect_body`):
nesting deeper than `MAX_DEPTH` is refused with 400 `json_too_deep` (counted on the bytes,
without recursion, so a 1,000-level body never reaches a recursive decoder, walker or
fingerprint), and a NUL character (`\\u0000`) in any string or key is refused with 422 naming
the field (PostgreSQL cannot store NUL in text or jsonb, and no field of ours needs it). Bytes
that are not UTF-8 inside a string are 400 `malformed_json` (`not_utf8`), never a 500.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import falcon
import falcon.media
import msgspec

from pms.errors import BadRequest, ValidationFailed

_encoder = msgspec.json.Encoder(decimal_format="string")
_decoder = msgspec.json.Decoder()
# NOTE: JSON numbers become Decimal here (not float), so 1e400 parses instead of failing as
# "out of range" and the money-form check (pms.schemas.money) sees the number as written.
_inspect_decoder = msgspec.json.Decoder(float_hook=Decimal)

# The deepest nesting any schema of ours needs is about 5 (a rate plan's policy inside a list);
# 32 leaves room for free-form jsonb (preferences, registration cards) and stays far below the
# recursion limits of msgspec (about 1,000) and of Python walkers.
MAX_DEPTH = 32

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_BRACKET = re.compile(rb"[\[\]{}]")
_OPENERS = frozenset((b"[", b"{"))


def dumps(obj: Any) -> bytes:
    return _encoder.encode(obj)


def loads(raw: bytes | str) -> Any:
    return _decoder.decode(raw)


def too_deep(raw: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether arrays and objects in the JSON text `raw` nest deeper than `limit` (brackets
    inside strings do not count), found without recursion and without decoding."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False  # PERF: the common case; too few brackets to be that deep
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub(b'""', raw)):
        if match.group() in _OPENERS:
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def nul_paths(doc: Any) -> list[str]:
    """Paths (`a.b[0]`) of every string value or key in a decoded document that holds NUL."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if "\x00" in value:
                found.append(path or "body")
        elif isinstance(value, dict):
            for key, item in value.items():
                sub = f"{path}.{key}" if path else str(key)
                if "\x00" in key:
                    found.append(sub)
                stack.append((sub, item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(value))
    # A key may hold the NUL itself: the path names it with the escape, not the character.
    return sorted(p.replace("\x00", "\\u0000") for p in found)


def inspect_body(raw: bytes) -> Any:
    """The decoded JSON document of a request body (numbers as int or Decimal), or None when it
    is not JSON (the responder's decoder then answers 400 `malformed_json`).

    Raises:
        BadRequest: `json_too_deep`, nesting deeper than MAX_DEPTH.
        ValidationFailed: a string or key holds NUL (`\\u0000`); the errors name the fields.
    """
    if too_deep(raw):
        raise BadRequest(f"JSON nested deeper than {MAX_DEPTH} levels is refused",
                         code="json_too_deep", max_depth=MAX_DEPTH)
    try:
        doc = _inspect_decoder.decode(raw)
    except msgspec.DecodeError:
        return None
    except UnicodeDecodeError as exc:  # (msgspec raises it for bad bytes inside a string)
        raise not_utf8(exc) from exc
    # PERF: a NUL can only be there as the escape \u0000 (a raw NUL byte is not valid JSON),
    # so bodies without that text skip the walk.
    if b"\\u0000" in raw:
        paths = nul_paths(doc)
        if paths:
            raise ValidationFailed(
                "text must not contain the NUL character (\\u0000)",
                errors=[{"field": p, "message": "must not contain NUL (\\u0000)"} for p in paths])
    return doc


def not_utf8(exc: UnicodeDecodeError) -> BadRequest:
    """The answer to a JSON body whose bytes are not UTF-8 (RFC 8259 requires it): 400
    `malformed_json`, naming the first bad byte's offset in the string it was found in."""
    return BadRequest(f"the request body is not valid UTF-8 (byte at {exc.start} of a string "
                      "cannot be decoded)", code="malformed_json")


class MsgspecJSONHandler(falcon.media.BaseHandler):
    def serialize(self, media: Any, content_type: str | None = None) -> bytes:
        return _encoder.encode(media)

    def deserialize(self, stream: Any, content_type: str | None, content_length: int | None) -> Any:
        data = stream.read()
        if not data:
            raise falcon.MediaNotFoundError("JSON")
        if too_deep(data):
            raise falcon.MediaMalformedError("JSON")
        try:
            return _decoder.decode(data)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            raise falcon.MediaMalformedError("JSON") from exc

    exhaust_stream = True
