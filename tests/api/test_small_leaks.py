"""through the HTTP API on both backends: an availability search in December
9999 is a 422 (it was a 500 on PostgreSQL), a card number sent as a JSON key is not echoed in
the 422, and a card number in a path does not reach the access line or the error lines."""

from __future__ import annotations

import logging
import uuid

import pytest

from pms.logmask import mask_card_numbers
from tests.api.test_card_data import dashed, spaced
from tests.helpers import assert_problem
from tests.ops.test_request_path import _lines, json_stream  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("database")

CARD = "4111111111111111"


@pytest.fixture
def hotel(api):
    """Two room types and two public plans: the PostgreSQL search reads several (plan, room
    type) through the month cache of rates, where December 9999 broke."""
    prop = api.post("/v1/properties", {"propertyCode": "Y9999", "timezone": "UTC",
                                       "currencyCode": "EUR"}).json
    base = f"/v1/properties/{prop['id']}"
    types = [api.post(base + "/room-types", {"code": code, "name": code, "max_occupancy": 2}).json
             for code in ("DBL", "TWN")]
    for number, rt in (("101", types[0]), ("102", types[1])):
        api.post(base + "/rooms", {"room_number": number, "room_type_id": rt["id"]})
    for code in ("BAR", "FLEX"):
        plan = api.post(base + "/rate-plans", {"code": code, "name": code}).json
        for rt in types:
            resp = api.put(f"{base}/rate-plans/{plan['id']}/rates", {"rates": [
                {"room_type_id": rt["id"], "from_date": "9998-12-01", "to_date": "9998-12-31",
                 "amount": "90.00"}]})
            assert resp.status_code == 200, resp.text
    return base


@pytest.mark.parametrize("arrival,departure,field", [
    ("9999-12-30", "9999-12-31", "arrival_date"),
    ("9999-12-01", "9999-12-05", "arrival_date"),
    ("9998-12-30", "9999-01-02", "departure_date"),
])
def test_an_availability_search_in_year_9999_is_a_422(api, hotel, arrival, departure, field):
    body = {"arrival_date": arrival, "departure_date": departure, "adults": 2}
    for resp in (api.post(hotel + "/availability", body),
                 api.get("/v1/availability", params=body)):
        problem = assert_problem(resp, 422, "date_out_of_range")
        assert problem["errors"][0]["field"] == field
    # the last searchable stay still answers (both backends, the month cache on PostgreSQL)
    resp = api.post(hotel + "/availability", {"arrival_date": "9998-12-29",
                                              "departure_date": "9998-12-31", "adults": 2})
    assert resp.status_code == 200, resp.text
    assert {o["rate_plan_code"] for rt in resp.json["room_types"] for o in rt["offers"]} == {
        "BAR", "FLEX"}


@pytest.mark.parametrize("body", [
    {CARD: "x"},
    {"propertyCode": "K1", "timezone": "UTC", "currencyCode": "EUR", spaced(CARD): 1},
    {"propertyCode": "K1", "timezone": "UTC", "currencyCode": "EUR",
     "settings": {dashed(CARD): {"a": "b"}}},
    {"list": [{f"pan {CARD}": None}]},
])
def test_a_card_number_sent_as_a_json_key_is_not_echoed(api, body):
    resp = api.post("/v1/properties", body)
    problem = assert_problem(resp, 422, "card_data_refused")
    for form in (CARD, spaced(CARD), dashed(CARD), "1111"):
        assert form not in resp.text
    assert all("<card number>" in e["field"] for e in problem["errors"]), problem


def test_a_card_number_in_a_path_is_masked_in_the_access_line(api, json_stream, caplog):  # noqa: F811
    prop = api.post("/v1/properties", {"propertyCode": "PATH1", "timezone": "UTC",
                                       "currencyCode": "EUR"}).json["id"]
    paths = [f"/v1/properties/{prop}/rooms/{CARD}",
             f"/v1/properties/{prop}/rooms/{spaced(CARD)}",
             f"/v1/properties/{prop}/rooms/{dashed(CARD)}",
             f"/v1/properties/{prop}/rooms/a{CARD}b",
             f"/v1/properties/{CARD}"]
    for path in paths:
        assert api.get(path).status_code in (400, 404, 422)
    access = [line for line in _lines(json_stream) if line["logger"] == "pms.access"]
    logged = [a["path"] for a in access][-len(paths):]
    assert len(logged) == len(paths)
    text = json_stream.getvalue()
    for form in (CARD, spaced(CARD), dashed(CARD)):
        assert form not in text
    assert logged[0] == f"/v1/properties/{prop}/rooms/{'*' * 16}"  # the property id stays
    assert logged[-1] == f"/v1/properties/{'*' * 16}"


def test_a_card_number_in_a_path_is_masked_in_the_error_lines(api, caplog, monkeypatch):
    """A room number that is a card number, on a request that fails unexpectedly (500): the
    error line logs the path masked."""
    from pms.services.housekeeping import housekeeping

    def boom(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise RuntimeError("unexpected")

    prop = api.post("/v1/properties", {"propertyCode": "PATH2", "timezone": "UTC",
                                       "currencyCode": "EUR"}).json["id"]
    monkeypatch.setattr(housekeeping, "set_hk_status", boom)
    caplog.set_level(logging.INFO)
    caplog.clear()
    resp = api.put(f"/v1/properties/{prop}/housekeeping/{CARD}", {"hk_status": "CLEAN"})
    assert_problem(resp, 500, "internal_error")
    records = [r for r in caplog.records if getattr(r, "path", None)]
    assert {r.name for r in records} == {"pms.access", "pms.api"}
    assert all(r.path == f"/v1/properties/{prop}/housekeeping/{'*' * 16}" for r in records)
    assert CARD not in "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)


@pytest.mark.parametrize("text,masked", [
    (f"/v1/x/{CARD}", "/v1/x/" + "*" * 16),
    ("/v1/x/4111 1111 1111 1111/y", "/v1/x/**** **** **** ****/y"),
    ("/v1/x/" + "４１１１" * 4, "/v1/x/" + "*" * 16),        # full-width digits
    ("/v1/x/1234567890123", "/v1/x/" + "*" * 13),             # 13 digits, checksum or not
    ("/v1/x/123456789012", "/v1/x/123456789012"),             # 12: left alone
    ("/v1/x/101", "/v1/x/101"),
])
def test_mask_card_numbers(text, masked):
    assert mask_card_numbers(text) == masked


def test_mask_card_numbers_leaves_uuids_alone():
    for _ in range(200):
        ids = [str(uuid.uuid4()) for _ in range(3)]
        path = "/v1/properties/{}/rooms/{}/x/{}".format(*ids)
        assert mask_card_numbers(path) == path
    digits = "12345678-1234-1234-1234-123456789012"
    assert mask_card_numbers(f"/v1/p/{digits}/{CARD}") == f"/v1/p/{digits}/{'*' * 16}"
    assert mask_card_numbers("/v1/p/abcdefab-cdef-abcd-5678-123456789012") == (
        "/v1/p/abcdefab-cdef-abcd-5678-123456789012")
