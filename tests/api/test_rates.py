"""Rate schedules and restrictions over HTTP (both backends)."""

from __future__ import annotations

import pytest

from tests.helpers import assert_problem, audit_actions, counts, outbox_types

pytestmark = pytest.mark.usefixtures("database")


def _hotel(api, *, currency="EUR"):
    prop = api.post("/v1/properties", {"propertyCode": "H" + api.env_id.hex[:6].upper(),
                                       "timezone": "Europe/Berlin", "currencyCode": currency}).json
    base = f"/v1/properties/{prop['id']}"
    rt = api.post(base + "/room-types", {"code": "DBL", "name": "Double"}).json
    rp = api.post(base + "/rate-plans", {"code": "BAR", "name": "Best"}).json
    return base, rt, rp


def test_put_rates_writes_every_night_with_one_event(api, ctx):
    base, rt, rp = _hotel(api)
    before = counts(ctx)
    resp = api.put(f"{base}/rate-plans/{rp['id']}/rates", {"rates": [
        {"room_type_id": rt["id"], "from_date": "2030-01-01", "to_date": "2030-01-10",
         "amount": "120.5"}]})
    assert resp.status_code == 200, resp.text
    assert resp.json["nights_written"] == 10
    assert counts(ctx) == (before[0] + 1, before[1] + 1)
    assert outbox_types(ctx)[-1] == "hotel:pms:rate_schedule:updated"
    assert audit_actions(ctx)[-1] == "rate_schedule.updated"
    got = api.get(f"{base}/rate-plans/{rp['id']}/rates",
                  params={"from_date": "2030-01-01", "to_date": "2030-01-31"})
    assert got.status_code == 200
    assert [r["amount"] for r in got.json["data"]] == ["120.50"] * 10
    assert got.json["data"][0]["currency"] == "EUR"


def test_put_rates_replaces_existing_nights(api):
    base, rt, rp = _hotel(api)
    path = f"{base}/rate-plans/{rp['id']}/rates"
    api.put(path, {"rates": [{"room_type_id": rt["id"], "from_date": "2030-01-01",
                              "to_date": "2030-01-05", "amount": "100"}]})
    api.put(path, {"rates": [{"room_type_id": rt["id"], "from_date": "2030-01-03",
                              "to_date": "2030-01-03", "amount": "150"}]})
    got = api.get(path, params={"from_date": "2030-01-01", "to_date": "2030-01-05"}).json["data"]
    assert [r["amount"] for r in got] == ["100.00", "100.00", "150.00", "100.00", "100.00"]


def test_rates_weekdays_only_write_those_days(api):
    base, rt, rp = _hotel(api)
    path = f"{base}/rate-plans/{rp['id']}/rates"
    resp = api.put(path, {"rates": [{"room_type_id": rt["id"], "from_date": "2030-01-01",
                                     "to_date": "2030-01-14", "amount": "90", "weekdays": [6, 7]}]})
    assert resp.json["nights_written"] == 4


def test_rates_are_quantized_to_the_currency(api):
    # A JPY amount with decimals is refused, never rounded (it was stored as 12001 before).
    base, rt, rp = _hotel(api, currency="JPY")
    path = f"{base}/rate-plans/{rp['id']}/rates"
    refused = api.put(path, {"rates": [{"room_type_id": rt["id"], "from_date": "2030-01-01",
                                        "to_date": "2030-01-01", "amount": "12000.5"}]})
    assert refused.status_code == 422, refused.text
    assert refused.json["errors"][0]["field"] == "rates[0].amount"
    api.put(path, {"rates": [{"room_type_id": rt["id"], "from_date": "2030-01-01",
                              "to_date": "2030-01-01", "amount": "12000.00"}]})
    got = api.get(path, params={"from_date": "2030-01-01", "to_date": "2030-01-01"}).json
    assert got["data"][0]["amount"] == "12000"


def test_rates_for_another_propertys_room_type_is_422(api):
    base, _, rp = _hotel(api)
    other = api.post("/v1/properties", {"propertyCode": "OTHER", "timezone": "UTC",
                                        "currencyCode": "EUR"}).json
    other_rt = api.post(f"/v1/properties/{other['id']}/room-types",
                        {"code": "X", "name": "X"}).json
    resp = api.put(f"{base}/rate-plans/{rp['id']}/rates", {"rates": [
        {"room_type_id": other_rt["id"], "from_date": "2030-01-01", "to_date": "2030-01-02",
         "amount": "1"}]})
    assert_problem(resp, 422, "validation_failed")


@pytest.mark.parametrize("entry, field", [
    ({"from_date": "2030-01-05", "to_date": "2030-01-01", "amount": "1"}, "rates[0].to_date"),
    ({"from_date": "2030-01-01", "to_date": "2033-01-01", "amount": "1"}, "rates[0].to_date"),
    ({"from_date": "2030-01-01", "to_date": "2030-01-02", "amount": "-1"}, "rates[0].amount"),
])
def test_bad_rate_ranges_are_422(api, entry, field):
    base, rt, rp = _hotel(api)
    resp = api.put(f"{base}/rate-plans/{rp['id']}/rates",
                   {"rates": [{"room_type_id": rt["id"], **entry}]})
    body = assert_problem(resp, 422)
    assert body["errors"][0]["field"] == field


