"""Inventory, sell limits and maintenance over HTTP (both backends)."""

from __future__ import annotations

import uuid
from datetime import date

import pytest

from pms.db.uow import unit_of_work
from pms.domain.stay import stay_nights
from pms.services.inventory.inventory import take_rooms
from tests.helpers import assert_problem, audit_actions, counts, outbox_types

pytestmark = pytest.mark.usefixtures("database")


@pytest.fixture
def hotel(api):
    prop = api.post("/v1/properties", {"propertyCode": "INV", "timezone": "Europe/Berlin",
                                       "currencyCode": "EUR",
                                       # its stays are in 2030: the longest horizon
                                       "bookingHorizonDays": 3660}).json
    base = f"/v1/properties/{prop['id']}"
    rt = api.post(base + "/room-types", {"code": "DBL", "name": "Double"}).json
    rooms = [api.post(base + "/rooms", {"room_number": n, "room_type_id": rt["id"]}).json
             for n in ("101", "102")]
    rp = api.post(base + "/rate-plans", {"code": "BAR", "name": "Best"}).json
    api.put(f"{base}/rate-plans/{rp['id']}/rates", {"rates": [
        {"room_type_id": rt["id"], "from_date": "2030-01-01", "to_date": "2030-12-31",
         "amount": "100.00"}]})
    return {"prop": prop, "base": base, "rt": rt, "rooms": rooms, "rp": rp}


def _inventory(api, hotel, from_date="2030-03-01", to_date="2030-03-03"):
    resp = api.get(hotel["base"] + "/inventory", params={"from_date": from_date, "to_date": to_date})
    assert resp.status_code == 200, resp.text
    return resp.json["data"]


def _sell(ctx, hotel, arrival, departure, count=1):
    with unit_of_work(ctx):
        take_rooms(uuid.UUID(hotel["prop"]["id"]), uuid.UUID(hotel["rt"]["id"]),
                   stay_nights(arrival, departure), count)


def _book(api, hotel, arrival="2030-03-01", departure="2030-03-03"):
    resp = api.post(hotel["base"] + "/reservations", {
        "room_type_id": hotel["rt"]["id"], "rate_plan_id": hotel["rp"]["id"],
        "arrival_date": arrival, "departure_date": departure, "guest": {"last_name": "Hopper"}})
    assert resp.status_code == 201, resp.text
    return resp.json


def test_inventory_counts_rooms_of_the_type(api, hotel):
    days = _inventory(api, hotel)
    assert len(days) == 3
    assert days[0] == {"room_type_id": hotel["rt"]["id"], "date": "2030-03-01", "physical": 2,
                       "out_of_order": 0, "out_of_service": 0, "sell_limit": None, "sold": 0,
                       "sellable": 2}


def test_physical_follows_rooms_added_later(api, hotel):
    _inventory(api, hotel)
    api.post(hotel["base"] + "/rooms", {"room_number": "103", "room_type_id": hotel["rt"]["id"]})
    assert _inventory(api, hotel)[0]["physical"] == 3


def test_sold_rooms_lower_sellable(api, ctx, hotel):
    _sell(ctx, hotel, date(2030, 3, 2), date(2030, 3, 3))
    assert [d["sellable"] for d in _inventory(api, hotel)] == [2, 1, 2]


def test_sell_limit_lowers_sellable_and_writes_one_event(api, ctx, hotel):
    before = counts(ctx)
    resp = api.put(hotel["base"] + "/inventory", {"room_type_id": hotel["rt"]["id"],
                                                  "from_date": "2030-03-01", "to_date": "2030-03-02",
                                                  "sell_limit": 1})
    assert resp.status_code == 200, resp.text
    assert [d["sellable"] for d in resp.json["data"]] == [1, 1]
    assert counts(ctx) == (before[0] + 1, before[1] + 1)
    assert outbox_types(ctx)[-1] == "hotel:pms:inventory:updated"
    assert audit_actions(ctx)[-1] == "inventory.updated"
    assert [d["sellable"] for d in _inventory(api, hotel)] == [1, 1, 2]


def test_sell_limit_never_raises_availability_above_physical(api, hotel):
    api.put(hotel["base"] + "/inventory", {"room_type_id": hotel["rt"]["id"],
                                           "from_date": "2030-03-01", "to_date": "2030-03-01",
                                           "sell_limit": 50})
    assert _inventory(api, hotel)[0]["sellable"] == 2


