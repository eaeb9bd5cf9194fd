"""The rate fence over every route that prices (capabilities-beyond §3), beyond the
searches and the booking routes of test_rate_fence_routes.py: each pricing route the OpenAPI walk
finds is called as a guest session, as company B's traveler, as company B's own token, as
company A's traveler (the control) and as staff, against company A's objects (a stay booked at
A's negotiated price, its folio and charge, a block of A on the negotiated plan, the plan, A's
credit override). A negotiated price of company A (its plan id, its nightly 123.45, the stay's
246.90) never appears in the answer of the guest or of company B; staff answers that are offers
(a quote, a booking or block naming no company or another one) never carry it either; the
hotel's own books (A's folio, A's stay) show it to staff and to A's traveler (the control).

Each mutating route gets fresh objects, so the calls of one route never depend on another's.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from pms.db.uow import read_scope
from pms.models import Folio, FolioCharge
from tests.api.test_companies import Corp, _company
from tests.factories import make_booking_hotel, reservation_body
from tests.helpers import random_ref

pytestmark = pytest.mark.usefixtures("database")

SECRET = "123.45"      # company A's negotiated nightly price
SECRET_TOTAL = "246.90"  # two nights of it
P = "/v1/properties/{property_id}"


class World:
    def __init__(self, api: Any, ctx: Any) -> None:
        self.api, self.ctx = api, ctx
        hotel = make_booking_hotel(ctx, rooms=40)
        self.hotel, self.prop, self.rt = hotel, str(hotel.id), str(hotel.room_type.id)
        self.today = hotel.today
        self.base = f"/v1/properties/{self.prop}"
        self.cur = hotel.prop.currency_code
        neg = api.post(self.base + "/rate-plans", {"code": "NEGA", "name": "A",
                                                   "negotiated": True})
        assert neg.status_code == 201, neg.text
        self.neg = neg.json["id"]
        r = api.put(f"{self.base}/rate-plans/{self.neg}/rates", {"rates": [
            {"room_type_id": self.rt, "from_date": (self.today - timedelta(days=2)).isoformat(),
             "to_date": (self.today + timedelta(days=60)).isoformat(), "amount": SECRET}]})
        assert r.status_code < 300, r.text
        api.post(self.base + "/transaction-codes", {"code": "FB", "name": "F&B",
                                                    "category": "F&B"})
        self.company_a = _company(api, self.prop, negotiated_rate_plan_ids=[self.neg])
        self.company_b = _company(api, self.prop)
        corp = Corp(api, self.prop, self.company_a, self.company_b)
        self.traveler_a, traveler_b = corp.traveler(), corp.traveler()
        corp.bind(self.traveler_a, "TRAVELER")
        corp.bind(traveler_b, "TRAVELER", company=self.company_b)
        self.tokens = {"guest": corp.token(corp.traveler(), kind="guest"),
                       "traveler_b": corp.token(traveler_b),
                       "company_b": corp.token(self.company_b),
                       "traveler_a": corp.token(self.traveler_a)}
        self.override = self.api.post(
            f"{self.base}/companies/{self.company_a}/credit-overrides",
            {"amount": "10.00", "currency": self.cur, "reason": "fair",
             "expires_at": (self.hotel.today + timedelta(days=5)).isoformat() + "T00:00:00Z"}
        ).json["id"]
        assert api.put(f"{self.base}/companies/{self.company_a}/receivable-account", {
            "credit_limit": "1000.00", "currency": self.cur}).status_code in (200, 201)
        self.item = api.post(self.base + "/items", {"code": random_ref("I"), "name": "Bike",
                                                    "category": "other",
                                                    "price": "5.00"}).json["id"]
        self.package = api.post(self.base + "/packages", {"code": random_ref("K"),
                                                          "name": "Breakfast",
                                                          "price": "9.00"}).json["id"]

    # -- company A's objects --------------------------------------------------------------

    def stay(self, checked_in: bool = True) -> str:
        """A two-night stay of traveler A, booked for company A at its negotiated price."""
        body = reservation_body(self.hotel, rate_plan_id=self.neg,
                                company_profile_id=self.company_a,
                                guest_profile_id=self.traveler_a)
        body.pop("guest")
        made = self.api.post(self.base + "/reservations", body)
        assert made.status_code == 201, made.text
        assert made.json["total_amount"] == SECRET_TOTAL
        rid = made.json["id"]
        if checked_in:
            resp = self.api.post(f"{self.base}/reservations/{rid}/check-in", {})
            assert resp.status_code == 200, resp.text
            resp = self.api.post(f"{self.base}/folios/{self.folio(rid)}/charges",
                                 {"transaction_code": "FB", "amount": SECRET})
            assert resp.status_code == 201, resp.text
        return rid

    def folio(self, rid: str) -> str:
        with read_scope(self.ctx):
            return str(Folio.get(Folio.reservation == uuid.UUID(rid),
                                 Folio.folio_type == "GUEST").id)

    def charge(self, folio: str) -> str:
        with read_scope(self.ctx):
            return str(FolioCharge.select().where(FolioCharge.folio == uuid.UUID(folio))
                       .order_by(FolioCharge.created_at, FolioCharge.id).first().id)

    def block(self) -> str:
        resp = self.api.post(self.base + "/blocks", self.block_body(self.company_a))
        assert resp.status_code == 201, resp.text
        return resp.json["id"]

    def block_body(self, company: str | None) -> dict[str, Any]:
        return {"code": random_ref("B"), "name": "Offsite",
                "arrival_date": self.today.isoformat(),
                "departure_date": (self.today + timedelta(days=2)).isoformat(),
                "rate_plan_id": self.neg, "company_profile_id": company,
                "allocation": [{"room_type_id": self.rt, "date": self.today.isoformat(),
                                "to_date": (self.today + timedelta(days=1)).isoformat(),
                                "allotted": 2}]}

    def stay_body(self, **over: Any) -> dict[str, Any]:
        return {**reservation_body(self.hotel, rate_plan_id=self.neg), **over}


def leaks(w: World, resp: Any) -> bool:
    text = resp.text or ""
    return w.neg in text or SECRET in text or SECRET_TOTAL in text


# -- the cases ------------------------------------------------------------------------------

# How a route is called: its path parameters from company A's objects (`ids`), its body; an
# OFFER is an answer to whoever asks (a quote, or a booking/block naming no company or another
# one): staff's answer must not carry A's price either. BOOKS are the hotel's own records of A's
# stay: staff and A's traveler (the stay's guest, where the route serves holders) see the price.

Ids = Callable[[World], dict[str, str]]


def _stay_in(w: World) -> dict[str, str]:
    rid = w.stay()
    folio = w.folio(rid)
    return {"id": rid, "folio": folio, "charge_id": w.charge(folio)}


def _stay_booked(w: World) -> dict[str, str]:
    return {"id": w.stay(checked_in=False)}


def _folio_of_stay(w: World) -> dict[str, str]:
    ids = _stay_in(w)
    return {**ids, "id": ids["folio"]}


def _plan(w: World) -> dict[str, str]:
    return {"id": w.neg}


def _none(w: World) -> dict[str, str]:
    return {}


OFFER, BOOKS, OWN_BOOKS = "offer", "books", "own-books"

ROUTE_CASES: dict[tuple[str, str], tuple[Ids, Callable[[World], Any], str]] = {
    # the folios of A's stay (guest="own": A's traveler is the stay's guest)
    ("GET", P + "/folios"): (_stay_in, lambda w: None, OWN_BOOKS),
    ("GET", P + "/folios/{id}"): (_folio_of_stay, lambda w: None, OWN_BOOKS),
    ("GET", P + "/reservations/{id}/folio"): (_stay_in, lambda w: None, OWN_BOOKS),
    ("GET", P + "/reservations/{id}/folios"): (_stay_in, lambda w: None, OWN_BOOKS),
    ("GET", P + "/in-house"): (_stay_in, lambda w: None, BOOKS),
    ("POST", P + "/folios/{id}/allowances"): (_folio_of_stay, lambda w: {
        "transaction_code": "FB", "amount": "1.00", "reason": "goodwill"}, BOOKS),
    ("POST", P + "/folios/{id}/charges"): (_folio_of_stay, lambda w: {
        "transaction_code": "FB", "amount": "2.00"}, BOOKS),
    ("POST", P + "/folios/{id}/charges/{charge_id}/correction"): (
        _folio_of_stay, lambda w: {"reason": "wrong"}, BOOKS),
    ("POST", P + "/folios/{id}/charges/{charge_id}/move"): (
        _folio_of_stay, lambda w: {"target_folio_id": str(uuid.uuid4())}, BOOKS),
    ("POST", P + "/folios/{id}/payments"): (_folio_of_stay, lambda w: {
        "amount": "1.00", "method": "CASH"}, BOOKS),
    ("POST", P + "/folios/{id}/pre-authorizations"): (_folio_of_stay, lambda w: {
        "amount": "1.00", "payment_method_id": "pm_test"}, OWN_BOOKS),
    ("POST", P + "/folios/{id}/refunds"): (_folio_of_stay, lambda w: {
        "amount": "1.00", "method": "CASH"}, BOOKS),
    ("POST", P + "/reservations/{id}/folios"): (_stay_in, lambda w: {
        "folio_type": "EXTRA"}, BOOKS),
    # A's stay moved through its life
    ("POST", P + "/reservations/{id}/cancel"): (_stay_booked, lambda w: None, OWN_BOOKS),
    ("POST", P + "/reservations/{id}/check-in"): (_stay_booked, lambda w: {}, OWN_BOOKS),
    ("POST", P + "/reservations/{id}/check-out"): (_stay_in, lambda w: None, OWN_BOOKS),
    ("POST", P + "/reservations/{id}/no-show"): (_stay_booked, lambda w: None, BOOKS),
    ("POST", P + "/reservations/{id}/pre-check-in"): (_stay_booked, lambda w: {
        "terms_accepted": True}, OWN_BOOKS),
    ("POST", P + "/reservations/{id}/revert"): (_stay_in, lambda w: {"reason": "oops"}, BOOKS),
    ("POST", P + "/reservations/{id}/split"): (_stay_in, lambda w: {
        "split_date": (w.today + timedelta(days=1)).isoformat()}, BOOKS),
    ("POST", "/v1/admin/frontdesk/properties/{property_id}/reservations/{id}/check-in"): (
        _stay_booked, lambda w: {}, BOOKS),
    ("POST", "/v1/admin/frontdesk/properties/{property_id}/reservations/{id}/check-out"): (
        _stay_in, lambda w: None, BOOKS),
    ("POST", "/v1/admin/frontdesk/properties/{property_id}/reservations/{id}/no-show"): (
        _stay_booked, lambda w: None, BOOKS),
    ("POST", "/v1/admin/reservations/properties/{property_id}/reservations/{id}/cancel"): (
        _stay_booked, lambda w: None, BOOKS),
    # bookings naming no company or company B on A's plan: refused to everyone
    ("POST", "/v1/admin/reservations/properties/{property_id}/reservations"): (
        _none, lambda w: w.stay_body(company_profile_id=w.company_b), OFFER),
    ("POST", "/v1/admin/reservations/properties/{property_id}/walk-in"): (
        _none, lambda w: {"guest": {"first_name": "Wal", "last_name": "Kin"},
                          "rate_plan_id": w.neg, "room_type_id": w.rt}, OFFER),
    ("POST", P + "/walk-in"): (
        _none, lambda w: {"guest": {"first_name": "Wal", "last_name": "Kin"},
                          "rate_plan_id": w.neg, "room_type_id": w.rt}, OFFER),
    # quotes
    ("POST", P + "/promo/validate"): (_none, lambda w: {
        "code": "NOPE", "arrival_date": w.today.isoformat(),
        "departure_date": (w.today + timedelta(days=2)).isoformat(), "room_type_id": w.rt,
        "rate_plan_id": w.neg}, OFFER),
    # the plan's own management (staff: the hotel's books)
    ("GET", P + "/rate-plans/{id}/rates"): (_plan, lambda w: None, BOOKS),
    ("GET", P + "/rate-plans/{id}/restrictions"): (_plan, lambda w: None, BOOKS),
    ("GET", P + "/restrictions"): (_none, lambda w: None, BOOKS),
    # the catalog (public prices, never a negotiated one)
    ("GET", P + "/items"): (_none, lambda w: None, OFFER),
    ("GET", P + "/items/{id}"): (lambda w: {"id": w.item}, lambda w: None, OFFER),
    ("POST", P + "/items"): (_none, lambda w: {"code": random_ref("I"), "name": "Kayak",
                                               "category": "other", "price": "7.00"}, OFFER),
    ("GET", P + "/packages"): (_none, lambda w: None, OFFER),
    ("GET", P + "/packages/{id}"): (lambda w: {"id": w.package}, lambda w: None, OFFER),
    ("POST", P + "/packages"): (_none, lambda w: {"code": random_ref("K"), "name": "Spa",
                                                  "price": "8.00"}, OFFER),
    # company A's account (staff only)
    ("GET", P + "/companies/{profile_id}/credit-overrides"): (_none, lambda w: None, BOOKS),
    ("POST", P + "/companies/{profile_id}/credit-overrides"): (_none, lambda w: {
        "amount": "5.00", "currency": w.cur, "reason": "fair",
        "expires_at": (w.today + timedelta(days=3)).isoformat() + "T00:00:00Z"}, BOOKS),
    ("POST", P + "/companies/{profile_id}/credit-overrides/{id}/approve"): (
        lambda w: {"id": w.override}, lambda w: None, BOOKS),
    ("POST", P + "/companies/{profile_id}/credit-overrides/{id}/decline"): (
        lambda w: {"id": w.override}, lambda w: None, BOOKS),
    ("POST", P + "/companies/{profile_id}/credit-overrides/{id}/revoke"): (
        lambda w: {"id": w.override}, lambda w: None, BOOKS),
    ("GET", P + "/companies/{profile_id}/receivable-account"): (_stay_booked, lambda w: None,
                                                                BOOKS),
    ("GET", "/v1/companies/{profile_id}/receivable"): (_stay_booked, lambda w: None, BOOKS),
    ("POST", P + "/companies/{profile_id}/receivable-account/payments"): (_none, lambda w: {
        "amount": "1.00", "currency": w.cur, "reference": "WIRE"}, BOOKS),
    # blocks: company A's block on its plan (staff: the hotel's books); a block or a pick-up
    # naming company B on A's plan is refused (the fence)
    ("GET", P + "/blocks"): (lambda w: {"id": w.block()}, lambda w: None, BOOKS),
    ("GET", P + "/blocks/{id}"): (lambda w: {"id": w.block()}, lambda w: None, BOOKS),
    ("POST", P + "/blocks"): (_none, lambda w: w.block_body(w.company_b), OFFER),
    ("POST", P + "/blocks/{id}/reservations"): (lambda w: {"id": w.block()}, lambda w: {
        "room_type_id": w.rt, "arrival_date": w.today.isoformat(),
        "departure_date": (w.today + timedelta(days=2)).isoformat(),
        "company_profile_id": w.company_b,
        "guest": {"first_name": "Bo", "last_name": "B"}}, OFFER),
    **{("POST", P + "/blocks/{id}/" + action): (lambda w: {"id": w.block()},
                                                lambda w, a=action: {} if a == "wash" else None,
                                                BOOKS)
       for action in ("actualize", "cancel", "cut-off", "definite", "lose", "release",
                      "tentative", "wash")},
    # an allotment of A's plan (the plan's own management), the property's
    # configuration bundle (codes and catalog prices, never a rate)
    ("GET", P + "/rate-plans/{id}/allotments"): (_plan, lambda w: None, BOOKS),
    ("GET", P + "/config-bundle"): (_none, lambda w: None, BOOKS),
}


def _with_admin_aliases(cases: dict[tuple[str, str], Any]) -> dict[tuple[str, str], Any]:
    """Every admin submit alias of a cased route is the same case: the same
    responder at another path, so the same fence."""
    from pms.api import admin
    from pms.routes import all_routes

    out = dict(cases)
    for (method, domain), (alias, _spec) in admin.alias_table(all_routes()).items():
        if (method, domain) in cases:
            out[(method, alias)] = cases[(method, domain)]
    return out


ROUTE_CASES = _with_admin_aliases(ROUTE_CASES)

OUTSIDERS = ("guest", "traveler_b", "company_b")
DATED = {("GET", P + "/rate-plans/{id}/rates"), ("GET", P + "/rate-plans/{id}/restrictions"),
         ("GET", P + "/restrictions"),
         ("GET", P + "/rate-plans/{id}/allotments")}  # their query names the dates


def _call(w: World, method: str, path: str, ids: dict[str, str], body: Any,
          token: str | None) -> Any:
    url = path.format(property_id=w.prop, profile_id=w.company_a, id=ids.get("id", ""),
                      charge_id=ids.get("charge_id", ""))
    if method == "GET":
        params = ({"from_date": w.today.isoformat(),
                   "to_date": (w.today + timedelta(days=2)).isoformat()}
                  if (method, path) in DATED else None)
        return w.api.get(url, token=token, params=params)
    return w.api.post(url, body, token=token)


@pytest.fixture
def world(api, ctx) -> World:
    return World(api, ctx)


def test_every_pricing_route_fences_company_a(world):
    w = world
    seen_by_a, seen_by_staff, served = set(), set(), {}
    for (method, path), (ids_of, body_of, kind) in sorted(ROUTE_CASES.items()):
        ids = ids_of(w)  # fresh objects of company A for this route
        for who in OUTSIDERS:
            resp = _call(w, method, path, ids, body_of(w), w.tokens[who])
            assert resp.status_code < 500, (who, path, resp.text)
            assert not leaks(w, resp), (who, method, path, resp.status_code, resp.text[:300])
        resp = _call(w, method, path, ids, body_of(w), w.tokens["traveler_a"])
        assert resp.status_code < 500, ("traveler_a", path, resp.text)
        if leaks(w, resp):
            seen_by_a.add((method, path))
        resp = _call(w, method, path, ids, body_of(w), None)
        assert resp.status_code < 500, ("staff", path, resp.text)
        served[(method, path)] = resp.status_code
        if kind == OFFER:
            assert not leaks(w, resp), ("staff", method, path, resp.status_code, resp.text[:300])
        elif leaks(w, resp):
            seen_by_staff.add((method, path))
    # the controls: A's traveler, the guest of A's stay, sees its price in its own folio; staff
    # see it in the hotel's books of A's stay and block
    assert {("GET", P + "/reservations/{id}/folio"), ("GET", P + "/folios/{id}"),
            ("GET", P + "/reservations/{id}/folios")} <= seen_by_a, seen_by_a
    assert {("GET", P + "/folios/{id}"), ("GET", P + "/in-house"), ("GET", P + "/blocks/{id}"),
            ("GET", P + "/rate-plans/{id}/rates")} <= seen_by_staff, seen_by_staff
    # the fence refused staff's offers on A's plan for company B or for nobody (not a 404
    # of a wrong path: the routes answer)
    for route in (("POST", P + "/blocks"), ("POST", P + "/promo/validate"),
                  ("POST", "/v1/admin/reservations/properties/{property_id}/reservations"),
                  ("POST", P + "/walk-in")):
        assert served[route] == 422, (route, served[route])


def test_a_block_on_a_negotiated_plan_names_a_company_it_is_for(world):
    w = world
    for company in (None, w.company_b):
        resp = w.api.post(w.base + "/blocks", w.block_body(company))
        assert resp.status_code == 422, resp.text
        assert resp.json["code"] == "rate_plan_not_negotiated_for_company"
    block = w.block()  # company A's: allowed (the control)
    resp = w.api.patch(f"{w.base}/blocks/{block}", {"company_profile_id": w.company_b}) \
        if hasattr(w.api, "patch") else w.api.request(
            "PATCH", f"{w.base}/blocks/{block}", json={"company_profile_id": w.company_b})
    assert resp.status_code == 422, resp.text
    assert w.api.get(f"{w.base}/blocks/{block}").json["company_profile_id"] == w.company_a


def test_a_promo_quote_on_a_negotiated_plan_is_the_companys_only(world):
    w = world
    body = ROUTE_CASES[("POST", P + "/promo/validate")][1](w)
    for token in (None, w.tokens["guest"], w.tokens["traveler_b"], w.tokens["company_b"]):
        resp = w.api.post(w.base + "/promo/validate", body, token=token)
        assert resp.status_code == 422 and not leaks(w, resp), resp.text
    company_a = Corp(w.api, w.prop, w.company_a, w.company_b).token(w.company_a)
    resp = w.api.post(w.base + "/promo/validate", body, token=company_a)
    assert resp.status_code == 200 and resp.json["total"] == SECRET_TOTAL, resp.text
