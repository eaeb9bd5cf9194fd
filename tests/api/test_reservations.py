"""Reservations over HTTP: every SPEC rule of the reservation section, and bad input as 4xx."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pms.db.uow import read_scope
from pms.models import Reservation
from pms.models.inventory import InventoryDay
from tests.factories import (
    make_booking_hotel,
    make_profile,
    make_property,
    make_room_type,
    reservation_body,
)
from tests.helpers import assert_problem, counts, outbox_types


@pytest.fixture
def hotel(ctx, database):
    return make_booking_hotel(ctx, rooms=2, amount="120.00")


def _base(hotel):
    return f"/v1/properties/{hotel.id}/reservations"


def _sold(ctx, hotel, night):
    with read_scope(ctx):
        row = InventoryDay.get_or_none((InventoryDay.room_type == hotel.room_type.id)
                                       & (InventoryDay.date == night))
        return row.sold if row else 0


def _book(api, hotel, **over):
    return api.post(_base(hotel), reservation_body(hotel, **over))


def test_create_reservation_is_confirmed_priced_and_sells_the_nights(api, ctx, hotel):
    resp = _book(api, hotel)
    assert resp.status_code == 201, resp.text
    body = resp.json
    assert body["status"] == "CONFIRMED"
    assert body["total_amount"] == "240.00" and body["currency"] == "EUR"
    assert [n["amount"] for n in body["nightly_prices"]] == ["120.00", "120.00"]
    assert len(body["confirmation_number"]) >= 8
    assert resp.headers["location"].endswith(body["id"])
    assert _sold(ctx, hotel, hotel.today) == 1
    assert outbox_types(ctx)[-1] == "hotel:pms:reservation:created"


def test_committed_reservation_has_exactly_one_outbox_and_audit_row(api, ctx, hotel):
    before = counts(ctx)
    assert _book(api, hotel).status_code == 201
    assert counts(ctx) == (before[0] + 1, before[1] + 1)


def test_duplicate_confirmation_number_folds_into_one_reservation(api, ctx, hotel):
    first = _book(api, hotel, confirmation_number="BK-778899")
    again = _book(api, hotel, confirmation_number="BK-778899")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json["id"] == first.json["id"]
    assert _sold(ctx, hotel, hotel.today) == 1


def test_idempotency_key_replays_the_create(api, ctx, hotel):
    headers = {"Idempotency-Key": "k-123"}
    one = api.post(_base(hotel), reservation_body(hotel), headers=headers)
    two = api.post(_base(hotel), reservation_body(hotel), headers=headers)
    assert one.status_code == two.status_code == 201
    assert two.headers.get("idempotent-replayed") == "true"
    assert one.json["id"] == two.json["id"]
    assert _sold(ctx, hotel, hotel.today) == 1


def test_last_room_then_room_type_unavailable(api, hotel):
    assert _book(api, hotel).status_code == 201
    assert _book(api, hotel).status_code == 201
    assert_problem(_book(api, hotel), 409, "room_type_unavailable")


@pytest.mark.parametrize("over, code", [
    ({"departure_date": "ARRIVAL"}, "invalid_stay_dates"),                  # zero nights
    ({"arrival_date": "PLUS3", "departure_date": "PLUS1"}, "invalid_stay_dates"),  # after
    ({"arrival_date": "MINUS1"}, "arrival_in_past"),
    ({"adults": 3}, "occupancy_exceeded"),
    ({"adults": 0}, "validation_failed"),
    ({"arrival_date": "2026-02-30"}, "validation_failed"),                  # malformed date
    ({"arrival_date": "tomorrow"}, "validation_failed"),
    ({"rate_plan_id": "00000000-0000-4000-8000-000000000000"}, "validation_failed"),
    ({"room_type_id": "00000000-0000-4000-8000-000000000000"}, "validation_failed"),
    ({"env_id": "00000000-0000-4000-8000-000000000000"}, "validation_failed"),
    ({"guest": None}, "validation_failed"),
])
def test_bad_reservation_input_is_422(api, hotel, over, code):
    today = hotel.today
    subst = {"ARRIVAL": today, "PLUS1": today + timedelta(days=1),
             "PLUS3": today + timedelta(days=3), "MINUS1": today - timedelta(days=1)}
    body = reservation_body(hotel)
    for key, value in over.items():
        body[key] = subst[value].isoformat() if value in subst else value
    assert_problem(api.post(_base(hotel), body), 422, code)


def test_another_propertys_room_type_is_refused(api, ctx, hotel):
    other = make_property(ctx)
    foreign = make_room_type(ctx, other.id)
    body = reservation_body(hotel, room_type_id=str(foreign.id))
    problem = assert_problem(api.post(_base(hotel), body), 422)
    assert problem["errors"][0]["field"] == "room_type_id"


def test_get_list_and_filters(api, ctx, hotel):
    profile = make_profile(ctx, hotel.id, last_name="Hopper")
    later = hotel.today + timedelta(days=5)
    a = _book(api, hotel, guest_profile_id=str(profile.id), guest=None).json
    b = _book(api, hotel, guest={"last_name": "Turing"}, arrival_date=later.isoformat(),
              departure_date=(later + timedelta(days=1)).isoformat()).json
    assert api.get(f"{_base(hotel)}/{a['id']}").json["guest_last_name"] == "Hopper"

    def ids(**params):
        resp = api.get(_base(hotel), params=params)
        assert resp.status_code == 200, resp.text
        return {r["id"] for r in resp.json["data"]}

    assert ids() == {a["id"], b["id"]}
    assert ids(guest_profile_id=str(profile.id)) == {a["id"]}
    assert ids(last_name="turing") == {b["id"]}
    assert ids(confirmation=b["confirmation_number"]) == {b["id"]}
    assert api.post(f"{_base(hotel)}/{b['id']}/cancel").status_code == 200
    assert ids(upcoming="true") == {a["id"]}


def test_list_is_paginated_with_a_cursor(api, hotel):
    for _ in range(2):
        _book(api, hotel)
    first = api.get(_base(hotel), params={"limit": 1}).json
    assert len(first["data"]) == 1 and first["next_cursor"]
    second = api.get(_base(hotel), params={"limit": 1, "cursor": first["next_cursor"]}).json
    assert second["data"][0]["id"] != first["data"][0]["id"]


def test_edit_changes_dates_and_moves_inventory(api, ctx, hotel):
    res = _book(api, hotel).json
    new_arrival = hotel.today + timedelta(days=3)
    resp = api.put(f"{_base(hotel)}/{res['id']}", {
        "arrival_date": new_arrival.isoformat(),
        "departure_date": (new_arrival + timedelta(days=1)).isoformat(), "adults": 1})
    assert resp.status_code == 200, resp.text
    assert resp.json["total_amount"] == "120.00" and resp.json["adults"] == 1
    assert _sold(ctx, hotel, hotel.today) == 0
    assert _sold(ctx, hotel, new_arrival) == 1
    assert outbox_types(ctx)[-1] == "hotel:pms:reservation:updated"


def test_edit_that_does_not_fit_changes_nothing(api, ctx, hotel):
    res = _book(api, hotel).json
    resp = api.put(f"{_base(hotel)}/{res['id']}", {"adults": 5})
    assert_problem(resp, 422, "occupancy_exceeded")
    assert api.get(f"{_base(hotel)}/{res['id']}").json["adults"] == 2


@pytest.mark.parametrize("make_terminal", ["cancel", "no-show"])
def test_edit_of_terminal_reservation_is_409(api, hotel, make_terminal):
    res = _book(api, hotel).json
    assert api.post(f"{_base(hotel)}/{res['id']}/{make_terminal}").status_code == 200
    assert_problem(api.put(f"{_base(hotel)}/{res['id']}", {"adults": 1}), 409,
                   "reservation_not_editable")


def test_cancel_releases_inventory_and_cannot_repeat(api, ctx, hotel):
    res = _book(api, hotel).json
    resp = api.post(f"{_base(hotel)}/{res['id']}/cancel")
    assert resp.status_code == 200 and resp.json["status"] == "CANCELLED"
    assert _sold(ctx, hotel, hotel.today) == 0
    assert_problem(api.post(f"{_base(hotel)}/{res['id']}/cancel"), 409, "invalid_transition")


def test_cancellation_fee_follows_the_rate_plan_policy(api, ctx, database):
    hotel = make_booking_hotel(ctx, rooms=1, amount="80.00", rate_plan={
        "cancellation_policy": {"fee_type": "FIRST_NIGHT", "deadline_hours": 48}})
    inside = api.post(_base(hotel), reservation_body(hotel)).json   # arrives today: fee
    resp = api.post(f"{_base(hotel)}/{inside['id']}/cancel")
    assert resp.json["cancellation_fee"] == "80.00"
    far = hotel.today + timedelta(days=20)
    outside = api.post(_base(hotel), reservation_body(
        hotel, arrival_date=far.isoformat(),
        departure_date=(far + timedelta(days=1)).isoformat())).json
    assert api.post(f"{_base(hotel)}/{outside['id']}/cancel").json["cancellation_fee"] == "0.00"


def test_pre_check_in_stores_registration(api, ctx, hotel):
    res = _book(api, hotel).json
    resp = api.post(f"{_base(hotel)}/{res['id']}/pre-check-in", {
        "nationality": "DE", "document_type": "PASSPORT", "document_number": "C01X00T47",
        "estimated_arrival_time": "18:30", "terms_accepted": True})
    assert resp.status_code == 200, resp.text
    assert resp.json["pre_checked_in"] is True
    with read_scope(ctx):
        assert Reservation.get_by_id(res["id"]).registration["nationality"] == "DE"
    assert outbox_types(ctx)[-1] == "hotel:pms:reservation:registration_stored"
    assert_problem(api.post(f"{_base(hotel)}/{res['id']}/pre-check-in",
                            {"terms_accepted": False}), 422)


def test_walk_in_is_confirmed_walkin_kiosk_then_checks_in(api, ctx, hotel):
    resp = api.post(f"/v1/properties/{hotel.id}/walk-in",
                    {"guest": {"first_name": "Grace", "last_name": "Hopper"}, "nights": 1})
    assert resp.status_code == 201, resp.text
    body = resp.json
    assert (body["status"], body["source"], body["channel"]) == ("CONFIRMED", "WALKIN", "KIOSK")
    assert body["arrival_date"] == hotel.today.isoformat()
    checked = api.post(f"{_base(hotel)}/{body['id']}/check-in", {})
    assert checked.status_code == 200 and checked.json["status"] == "CHECKED_IN"


def test_walk_in_needs_a_guest_name_and_an_available_room_type(api, hotel):
    assert_problem(api.post(f"/v1/properties/{hotel.id}/walk-in", {"nights": 1}), 422)
    for _ in range(2):
        assert _book(api, hotel, departure_date=(hotel.today + timedelta(days=1)).isoformat()
                     ).status_code == 201
    assert_problem(api.post(f"/v1/properties/{hotel.id}/walk-in",
                            {"guest": {"last_name": "Late"}}), 409, "room_type_unavailable")


def test_messages_comments_and_service_requests(api, ctx, hotel):
    res = _book(api, hotel).json
    base = f"{_base(hotel)}/{res['id']}"
    out = api.post(f"{base}/messages", {"direction": "outgoing", "body": "Welcome!"})
    inc = api.post(f"{base}/messages", {"direction": "incoming", "body": "Late arrival"})
    assert (out.json["status"], inc.json["status"]) == ("QUEUED", "RECEIVED")
    assert_problem(api.post(f"{base}/messages", {"direction": "sideways", "body": "x"}), 422)
    assert len(api.get(f"{base}/messages").json["data"]) == 2
    sr = api.post(f"{base}/service-requests", {"kind": "towels", "description": "two more"})
    assert sr.status_code == 201 and sr.json["status"] == "OPEN"
    assert api.get(f"{base}/service-requests").json["data"][0]["kind"] == "towels"
    assert api.post(f"{base}/comments", {"text": "VIP"}).status_code == 201
    assert api.get(f"{base}/comments").json["data"][0]["text"] == "VIP"
    assert "hotel:pms:service_request:created" in outbox_types(ctx)


def test_another_envs_reservation_is_404(api, hotel):
    res = _book(api, hotel).json
    import uuid

    other = api.for_env(uuid.uuid4())
    assert_problem(other.get(f"{_base(hotel)}/{res['id']}"), 404)


def test_reservation_scope_is_required(api, settings, hotel):
    from pms.devkeys import mint_token

    token = mint_token(settings, env_id=api.env_id, scopes=["hotel:pms:reservations:read"])
    assert_problem(api.post(_base(hotel), reservation_body(hotel), token=token), 403)