def test_malformed_rate_dates_are_422_not_500(api):
    base, rt, rp = _hotel(api)
    resp = api.put(f"{base}/rate-plans/{rp['id']}/rates", {"rates": [
        {"room_type_id": rt["id"], "from_date": "2030-02-30", "to_date": "x", "amount": "1"}]})
    assert_problem(resp, 422)
    resp = api.get(f"{base}/rate-plans/{rp['id']}/rates", params={"from_date": "nope",
                                                                   "to_date": "2030-01-01"})
    assert_problem(resp, 422)


def test_rates_in_another_currency_are_422(api):
    base, rt, rp = _hotel(api)
    resp = api.put(f"{base}/rate-plans/{rp['id']}/rates", {"currency": "USD", "rates": [
        {"room_type_id": rt["id"], "from_date": "2030-01-01", "to_date": "2030-01-01",
         "amount": "1"}]})
    assert_problem(resp, 422)


def test_rates_of_unknown_rate_plan_is_404(api):
    base, rt, _ = _hotel(api)
    resp = api.put(f"{base}/rate-plans/00000000-0000-4000-8000-000000000001/rates", {"rates": [
        {"room_type_id": rt["id"], "from_date": "2030-01-01", "to_date": "2030-01-01",
         "amount": "1"}]})
    assert_problem(resp, 404)


def test_rates_need_the_rates_scope(api, settings):
    from pms.devkeys import mint_token

    base, rt, rp = _hotel(api)
    token = mint_token(settings, env_id=api.env_id, scopes=["hotel:pms:rates:read"])
    resp = api.put(f"{base}/rate-plans/{rp['id']}/rates", {"rates": [
        {"room_type_id": rt["id"], "from_date": "2030-01-01", "to_date": "2030-01-01",
         "amount": "1"}]}, token=token)
    assert_problem(resp, 403)


def test_restrictions_set_list_and_clear(api, ctx):
    base, rt, rp = _hotel(api)
    path = f"{base}/rate-plans/{rp['id']}/restrictions"
    resp = api.put(path, {"from_date": "2030-01-01", "to_date": "2030-01-03", "min_los": 2,
                          "closed_to_arrival": True})
    assert resp.status_code == 200, resp.text
    assert resp.json["dates_written"] == 3 and not resp.json["cleared"]
    assert outbox_types(ctx)[-1] == "hotel:pms:restriction:updated"
    got = api.get(path, params={"from_date": "2030-01-01", "to_date": "2030-01-31"}).json["data"]
    assert len(got) == 3 and got[0]["min_los"] == 2 and got[0]["closed_to_arrival"] is True
    api.put(path, {"from_date": "2030-01-01", "to_date": "2030-01-03"})
    assert api.get(path, params={"from_date": "2030-01-01", "to_date": "2030-01-31"}).json["data"] == []


def test_property_wide_restrictions_apply_to_every_plan(api):
    base, rt, rp = _hotel(api)
    resp = api.put(f"{base}/restrictions", {"from_date": "2030-01-01", "to_date": "2030-01-01",
                                            "closed": True})
    assert resp.status_code == 200, resp.text
    assert resp.json["rate_plan_id"] is None
    got = api.get(f"{base}/rate-plans/{rp['id']}/restrictions",
                  params={"from_date": "2030-01-01", "to_date": "2030-01-01"}).json["data"]
    assert got[0]["closed"] is True and got[0]["rate_plan_id"] is None


def test_min_los_above_max_los_is_422(api):
    base, _, rp = _hotel(api)
    resp = api.put(f"{base}/rate-plans/{rp['id']}/restrictions",
                   {"from_date": "2030-01-01", "to_date": "2030-01-01", "min_los": 5, "max_los": 2})
    assert_problem(resp, 422)


def test_restriction_body_cannot_name_another_plan(api):
    base, _, rp = _hotel(api)
    resp = api.put(f"{base}/rate-plans/{rp['id']}/restrictions",
                   {"from_date": "2030-01-01", "to_date": "2030-01-01", "closed": True,
                    "rate_plan_id": "00000000-0000-4000-8000-000000000001"})
    assert_problem(resp, 422)


def test_rates_of_another_env_are_404(api, env_id):
    import uuid

    base, rt, rp = _hotel(api)
    other = api.for_env(uuid.uuid4())
    resp = other.get(f"{base}/rate-plans/{rp['id']}/rates",
                     params={"from_date": "2030-01-01", "to_date": "2030-01-01"})
    assert_problem(resp, 404)


def test_rate_write_over_the_nights_cap_is_422(api):
    base, rt, rp = _hotel(api)
    entries = [{"room_type_id": rt["id"], "from_date": "2030-01-01", "to_date": "2031-12-31",
                "amount": "1"}] * 28
    body = assert_problem(api.put(f"{base}/rate-plans/{rp['id']}/rates", {"rates": entries}), 422)
    assert body["errors"][0]["field"] == "rates"
