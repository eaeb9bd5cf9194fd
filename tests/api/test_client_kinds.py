"""`client_kind` restricts. Kiosk and anonymous tokens reach only the routes
declared open to them (`@endpoint(kiosk=..., anonymous=...)`, default deny), whatever scopes
they carry and with or without a `holder_id`; driven from the route table, so a route added
later is refused to them until someone declares otherwise (a kiosk config write keeps the
default and is refused to every kiosk token).
"""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest

from pms.devkeys import mint_token
from pms.routes import all_routes, operations
from tests.factories import make_booking_hotel, make_reservation
from tests.helpers import assert_problem

P = "/v1/properties/{property_id}"

# The decision per operation: catalog reads, availability searches, promo validation (and the
# OpenAPI document). Keep in step with the `kiosk=` / `anonymous=` of each @endpoint.
OPEN_TO_KIOSK_AND_ANONYMOUS = {
    ("GET", "/v1/openapi.json"), ("GET", "/v1/properties"), ("GET", P),
    ("GET", P + "/room-types"), ("GET", P + "/room-types/{id}"),
    ("GET", P + "/packages"), ("GET", P + "/packages/{id}"),
    ("POST", P + "/promo/validate"), ("POST", P + "/availability"), ("GET", "/v1/availability"),
}
# A terminal reads its own configuration and looks stays up; anonymous
# tokens do not.
OPEN_TO_KIOSK_ONLY = {("GET", P + "/kiosk-config"), ("POST", P + "/kiosk/lookup"),
                      ("GET", P + "/kiosk/add-ons")}
# a kiosk token's kiosk scope stands in for the route's own there, with the
# X-Kiosk-Session of a lookup (check-in, key issue, check-out: 403 kiosk_session_invalid
# without one) or without a session (the walk-in). Anonymous tokens: denied.
KIOSK_SESSION = {("POST", P + "/reservations/{id}/check-in"),
                 ("POST", P + "/reservations/{id}/check-out"), ("POST", P + "/digital-keys"),
                 ("GET", P + "/kiosk/reservations/{id}/folio"),
                 ("POST", P + "/kiosk/reservations/{id}/add-ons"),
                 ("POST", P + "/kiosk/reservations/{id}/check-out")}
KIOSK_STAND_IN = {("POST", P + "/walk-in")}

OPERATIONS = sorted((m, p, s.kiosk, s.anonymous) for m, p, _f, s in operations(all_routes()))


def test_every_route_is_classified_for_kiosk_and_anonymous_tokens():
    declared = {(m, p): (k, a) for m, p, k, a in OPERATIONS}
    stale = (OPEN_TO_KIOSK_AND_ANONYMOUS | OPEN_TO_KIOSK_ONLY | KIOSK_SESSION
             | KIOSK_STAND_IN) - set(declared)
    assert not stale, f"classified here but not routed: {sorted(stale)}"
    wrong = {}
    for key, classes in declared.items():
        expected = (("open", "open") if key in OPEN_TO_KIOSK_AND_ANONYMOUS else
                    ("open", "deny") if key in OPEN_TO_KIOSK_ONLY else
                    ("session", "deny") if key in KIOSK_SESSION else
                    ("stand_in", "deny") if key in KIOSK_STAND_IN else ("deny", "deny"))
        if classes != expected:
            wrong[key] = (classes, expected)
    assert not wrong, ("the route's kiosk=/anonymous= and this table disagree: decide, then "
                       f"update both (route, table): {wrong}")


def _denied() -> list[tuple[str, str]]:
    return [(m, p) for m, p, _k, _a in OPERATIONS if (m, p) not in OPEN_TO_KIOSK_AND_ANONYMOUS]


NOT_UUIDS = {"room_number": "101", "name": "arrivals", "list": "reservation-statuses"}


def _url(path: str) -> str:
    """Every path parameter filled (a uuid unless it is one of NOT_UUIDS), so the request
    reaches its route and the gate, whatever parameters routes added later name."""
    return re.sub(r"\{(\w+)\}", lambda m: NOT_UUIDS.get(m.group(1), str(uuid.uuid4())), path)


