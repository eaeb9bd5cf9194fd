"""The extension members a problem body may carry beside type/title/status/detail/code/errors,
typed on the OpenAPI `Problem` component (pms.api.openapi_rules). An error that carries a new
member adds it here; tests/api/test_openapi_client.py scans the code for any that is not.
"""

from __future__ import annotations

from typing import Any

_DECIMAL = {"type": "string", "format": "decimal"}
_UUID = {"type": "string", "format": "uuid"}
_DATES = {"type": "array", "items": {"type": "string", "format": "date"}}
# Extension members a problem body may carry beside type/title/status/detail/code/errors.
PROBLEM_MEMBERS: dict[str, dict[str, Any]] = {
    "amount": {**_DECIMAL, "description": "The amount the refused action named"},
    "balance": {**_DECIMAL, "description": "The folio's balance (decimal string)"},
    "see": {"type": "string", "description": "Where the guest is sent (front_desk)"},
    "valid_until": {"type": "string", "format": "date-time",
                    "description": "When the stay's keys end"},
    "business_date": {"type": "string", "format": "date"},
    "document_id": {"type": "string", "format": "uuid",
                    "description": "The fiscal document the refusal is about"},
    "missing": {"type": "array", "items": {"type": "string"},
                "description": "What the document's frozen identities lack for an e-invoice"},
    "valid_from": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}],
                   "description": "The first night a rate link is valid for (null: open)"},
    "valid_to": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}],
                 "description": "The last night a rate link is valid for (null: open)"},
    "current_business_date": {"type": "string", "format": "date",
                              "description": "The property's business date, the one to close"},
    "admin_count": {"type": "integer", "description": "The company's bound ADMINs"},
    "list_name": {"type": "string", "description": "The list of values the refusal is about"},
    "editable_lists": {"type": "array", "items": {"type": "string"},
                       "description": "The lists of values the env edits (its own)"},
    "count": {"type": "integer", "description": "How many there are now (e.g. a stay's live keys)"},
    "credit": {**_DECIMAL, "description": "The credit the folio holds"},
    "credit_limit": {**_DECIMAL, "description": "The company's credit limit"},
    "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
    "current_etag": {"type": "string", "description": "The current ETag: read again, then send "
                                                      "it as If-Match"},
    "decline_code": {"type": "string", "description": "The payments service's decline reason"},
    "event_status": {"type": "string", "description": "The banquet event's state that refused "
                     "the action"},
    "events": {"type": "array", "items": {
        "type": "object", "required": ["id", "name"],
        "properties": {"id": _UUID, "name": {"type": "string"}, "status": {"type": "string"},
                       "start_at": {"type": "string", "format": "date-time"},
                       "end_at": {"type": "string", "format": "date-time"}}},
        "description": "The banquet events in the way (a block's, or a function space's "
                       "during an out-of-order period)"},
    "existing_id": {**_UUID, "description": "The row that already holds this identity"},
    "blockers": {"type": "array", "items": {"type": "object"},
                 "description": "What holds an erasure back (an open stay, a balance due)"},
    "credit_open": {**_DECIMAL, "description": "What is left of the credit to apply"},
    "invoice_open": {**_DECIMAL, "description": "What is left open on the invoice"},
    "item_ids": {"type": "array", "items": _UUID,
                 "description": "The receivable items already invoiced or closed"},
    "open_amount": {**_DECIMAL, "description": "What is left open on the item"},
    "active_override_ids": {"type": "array", "items": _UUID,
                            "description": "The company's ACTIVE credit overrides"},
    "credit_balance": {**_DECIMAL, "description": "What the hotel holds for the company (a "
                                                 "paid direct bill reverted)"},
    "local_date": {"type": "string", "format": "date",
                   "description": "The property's calendar date now"},
    "reservation_ids": {"type": "array", "items": _UUID,
                        "description": "The stays the refusal is about"},
    "routed_reservation_ids": {"type": "array", "items": _UUID,
                               "description": "Open stays billed to the company"},
    "exposure": {"type": "object", "description": "The company's exposure: `total` and each "
                  "part (decimal strings)", "additionalProperties": _DECIMAL},
    "folio_id": _UUID,
    "company_profile_id": {**_UUID, "description": "The company the stay is billed to"},
    "policy_set_id": {"type": "string", "description": "The policy set whose rule (or whose "
                      "default_effect deny) refused: docs/guides/authorization.md"},
    "rule_id": {"type": "string", "description": "The id of the policy rule that refused"},
    "section": {"type": "string", "description": "The configuration bundle's section whose "
                "domain scope the token lacks"},
    "header": {"type": "string", "description": "The header that was over the limit"},
    "job_status": {"type": "string"},
    "limit": {"type": "integer", "description": "The bound that was reached"},
    "maintenance_id": _UUID,
    "max_bytes": {"type": "integer"},
    "max_depth": {"type": "integer"},
    "modes": {"type": "array", "items": {"type": "string"},
              "description": "The kiosk modes the refused action needs (one of them)"},
    "needed": {**_DECIMAL, "description": "What the refused action needs"},
    "nights": {**_DATES, "description": "The nights the answer is about"},
    "open_balance": {**_DECIMAL, "description": "What the company owes on its receivable "
                                               "account"},
    "original_request_id": {"type": "string"},
    "overrides": {**_DECIMAL, "description": "Active credit overrides' sum"},
    "payment_id": _UUID,
    "payment_status": {"type": "string"},
    "reasons": {"type": "array", "items": {
        "type": "object", "required": ["code", "message"],
        "properties": {"code": {"type": "string"}, "message": {"type": "string"},
                       "date": {"anyOf": [{"type": "string", "format": "date"},
                                          {"type": "null"}]}}}},
    "refund_id": _UUID,
    "refund_path": {"type": "string", "description": "Where to POST the refund"},
    "refundable": {**_DECIMAL, "description": "What the payment can still give back"},
    "request_id": {"type": "string"},
    "reservations": {"type": "array", "items": {"type": "object", "properties": {
        "id": _UUID, "confirmation_number": {"type": "string"}, "status": {"type": "string"},
        "arrival_date": {"type": "string", "format": "date"},
        "departure_date": {"type": "string", "format": "date"},
        "room_id": {"anyOf": [_UUID, {"type": "null"}]}}}},
    "room_number": {"type": "string"},
    "run_id": _UUID,
    "status_code": {"type": "integer", "description": "The other service's HTTP status"},
    "status_now": {"type": "string", "description": "The row's status when it was refused"},
    "target_id": {**_UUID, "description": "The resource the Idempotency-Key's first request "
                                          "made; read it instead of retrying"},
    "target_type": {"type": "string"},
    # banquet events
    "conflicting_event_id": {**_UUID, "description": "The banquet event holding the space"},
    "space_id": {**_UUID, "description": "The function space (element) concerned"},
    "available": {"type": "integer", "description": "How many of the item are still free"},
    # the night audit's lateness and the departure's document
    "missed_dates": {**_DATES, "description": "The business dates a catch-up would close"},
    "invoice_id": {**_UUID, "description": "The invoice in force that leaves charges out"},
    "charge_ids": {"type": "array", "items": _UUID,
                   "description": "The folio's charges that invoice leaves out"},
    "missing_folio_ids": {"type": "array", "items": _UUID,
                          "description": "The folios whose own invoice must be issued first"},
}