def test_sell_limit_below_sold_stops_sales_without_touching_reservations(api, ctx, hotel):
    _sell(ctx, hotel, date(2030, 3, 1), date(2030, 3, 2), count=2)
    resp = api.put(hotel["base"] + "/inventory", {"room_type_id": hotel["rt"]["id"],
                                                  "from_date": "2030-03-01", "to_date": "2030-03-01",
                                                  "sell_limit": 1})
    assert resp.status_code == 200
    day = _inventory(api, hotel)[0]
    assert day["sold"] == 2 and day["sellable"] == 0


def test_null_sell_limit_clears_it(api, hotel):
    path = hotel["base"] + "/inventory"
    body = {"room_type_id": hotel["rt"]["id"], "from_date": "2030-03-01", "to_date": "2030-03-01"}
    api.put(path, {**body, "sell_limit": 0})
    api.put(path, {**body, "sell_limit": None})
    assert _inventory(api, hotel)[0]["sellable"] == 2


@pytest.mark.parametrize("over", [
    {"sell_limit": -1},
    {"to_date": "2030-02-01"},
    {"room_type_id": str(uuid.uuid4())},
    {"from_date": "03/01/2030"},
    {"env_id": str(uuid.uuid4())},
])
def test_bad_sell_limit_input_is_422(api, hotel, over):
    body = {"room_type_id": hotel["rt"]["id"], "from_date": "2030-03-01", "to_date": "2030-03-01",
            "sell_limit": 1}
    body.update(over)
    assert_problem(api.put(hotel["base"] + "/inventory", body), 422)


def test_inventory_range_over_a_year_is_422(api, hotel):
    resp = api.get(hotel["base"] + "/inventory", params={"from_date": "2030-01-01",
                                                         "to_date": "2031-06-01"})
    assert_problem(resp, 422)


# -- maintenance --------------------------------------------------------------------------------

def _maintain(api, hotel, room=0, kind="OUT_OF_ORDER", from_date="2030-03-01",
              to_date="2030-03-02", **over):
    body = {"room_id": hotel["rooms"][room]["id"], "kind": kind, "from_date": from_date,
            "to_date": to_date, "reason": "leaking pipe"}
    body.update(over)
    return api.post(hotel["base"] + "/maintenance", body)


def test_out_of_order_takes_the_room_out_of_sale(api, ctx, hotel):
    before = counts(ctx)
    resp = _maintain(api, hotel)
    assert resp.status_code == 201, resp.text
    assert resp.json["room_number"] == "101" and resp.json["active"] is True
    assert counts(ctx) == (before[0] + 1, before[1] + 1)
    assert outbox_types(ctx)[-1] == "hotel:pms:maintenance:created"
    days = _inventory(api, hotel)
    assert [(d["out_of_order"], d["sellable"]) for d in days] == [(1, 1), (1, 1), (0, 2)]


def test_out_of_service_counts_separately(api, hotel):
    _maintain(api, hotel, kind="OUT_OF_SERVICE", room_number=None)
    day = _inventory(api, hotel)[0]
    assert (day["out_of_order"], day["out_of_service"], day["sellable"]) == (0, 1, 1)


def test_maintenance_by_room_number(api, hotel):
    resp = _maintain(api, hotel, room_id=None, room_number="102")
    assert resp.status_code == 201 and resp.json["room_number"] == "102"


def test_availability_never_exceeds_rooms_in_service(api, hotel):
    _maintain(api, hotel, room=0)
    _maintain(api, hotel, room=1, kind="OUT_OF_SERVICE")
    search = api.post(hotel["base"] + "/availability",
                      {"arrival_date": "2030-03-01", "departure_date": "2030-03-02"}).json
    assert search["room_types"][0]["available"] == 0
    assert search["room_types"][0]["offers"][0]["reasons"][0]["code"] == "sold_out"


def test_ending_maintenance_gives_the_room_back(api, ctx, hotel):
    created = _maintain(api, hotel).json
    path = f"{hotel['base']}/maintenance/{created['id']}"
    assert api.delete(path).status_code == 204
    assert api.get(path).json["active"] is False
    assert _inventory(api, hotel)[0]["sellable"] == 2
    assert outbox_types(ctx)[-1] == "hotel:pms:maintenance:deleted"
    before = counts(ctx)
    assert api.delete(path).status_code == 204          # a repeat is a no-op
    assert counts(ctx) == before


