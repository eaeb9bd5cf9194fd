"""The card-data guard: a request whose body (or query string) carries anything that looks like a
payment card number is refused with 422 `card_data_refused` before it is parsed into a schema,
stored, fingerprinted for idempotency or logged (SPEC rule 3: only payment_method_id references).

It runs right after the body is read and inspected (`BodyMiddleware`, which leaves the decoded
document in `req.context.json_body`) and before the idempotency middleware and the responders.
A body that is not JSON is scanned as text. The problem body names the fields, never their
values. Detection rules (brands, separators, Unicode digits, phone fields): pms/domain/luhn.py.
"""

from __future__ import annotations

from urllib.parse import unquote_plus

import falcon

from pms.api.multipart import is_multipart, text_parts
from pms.domain.luhn import (
    card_number_paths,
    contains_card_number,
    may_hold_card_number,
    phone_field,
    reference_field,
)
from pms.errors import CardDataRefused


class CardDataMiddleware:
    """Refuse card numbers anywhere in a request body or query string."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        # a body the route gate reads after its scope check is scanned there (check_body)
        _refuse(_body_fields(req) if getattr(req.context, "body_loaded", False) else [],
                _query_fields(req) if req.query_string else [])


def check_body(req: falcon.Request) -> None:
    """Refuse card numbers in a body read after the route gate's scope check."""
    _refuse(_body_fields(req), [])


def _refuse(fields: list[str], query: list[str]) -> None:
    fields = [*fields, *query]
    if fields:
        raise CardDataRefused(
            "card numbers must never be sent to this service: tokenize the card with the "
            "payments service and send its payment_method_id",
            errors=[{"field": f, "message": "looks like a card number"} for f in fields])


def _body_fields(req: falcon.Request) -> list[str]:
    fields: list[str] = []
    raw: bytes = getattr(req.context, "raw_body", b"") or b""
    if raw:
        doc = getattr(req.context, "json_body", None)
        if doc is not None:
            # PERF: a body whose raw bytes hold no digit run long enough for a
            # card (exact for ASCII JSON, see may_hold_card_number) skips the field walk
            if may_hold_card_number(raw):
                fields = card_number_paths(doc)
        elif is_multipart(req.content_type):
            # a form's text fields are scanned, not its files' bytes (an image's
            # bytes may hold any digit run; it is checked as an image, never stored as text)
            fields = [name or "body" for name, text in text_parts(raw, req.content_type or "")
                      if contains_card_number(text)]
        elif contains_card_number(raw.decode("utf-8", errors="replace")):
            fields = ["body"]
    return fields


def _query_fields(req: falcon.Request) -> list[str]:
    """Query parameters (by name) holding a card number; a name that holds one is `query`."""
    found = []
    for name, value in req.params.items():
        values = value if isinstance(value, list) else [value]
        if contains_card_number(name):
            found.append("query")
        elif any(contains_card_number(v, phone=phone_field(name), token=reference_field(name))
                 for v in values):
            found.append(name)
    if not found and contains_card_number(unquote_plus(req.query_string)):
        found.append("query")  # in a part Falcon does not parse into parameters
    return found
