"""What events carry to every consumer of the bus. Profiles
go out without their personal data and internal (staff) comments without their text; the API
still returns both to a caller with the read scope, and the outbox row and the audit journal
keep the whole aggregate. Through the HTTP API and the relay, on both backends."""

from __future__ import annotations

import json

import pytest

from pms.db.uow import read_scope
from pms.events import envelope
from pms.models import AuditEntry
from pms.relay import outbox
from tests.factories import make_booking_hotel, make_reservation
from tests.helpers import outbox_rows
from workers.publisher import LocalEventPublisher

pytestmark = pytest.mark.usefixtures("database")

PERSONAL = {"email": "ada@example.com", "phone": "+44 20 7946 0000",
            "first_name": "Ada", "last_name": "Lovelace",
            "address": {"line1": "12 St James's Square", "city": "London", "countryCode": "GB"}}
LOYALTY = "LOY-31337"
STAFF_NOTE = "VIP; complained about room 12, comp the minibar"
GUEST_NOTE = "Welcome back, we have your usual pillow ready"


def _published(ctx) -> list[dict]:
    bus = LocalEventPublisher()
    outbox.relay_batch(bus, env_id=ctx.env_id)
    return [event for _key, event in bus.events]


def test_profile_events_carry_no_personal_data(api, ctx):
    hotel = make_booking_hotel(ctx)
    base = f"/v1/properties/{hotel.id}/profiles"
    created = api.post(base, {**PERSONAL, "external_ref": "crm-1", "language": "en"})
    assert created.status_code == 201, created.text
    pid = created.json["id"]
    assert api.put(f"{base}/{pid}/loyalty-number",
                   {"loyalty_number": LOYALTY}).status_code in (200, 201)
    # the API, with the read scope, still returns all of it
    full = api.get(f"{base}/{pid}").json
    assert full["email"] == PERSONAL["email"] and full["loyalty_number"] == LOYALTY

    events = [e for e in _published(ctx) if e["type"].startswith("hotel:pms:profile:")]
    assert [e["type"] for e in events] == ["hotel:pms:profile:created",
                                           "hotel:pms:profile:loyalty_number_set"]
    text = json.dumps(events)
    for secret in (PERSONAL["email"], PERSONAL["phone"], "Ada", "Lovelace", "St James",
                   "London", LOYALTY):
        assert secret not in text, secret
    created_data, loyalty_data = events[0]["data"], events[1]["data"]
    assert created_data["id"] == pid and created_data["kind"] == "GUEST"
    assert created_data["external_ref"] == "crm-1" and created_data["language"] == "en"
    assert (created_data["has_email"], created_data["has_phone"], created_data["has_address"],
            created_data["has_loyalty_number"]) == (True, True, True, False)
    assert loyalty_data["has_loyalty_number"] is True
    # the outbox row and the audit journal keep the aggregate as the API returns it
    rows = {r.type: r for r in outbox_rows(ctx)}
    assert rows["hotel:pms:profile:loyalty_number_set"].data["loyalty_number"] == LOYALTY
    with read_scope(ctx):
        audited = AuditEntry.select().where(AuditEntry.action == "profile.created").get()
    assert audited.after["email"] == PERSONAL["email"]


def test_a_company_profile_keeps_its_company_name(api, ctx):
    hotel = make_booking_hotel(ctx)
    resp = api.post(f"/v1/properties/{hotel.id}/profiles",
                    {"kind": "COMPANY", "company_name": "Analytical Engines Ltd",
                     "email": "billing@example.com"})
    assert resp.status_code == 201, resp.text
    (event,) = [e for e in _published(ctx) if e["type"] == "hotel:pms:profile:created"]
    assert event["data"]["company_name"] == "Analytical Engines Ltd"
    assert "billing@example.com" not in json.dumps(event)


def test_internal_comments_go_out_without_their_text(api, ctx):
    hotel = make_booking_hotel(ctx)
    res = make_reservation(ctx, hotel)
    path = f"/v1/properties/{hotel.id}/reservations/{res.id}/comments"
    staff = api.post(path, {"text": STAFF_NOTE})  # internal by default
    guest = api.post(path, {"text": GUEST_NOTE, "internal": False})
    assert staff.status_code == 201 and guest.status_code == 201, (staff.text, guest.text)
    listed = api.get(path).json
    assert STAFF_NOTE in json.dumps(listed)  # staff read it through the API

    events = {e["subject"]: e for e in _published(ctx)
              if e["type"] == "hotel:pms:reservation_comment:created"}
    staff_event, guest_event = events[staff.json["id"]], events[guest.json["id"]]
    assert STAFF_NOTE not in json.dumps(staff_event)
    assert staff_event["data"]["text_withheld"] is True and staff_event["data"]["internal"]
    assert "text" not in staff_event["data"]
    assert guest_event["data"]["text"] == GUEST_NOTE
    assert "text_withheld" not in guest_event["data"]
    # the internal subscribers see the same envelope as the bus
    for row in outbox_rows(ctx):
        if str(row.id) == staff_event["id"]:
            assert row.data["text"] == STAFF_NOTE and STAFF_NOTE not in json.dumps(envelope(row))


def test_other_events_are_published_as_the_api_returns_them(api, ctx):
    hotel = make_booking_hotel(ctx)
    make_reservation(ctx, hotel)
    published = {e["id"]: e for e in _published(ctx)}
    rows = [r for r in outbox_rows(ctx) if r.type.startswith("hotel:pms:reservation:")]
    assert rows
    for row in rows:
        assert published[str(row.id)]["data"] == json.loads(json.dumps(row.data))