@pytest.mark.parametrize("method,path", _denied(), ids=[f"{m} {p}" for m, p in _denied()])
def test_kiosk_and_anonymous_tokens_with_every_scope_are_refused_where_not_open(
        api, method, path):
    url = _url(path)
    kinds = (("kiosk", "kiosk_not_allowed"), ("anonymous", "anonymous_not_allowed"))
    if (method, path) in OPEN_TO_KIOSK_ONLY | KIOSK_STAND_IN:
        kinds = kinds[1:]
    elif (method, path) in KIOSK_SESSION:  # no session: refused before anything else
        kinds = (("kiosk", "kiosk_session_invalid"), kinds[1])
    for kind, code in kinds:
        for holder in (None, str(uuid.uuid4())):
            token = mint_token(api.settings, env_id=api.env_id, client_kind=kind,
                               holder_id=holder)
            assert_problem(api.request(method, url, token=token, json={}), 403, code)


def test_a_kiosk_token_with_reservations_read_lists_no_reservation(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=2)
    booked = make_reservation(ctx, hotel)
    kiosk = mint_token(api.settings, env_id=api.env_id, client_kind="kiosk",
                       scopes=["hotel:pms:reservations:read", "hotel:pms:folios:read",
                               "hotel:pms:profiles:read"])
    base = f"/v1/properties/{hotel.id}"
    for url in (f"{base}/reservations", f"{base}/reservations/{booked.id}",
                f"{base}/reservations/{booked.id}/folio"):
        resp = api.get(url, token=kiosk)
        assert_problem(resp, 403, "kiosk_not_allowed")
        assert booked.confirmation_number not in resp.text
    # staff still list it
    assert api.get(f"{base}/reservations").json["data"][0]["id"] == str(booked.id)


def test_kiosk_and_anonymous_tokens_are_served_where_open(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=2)
    base = f"/v1/properties/{hotel.id}"
    stay = {"arrival_date": hotel.today.isoformat(),
            "departure_date": (hotel.today + timedelta(days=1)).isoformat(), "adults": 1}
    for kind in ("kiosk", "anonymous"):
        token = mint_token(api.settings, env_id=api.env_id, client_kind=kind)
        assert api.get(base, token=token).status_code == 200
        assert api.get(f"{base}/room-types", token=token).status_code == 200
        resp = api.post(f"{base}/availability", stay, token=token)
        assert resp.status_code == 200, resp.text
        promo = api.post(f"{base}/promo/validate", {
            **stay, "code": "NONE", "room_type_id": str(hotel.room_type.id),
            "rate_plan_id": str(hotel.rate_plan.id)}, token=token)
        assert promo.status_code in (200, 422), promo.text
        # but never a booking, whatever scopes the token holds
        assert_problem(api.post(f"{base}/reservations", {**stay, "room_type_id": str(
            hotel.room_type.id), "rate_plan_id": str(hotel.rate_plan.id),
            "guest": {"last_name": "K"}}, token=token), 403)


def test_kiosk_and_anonymous_tokens_cannot_price_a_negotiated_plan(api, ctx):
    """Promo validation is open to them, but a negotiated plan is not: as an unknown plan (as
    for a guest), never the staff view."""
    from tests.factories import load_rates, make_rate_plan
    from tests.helpers import random_ref

    hotel = make_booking_hotel(ctx, rooms=2)
    plan = make_rate_plan(ctx, hotel.id, code=random_ref("NEG"), name="Corporate",
                          negotiated=True)
    load_rates(ctx, hotel.id, plan.id, hotel.room_type.id, amount="55.00")
    body = {"arrival_date": hotel.today.isoformat(),
            "departure_date": (hotel.today + timedelta(days=1)).isoformat(), "adults": 1,
            "code": "NONE", "room_type_id": str(hotel.room_type.id), "rate_plan_id": str(plan.id)}
    url = f"/v1/properties/{hotel.id}/promo/validate"
    # the control: the company the plan is linked to is quoted its price (a quote on
    # a negotiated plan is that company's only; staff naming no company get the 422 too)
    company = api.post(f"/v1/properties/{hotel.id}/profiles", {
        "kind": "COMPANY", "company_name": random_ref("Acme"),
        "preferences": {"negotiated_rate_plan_ids": [str(plan.id)]}}).json["id"]
    own = mint_token(api.settings, env_id=api.env_id, client_kind="user", holder_id=company)
    quoted = api.post(url, body, token=own)
    assert quoted.status_code == 200 and "55.00" in quoted.text, quoted.text
    staff = api.post(url, body)
    assert staff.status_code == 422 and "55.00" not in staff.text, staff.text
    for kind in ("kiosk", "anonymous"):
        token = mint_token(api.settings, env_id=api.env_id, client_kind=kind)
        resp = api.post(url, body, token=token)
        assert resp.status_code in (404, 422), resp.text
        assert "55.00" not in resp.text
