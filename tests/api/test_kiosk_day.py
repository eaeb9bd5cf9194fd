"""A lobby terminal's day end to end through the HTTP API, on SQLite and PostgreSQL, with the
platform sandboxes (payments, locks, email): a booked guest looked up, refused a dirty room,
checked into a clean one, given a key the lock holds enabled, sold an add-on, shown the folio,
charged the balance against the stay's pre-authorization, checked out with the receipt sent and
the session ended; then a walk-in from the availability search to a working key."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from pms.db.uow import read_scope
from pms.models import Reservation
from pms.schemas.kiosk import KioskConfigIn
from pms.services import notifications
from pms.services.keys import lock_sync
from pms.services.kiosk import kiosk
from tests.api.kiosk_recipes import KIOSK_SCOPES, kiosk_token, lookup, with_session
from tests.factories import make_booking_hotel, make_package, make_profile, make_reservation
from tests.helpers import assert_problem, outbox_rows


@pytest.fixture
def hotel(ctx):
    hotel = make_booking_hotel(ctx, rooms=3)
    make_package(ctx, hotel.id, code="BRKF", name="Breakfast", price="15.00",
                 calculation="PER_PERSON_PER_NIGHT", category="F&B")
    kiosk.put_config(ctx, hotel.id, KioskConfigIn(
        enabled_modes=["CHECK_IN", "CHECK_OUT", "COLLECT_KEY", "WALK_IN"],
        add_on_package_codes=["BRKF"], lockdown=False, max_keys_per_stay=2))
    return hotel


def _key_enabled_at_the_lock(kapi, ctx, hotel, platform, reservation_id, key_id):
    lock_sync.sync_lock(ctx, uuid.UUID(key_id), platform.locks)  # the sync actor's work
    listed = kapi.get(f"/v1/properties/{hotel.id}/digital-keys?reservation_id="
                      f"{reservation_id}").json["data"]
    ref = next(k for k in listed if k["id"] == key_id)["credential_ref"]
    return platform.locks.credentials[ref]["state"] == "enabled"


def test_a_terminals_day(kapi, ctx, hotel, platform):
    base = f"/v1/properties/{hotel.id}"
    guest = make_profile(ctx, hotel.id, first_name="Ada", last_name="Lovelace",
                         email="ada@example.com")
    booked = make_reservation(ctx, hotel, guest_profile_id=str(guest.id), guest=None,
                              departure_date=(hotel.today + timedelta(days=1)).isoformat())
    for room in hotel.rooms:  # the night's departures are not cleaned yet
        kapi.put(f"{base}/housekeeping/{room.room_number}", {"hk_status": "DIRTY"})
    token = kiosk_token(kapi)

    # lookup: the room is not ready, and check-in refuses it
    found = lookup(kapi, hotel, token, last_name="Lovelace",
                   confirmation_number=booked.confirmation_number)
    assert found.json["reservation"]["reasons"] == ["room_not_ready"]
    session = found.json["kiosk_session"]
    check_in = f"{base}/reservations/{booked.id}/check-in"
    assert_problem(kapi.post(check_in, {}, token=token, headers=with_session(session)), 409,
                   "room_not_ready")

    # housekeeping releases a room; the kiosk checks the guest into it
    clean = hotel.rooms[2].room_number
    released = kapi.put(f"{base}/housekeeping/{clean}", {"hk_status": "CLEAN"})
    assert released.status_code == 200, released.text
    found = lookup(kapi, hotel, token, last_name="Lovelace",
                   confirmation_number=booked.confirmation_number)
    assert found.json["reservation"]["actions"] == ["CHECK_IN"]
    session = found.json["kiosk_session"]
    checked = kapi.post(check_in, {}, token=token, headers=with_session(session))
    assert checked.status_code == 200, checked.text
    assert checked.json["room_number"] == clean
    folio_id = kapi.get(f"{base}/reservations/{booked.id}/folio").json["id"]
    # the desk's guarantee for the stay: a pre-authorization on the guest folio
    held = kapi.post(f"{base}/folios/{folio_id}/pre-authorizations",
                     {"amount": "250.00", "payment_method_id": "pm_card_visa"})
    assert held.status_code == 201, held.text

    # the key the guest collects opens the door
    key = kapi.post(f"{base}/digital-keys", {"reservation_id": str(booked.id),
                                             "key_type": "CARD"},
                    token=token, headers=with_session(session))
    assert key.status_code == 201 and key.json["status"] == "ACTIVE", key.text
    assert _key_enabled_at_the_lock(kapi, ctx, hotel, platform, booked.id, key.json["id"])

    # an add-on sold (breakfast for two, one night)
    offer = kapi.get(f"{base}/kiosk/add-ons", token=token).json["data"]
    assert [(a["code"], a["price"]) for a in offer] == [("BRKF", "15.00")]
    sold = kapi.post(f"{base}/kiosk/reservations/{booked.id}/add-ons", {"package_code": "BRKF"},
                     token=token, headers=with_session(session))
    assert sold.status_code == 201 and sold.json["amount"] == "30.00", sold.text

    # the folio read: the night check-out posts and the add-on, the pre-authorization covers it
    folio = kapi.get(f"{base}/kiosk/reservations/{booked.id}/folio", token=token,
                     headers=with_session(session))
    assert folio.status_code == 200, folio.text
    owed = folio.json["owed"]
    assert (owed["guest_owes"], owed["pre_authorized"]) == ("130.00", "250.00")
    again = lookup(kapi, hotel, token, last_name="Lovelace",
                   confirmation_number=booked.confirmation_number)
    assert again.json["reservation"]["balance"] == "130.00"
    assert again.json["reservation"]["actions"] == ["COLLECT_KEY", "CHECK_OUT"]
    session = again.json["kiosk_session"]

    # the balance captured, then the check-out
    out = kapi.post(f"{base}/kiosk/reservations/{booked.id}/check-out", {}, token=token,
                    headers=with_session(session))
    assert out.status_code == 200, out.text
    assert out.json["status"] == "CHECKED_OUT"
    captured = [c for c in platform.payments.charges.values() if c["payment_intent"]]
    assert [c["status"] for c in captured] == ["succeeded"]
    closed = kapi.get(f"{base}/reservations/{booked.id}/folio").json
    assert closed["status"] == "CLOSED" and closed["balance_due"] == "0.00"

    # the receipt goes out through the email service (the relay's reaction to the event)
    [event] = [e for e in outbox_rows(ctx) if e.type == "hotel:pms:reservation:checked_out"]
    notifications.send_reservation_email(ctx, booked.id, "checkout_receipt",
                                         email=platform.email, cause=str(event.id))
    sent = platform.email.sent(kapi.env_id)
    assert [(m["to"], m["template"]) for m in sent] == [("ada@example.com", "checkout_receipt")]

    # the session ended with the stay
    assert_problem(kapi.get(f"{base}/kiosk/reservations/{booked.id}/folio", token=token,
                            headers=with_session(session)), 403, "kiosk_session_invalid")


def test_a_walk_in_at_the_kiosk_from_the_search_to_a_key(kapi, ctx, hotel, platform):
    base = f"/v1/properties/{hotel.id}"
    token = kiosk_token(kapi, scopes=[*KIOSK_SCOPES, "hotel:pms:inventory:read"])  # search
    tonight = {"arrival_date": hotel.today.isoformat(),
               "departure_date": (hotel.today + timedelta(days=1)).isoformat(), "adults": 1}
    search = kapi.post(f"{base}/availability", tonight, token=token)
    assert search.status_code == 200, search.text
    room_type = search.json["room_types"][0]
    offer = next(o for o in room_type["offers"] if o["bookable"])
    booked = kapi.post(f"{base}/walk-in", {
        "guest": {"first_name": "John", "last_name": "Keats"}, "nights": 1, "adults": 1,
        "room_type_id": room_type["room_type_id"], "rate_plan_id": offer["rate_plan_id"],
        "payment_method_id": "pm_card_visa"}, token=token)
    assert booked.status_code == 201, booked.text
    assert booked.json["guarantee"]["status"] == "AUTHORIZED"
    assert booked.json["total_amount"] == offer["total"]
    found = lookup(kapi, hotel, token, last_name="Keats",
                   confirmation_number=booked.json["confirmation_number"])
    assert found.json["reservation"]["actions"] == ["CHECK_IN"]
    session = found.json["kiosk_session"]
    rid = booked.json["id"]
    checked = kapi.post(f"{base}/reservations/{rid}/check-in", {}, token=token,
                        headers=with_session(session))
    assert checked.status_code == 200, checked.text
    key = kapi.post(f"{base}/digital-keys", {"reservation_id": rid, "key_type": "MOBILE"},
                    token=token, headers=with_session(session))
    assert key.status_code == 201 and key.json["status"] == "ACTIVE", key.text
    assert _key_enabled_at_the_lock(kapi, ctx, hotel, platform, rid, key.json["id"])
    with read_scope(ctx):
        assert Reservation.get_by_id(rid).status == "CHECKED_IN"
