"""The audit push goes to a destination of its own (a routing key no domain consumer's
`hotel.pms.#` binding matches) and carries who changed what, by field name, never the
before/after rows (names, email, phone, address, staff notes). Through the HTTP API and the
relay's audit push, on both backends."""

from __future__ import annotations

import json

import pytest

from pms.relay import audit_push
from tests.factories import make_booking_hotel
from workers.publisher import LocalEventPublisher

pytestmark = pytest.mark.usefixtures("database")

PERSONAL = {"email": "grace@example.com", "phone": "+1 202 555 0100",
            "first_name": "Grace", "last_name": "Hopper",
            "address": {"line1": "1 Navy Yard", "city": "Arlington", "countryCode": "US"}}


def _matches_domain_binding(key: str) -> bool:
    """Whether the topic binding `hotel.pms.#` (`#`: zero or more words) takes `key`."""
    return key == "hotel.pms" or key.startswith("hotel.pms.")


def test_the_audit_push_is_off_the_domain_pattern_and_carries_no_personal_data(api, ctx):
    hotel = make_booking_hotel(ctx)
    base = f"/v1/properties/{hotel.id}/profiles"
    created = api.post(base, {**PERSONAL, "language": "en"})
    assert created.status_code == 201, created.text
    pid = created.json["id"]
    changed = api.put(f"{base}/{pid}/loyalty-number", {"loyalty_number": "LOY-4242"})
    assert changed.status_code == 200, changed.text

    bus = LocalEventPublisher()
    result = audit_push.push_audit_batch(bus, env_id=ctx.env_id)
    assert result.published >= 2
    keys = {key for key, _ in bus.events}
    assert keys == {"audit.pms.recorded"}
    assert not any(_matches_domain_binding(key) for key in keys)

    events = [e for _, e in bus.events if e["subject"] == pid]
    assert [e["data"]["action"] for e in events] == ["profile.created",
                                                     "profile.loyalty_number_set"]
    text = json.dumps(events)
    for personal in ("grace@example.com", "Grace", "Hopper", "555 0100", "LOY-4242",
                     "Navy Yard", "Arlington"):
        assert personal not in text, personal
    for event in events:
        assert "before" not in event["data"] and "after" not in event["data"]
    created_event, updated_event = events
    assert {"email", "first_name", "last_name", "phone"} <= set(
        created_event["data"]["changed_fields"])
    assert "loyalty_number" in updated_event["data"]["changed_fields"]
    assert "email" not in updated_event["data"]["changed_fields"]
    assert updated_event["data"]["actor_sub"] == "dev-user"
