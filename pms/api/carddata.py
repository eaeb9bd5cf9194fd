"""The card-data guard: a request whose body (or query string) carries anything that looks like a
payment card number is refused with 422 `card_data_refused` before it is parsed into a schema,
stored, fingerprinted for idempotency or logged (SPEC rule 3: only payment_method_id references).

It runs right after the body is read (`BodyMiddleware`) and before the idempotency middleware and
the responders. The problem body names the fields, never their values.
"""

from __future__ import annotations

import json
from urllib.parse import unquote_plus

import falcon

from pms.domain.luhn import card_number_paths, contains_card_number
from pms.errors import CardDataRefused


class CardDataMiddleware:
    """Refuse card numbers anywhere in a request body or query string."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        fields: list[str] = []
        raw: bytes = getattr(req.context, "raw_body", b"") or b""
        if raw:
            text = raw.decode("utf-8", errors="replace")
            try:
                fields = card_number_paths(json.loads(text))
            except ValueError:
                fields = ["body"] if contains_card_number(text) else []
        if req.query_string and contains_card_number(unquote_plus(req.query_string)):
            fields.append("query")
        if fields:
            raise CardDataRefused(
                "card numbers must never be sent to this service: tokenize the card with the "
                "payments service and send its payment_method_id",
                errors=[{"field": f, "message": "looks like a card number"} for f in fields])
