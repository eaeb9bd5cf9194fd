"""What an event's `data` carries to every consumer of the bus
(docs/decisions/keys-configuration-and-events.md, "What events carry to every consumer").

CONTRACT §4 makes `data` the aggregate as the API returns it. The bus, though, reaches every
service that binds `hotel.pms.#`, with no scope and no holder between them and the data, while
the API hands the same rows out only to a caller holding the resource's read scope (and to a
guest only for its own rows). So an aggregate that holds personal data, or staff-only text, is
published as a consumer-facing view; a consumer that needs the rest reads it through the API
with the scope that guards it (`GET .../profiles/{id}`, `GET .../reservations/{id}/comments`).

- `profile.*`: the profile's identity and shape, never its contact data: no names, email,
  phone, address, preferences or loyalty number; booleans say which of them the profile has
  (`has_email`, `has_phone`, `has_address`, `has_loyalty_number`). A company profile keeps its
  `company_name` (a business, not a person). The standing consent (`consents`: the purposes
  granted) is a flag set, not personal data: it is kept, so a marketing system reads it here.
- `reservation_comment.*`: a comment marked `internal` (the default: a staff note) is published
  without its `text` (`text_withheld: true`); a comment for the guest keeps it.

The outbox row and the audit journal keep the whole aggregate (the journal is the record of
who did what). Its push goes to the routing key `audit.pms.recorded`, outside `hotel.pms.#`,
and names the changed fields without their values (pms.relay.audit_push). Every
other event type is published as the API returns it. Views run on the relay, once per
published event, never on the request path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PROFILE_KEPT = ("profile_id", "id", "kind", "external_ref", "language", "consents",
                "created_at", "updated_at")
PROFILE_PRESENCE = {"has_email": "email", "has_phone": "phone", "has_address": "address",
                    "has_loyalty_number": "loyalty_number"}


def profile_view(data: dict[str, Any]) -> dict[str, Any]:
    view = {key: data[key] for key in PROFILE_KEPT if key in data}
    if data.get("kind") == "COMPANY":
        view["company_name"] = data.get("company_name")
    for flag, key in PROFILE_PRESENCE.items():
        view[flag] = bool(data.get(key))
    return view


def comment_view(data: dict[str, Any]) -> dict[str, Any]:
    if data.get("internal") is False:
        return data
    view = {key: value for key, value in data.items() if key != "text"}
    view["text_withheld"] = True
    return view


# aggregate (the third part of `hotel:pms:{aggregate}:{action}`) -> its consumer view
VIEWS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "profile": profile_view,
    "reservation_comment": comment_view,
}


def consumer_data(type_: str, data: Any) -> Any:
    """The `data` an event of `type_` is published with."""
    parts = type_.split(":")
    view = VIEWS.get(parts[2]) if len(parts) == 4 and parts[:2] == ["hotel", "pms"] else None
    if view is None or not isinstance(data, dict):
        return data
    return view(data)