def test_out_of_order_on_sold_out_nights_is_409_with_the_nights(api, ctx, hotel):
    _sell(ctx, hotel, date(2030, 3, 2), date(2030, 3, 3), count=2)
    before = counts(ctx)
    body = assert_problem(_maintain(api, hotel), 409, "maintenance_conflict")
    assert body["nights"] == ["2030-03-02"]
    assert counts(ctx) == before
    assert _inventory(api, hotel)[0]["out_of_order"] == 0


def test_out_of_order_conflict_lists_the_reservations_in_the_way(api, hotel):
    first, second = _book(api, hotel), _book(api, hotel)
    body = assert_problem(_maintain(api, hotel), 409, "maintenance_conflict")
    assert {r["id"] for r in body["reservations"]} == {first["id"], second["id"]}
    assert body["nights"] == ["2030-03-01", "2030-03-02"]


def test_room_held_by_a_reservation_cannot_go_out_of_order(api, hotel):
    booking = _book(api, hotel)
    assigned = api.put(f"{hotel['base']}/reservations/{booking['id']}/room", {"room_number": "101"})
    assert assigned.status_code == 200, assigned.text
    body = assert_problem(_maintain(api, hotel, room=0), 409, "maintenance_conflict")
    assert [r["id"] for r in body["reservations"]] == [booking["id"]]
    assert _maintain(api, hotel, room=1).status_code == 201     # the other room is free


def test_overlapping_maintenance_on_one_room_is_409(api, hotel):
    _maintain(api, hotel)
    assert_problem(_maintain(api, hotel, from_date="2030-03-02", to_date="2030-03-05"), 409,
                   "maintenance_conflict")


def test_maintenance_list_and_filters(api, hotel):
    a = _maintain(api, hotel, room=0).json
    b = _maintain(api, hotel, room=1, from_date="2030-04-01", to_date="2030-04-01").json
    api.delete(f"{hotel['base']}/maintenance/{b['id']}")
    path = hotel["base"] + "/maintenance"
    assert {m["id"] for m in api.get(path).json["data"]} == {a["id"], b["id"]}
    assert [m["id"] for m in api.get(path, params={"active": "true"}).json["data"]] == [a["id"]]
    assert [m["id"] for m in api.get(path, params={"room_id": hotel["rooms"][1]["id"]}).json["data"]] \
        == [b["id"]]


@pytest.mark.parametrize("over", [
    {"kind": "BROKEN"},
    {"to_date": "2030-02-01"},
    {"room_id": None},                                  # neither room_id nor room_number
    {"room_number": "101"},                             # both
    {"room_id": str(uuid.uuid4())},
    {"from_date": "2030-3-1"},
])
def test_bad_maintenance_input_is_422(api, hotel, over):
    assert_problem(_maintain(api, hotel, **over), 422)


def test_another_propertys_room_is_422(api, hotel):
    other = api.post("/v1/properties", {"propertyCode": "INV2", "timezone": "UTC",
                                        "currencyCode": "EUR"}).json
    rt = api.post(f"/v1/properties/{other['id']}/room-types", {"code": "X", "name": "X"}).json
    room = api.post(f"/v1/properties/{other['id']}/rooms",
                    {"room_number": "9", "room_type_id": rt["id"]}).json
    assert_problem(_maintain(api, hotel, room_id=room["id"]), 422)


def test_maintenance_of_another_env_is_404(api, hotel):
    created = _maintain(api, hotel).json
    other = api.for_env(uuid.uuid4())
    assert_problem(other.get(f"{hotel['base']}/maintenance/{created['id']}"), 404)
    assert_problem(other.delete(f"{hotel['base']}/maintenance/{created['id']}"), 404)


def test_inventory_write_needs_inventory_write_scope(api, hotel, settings):
    from pms.devkeys import mint_token

    token = mint_token(settings, env_id=api.env_id, scopes=["hotel:pms:inventory:read"])
    resp = api.post(hotel["base"] + "/maintenance",
                    {"room_number": "101", "kind": "OUT_OF_ORDER", "from_date": "2030-03-01",
                     "to_date": "2030-03-01"}, token=token)
    assert_problem(resp, 403)
