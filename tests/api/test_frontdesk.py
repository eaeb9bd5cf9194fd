"""Front desk over HTTP: check-in/out with the folio rules, revert, split, room, in-house,
boarding pass, folio reads, scopes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.factories import make_booking_hotel, pay_folio, reservation_body
from tests.helpers import assert_problem, counts


@pytest.fixture
def hotel(ctx, database):
    return make_booking_hotel(ctx, rooms=2, amount="150.00")


def _new(api, hotel, **over):
    resp = api.post(f"/v1/properties/{hotel.id}/reservations", reservation_body(hotel, **over))
    assert resp.status_code == 201, resp.text
    return resp.json


def _url(hotel, res, tail=""):
    return f"/v1/properties/{hotel.id}/reservations/{res['id']}{tail}"


def test_check_in_then_folio_is_open_and_found_by_room(api, hotel):
    res = _new(api, hotel)
    assert_problem(api.get(_url(hotel, res, "/folio")), 404)
    checked = api.post(_url(hotel, res, "/check-in"), {"room_number": "101"})
    assert checked.status_code == 200, checked.text
    assert checked.json["status"] == "CHECKED_IN" and checked.json["room_number"] == "101"
    folio = api.get(_url(hotel, res, "/folio")).json
    assert (folio["status"], folio["room_number"], folio["posted_balance"]) == ("OPEN", "101", "0.00")
    by_room = api.get(f"/v1/properties/{hotel.id}/folios", params={"room_number": "101"})
    assert by_room.status_code == 200 and by_room.json["id"] == folio["id"]
    assert_problem(api.get(f"/v1/properties/{hotel.id}/folios", params={"room_number": "100"}), 404)
    assert_problem(api.get(f"/v1/properties/{hotel.id}/folios"), 422)


def test_check_out_with_balance_is_409_folio_not_closable(api, ctx, hotel):
    res = _new(api, hotel)
    api.post(_url(hotel, res, "/check-in"), {})
    before = counts(ctx)
    problem = assert_problem(api.post(_url(hotel, res, "/check-out")), 409, "folio_not_closable")
    assert (problem["balance"], problem["currency"]) == ("150.00", "EUR")
    assert counts(ctx) == before
    assert api.get(_url(hotel, res)).json["status"] == "CHECKED_IN"


def test_check_out_after_payment_closes_folio(api, ctx, hotel):
    from pms.services.reservations.reservations import get_reservation

    res = _new(api, hotel)
    api.post(_url(hotel, res, "/check-in"), {})
    pay_folio(ctx, get_reservation(ctx, hotel.id, res["id"]), "150.00")
    out = api.post(_url(hotel, res, "/check-out"))
    assert out.status_code == 200, out.text
    assert out.json["status"] == "CHECKED_OUT"
    folio = api.get(_url(hotel, res, "/folio")).json
    assert (folio["status"], folio["posted_balance"]) == ("CLOSED", "0.00")
    assert [c["category"] for c in folio["charges"]] == ["room"]
    reverted = api.post(_url(hotel, res, "/revert"), {"reason": "guest forgot keys"})
    assert reverted.status_code == 200 and reverted.json["status"] == "CHECKED_IN"
    assert_problem(api.post(_url(hotel, res, "/revert"), {}), 422)


def test_check_out_of_a_confirmed_reservation_is_409(api, hotel):
    res = _new(api, hotel)
    assert_problem(api.post(_url(hotel, res, "/check-out")), 409, "invalid_transition")


def test_check_in_refuses_unknown_and_occupied_rooms(api, hotel):
    a, b = _new(api, hotel), _new(api, hotel)
    assert_problem(api.post(_url(hotel, a, "/check-in"), {"room_number": "999"}), 422)
    assert api.post(_url(hotel, a, "/check-in"), {"room_number": "100"}).status_code == 200
    assert_problem(api.post(_url(hotel, b, "/check-in"), {"room_number": "100"}), 409,
                   "room_unavailable")


def test_in_house_list_and_boarding_pass(api, hotel):
    a, b = _new(api, hotel), _new(api, hotel)
    api.post(_url(hotel, a, "/check-in"), {"room_number": "100"})
    listed = api.get(f"/v1/properties/{hotel.id}/in-house").json["data"]
    assert [r["id"] for r in listed] == [a["id"]]
    bp = api.get(_url(hotel, a, "/boarding-pass")).json
    assert (bp["room_number"], bp["key_count"], bp["guest_last_name"]) == ("100", 0, "Lovelace")
    assert bp["arrival_date"] == hotel.today.isoformat()
    assert api.get(_url(hotel, b, "/boarding-pass")).json["room_number"] is None


def test_room_assignment_and_split_routes(api, hotel):
    res = _new(api, hotel, departure_date=(hotel.today + timedelta(days=3)).isoformat())
    assigned = api.put(_url(hotel, res, "/room"), {"room_number": "101"})
    assert assigned.status_code == 200 and assigned.json["room_number"] == "101"
    split = api.post(_url(hotel, res, "/split"),
                     {"split_date": (hotel.today + timedelta(days=2)).isoformat()})
    assert split.status_code == 201, split.text
    first, second = split.json["reservation"], split.json["new_reservation"]
    assert first["departure_date"] == second["arrival_date"]
    assert second["room_number"] == "101"
    assert_problem(api.post(_url(hotel, res, "/split"), {"split_date": "2026-13-01"}), 422)


def test_no_show_route(api, hotel):
    res = _new(api, hotel)
    resp = api.post(_url(hotel, res, "/no-show"))
    assert resp.status_code == 200 and resp.json["status"] == "NO_SHOW"
    assert_problem(api.post(_url(hotel, res, "/check-in"), {}), 409, "invalid_transition")


def test_frontdesk_scope_is_required(api, settings, hotel):
    from pms.devkeys import mint_token

    res = _new(api, hotel)
    token = mint_token(settings, env_id=api.env_id, scopes=["hotel:pms:reservations:write"])
    assert_problem(api.post(_url(hotel, res, "/check-in"), {}, token=token), 403)


def test_guest_session_sees_only_its_own_reservations(api, ctx, settings, hotel):
    from pms.devkeys import mint_token
    from tests.factories import make_profile

    guest = make_profile(ctx, hotel.id)
    mine = _new(api, hotel, guest_profile_id=str(guest.id), guest=None)
    other = _new(api, hotel)
    token = mint_token(settings, env_id=api.env_id, client_kind="guest", holder_id=str(guest.id))
    assert api.get(_url(hotel, mine), token=token).status_code == 200
    assert_problem(api.get(_url(hotel, other), token=token), 404)
    listed = api.get(f"/v1/properties/{hotel.id}/reservations", token=token).json["data"]
    assert [r["id"] for r in listed] == [mine["id"]]
