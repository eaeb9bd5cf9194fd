"""A valid request for every mutating route, so route-wide tests (one outbox + one audit row per
change, a forced failure leaves nothing, another env's ids answer 404) cover the whole router.

`World` builds a small hotel through the API; a recipe turns a route into (path, body) within
that world. A mutating route without a recipe makes `test_every_mutating_route_has_a_recipe` fail,
so new routes cannot slip past these tests.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from datetime import UTC
from typing import Any

from tests.helpers import RawBody, owned_method, random_ref


class World:
    """A property with one of everything, created through the API of one env."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self.property_id = self._post("/v1/properties", {
            "propertyCode": random_ref("W").upper(), "timezone": "Europe/Berlin",
            "currencyCode": "EUR"})["id"]
        base = f"/v1/properties/{self.property_id}"
        self.base = base
        self.room_type_id = self._post(f"{base}/room-types", {"code": random_ref("RT"),
                                                               "name": "Double"})["id"]
        self.room_id = self._post(f"{base}/rooms", {"room_number": random_ref("R")[-5:],
                                                    "room_type_id": self.room_type_id})["id"]
        self.rate_plan_id = self._post(f"{base}/rate-plans", {"code": random_ref("RP"),
                                                              "name": "BAR"})["id"]
        self.item_id = self._post(f"{base}/items", {"code": random_ref("IT"), "name": "Water",
                                                    "category": "mini bar", "price": "2.00"})["id"]
        self.package_id = self._post(f"{base}/packages", {"code": random_ref("PK"),
                                                          "name": "Breakfast", "price": "12.00"})["id"]
        self.profile_id = self._post(f"{base}/profiles", {
            "first_name": "Ada", "last_name": "Lovelace",
            "email": f"{random_ref('w')}@example.com"})["id"]

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        resp = self.api.post(path, body)
        assert resp.status_code in (200, 201), (path, resp.status_code, resp.text)
        return resp.json

    def fill(self, template: str, ids: dict[str, str] | None = None) -> str:
        values = {"property_id": self.property_id, **(ids or {})}
        out = template
        for name, value in values.items():
            out = out.replace("{" + name + "}", str(value))
        return out


Recipe = Callable[[World], tuple[str, Any]]

P = "/v1/properties/{property_id}"


def _child(path: str, attr: str, body: Callable[[World], dict[str, Any]],
           patch: dict[str, Any] | None = None) -> dict[tuple[str, str], Recipe]:
    """POST a new one; PUT/PATCH/DELETE the world's one."""
    item = f"{P}/{path}/{{id}}"

    def on_item(w: World) -> str:
        return w.fill(item, {"id": getattr(w, attr)})

    return {
        ("POST", f"{P}/{path}"): lambda w: (w.fill(f"{P}/{path}"), body(w)),
        ("PUT", item): lambda w: (on_item(w), patch or {"name": "Renamed"}),
        ("PATCH", item): lambda w: (on_item(w), patch or {"name": "Renamed again"}),
        ("DELETE", item): lambda w: (on_item(w), None),
    }


RECIPES: dict[tuple[str, str], Recipe] = {
    ("POST", "/v1/properties"): lambda w: ("/v1/properties", {
        "propertyCode": random_ref("N").upper(), "timezone": "UTC", "currencyCode": "USD"}),
    ("PUT", P): lambda w: (w.fill(P), {"name": "Grand"}),
    ("PATCH", P): lambda w: (w.fill(P), {"languages": ["en"]}),
    # a property with children cannot be deleted: use a fresh empty one
    ("DELETE", P): lambda w: (f"/v1/properties/{w._post('/v1/properties', {'propertyCode': random_ref('D').upper(), 'timezone': 'UTC', 'currencyCode': 'EUR'})['id']}", None),
    **_child("room-types", "room_type_id", lambda w: {"code": random_ref("RT"), "name": "Twin"}),
    **_child("rooms", "room_id", lambda w: {"room_number": random_ref("R")[-5:],
                                             "room_type_id": w.room_type_id},
                       {"floor": "7"}),
    **_child("rate-plans", "rate_plan_id", lambda w: {"code": random_ref("RP"), "name": "Flex"}),
    **_child("items", "item_id", lambda w: {"code": random_ref("IT"), "name": "Soda",
                                             "category": "mini bar", "price": "3.00"}),
    **_child("packages", "package_id", lambda w: {"code": random_ref("PK"), "name": "Parking",
                                                   "price": "20.00"}),
    ("POST", f"{P}/profiles"): lambda w: (w.fill(f"{P}/profiles"), {
        "first_name": "Alan", "last_name": "Turing", "email": f"{random_ref('t')}@example.com"}),
    ("PUT", f"{P}/profiles/{{id}}/loyalty-number"): lambda w: (
        w.fill(f"{P}/profiles/{{id}}/loyalty-number", {"id": w.profile_id}),
        {"loyalty_number": "LOY-" + uuid.uuid4().hex[:8]}),
    ("POST", f"{P}/profiles/{{id}}/consents"): lambda w: (
        w.fill(f"{P}/profiles/{{id}}/consents", {"id": w.profile_id}),
        {"purpose": "MARKETING_EMAIL", "granted": True, "source": "DESK", "text_version": "v1"}),
    ("POST", f"{P}/profiles/{{id}}/personal-data/exports"): lambda w: (
        w.fill(f"{P}/profiles/{{id}}/personal-data/exports", {"id": w.profile_id}), None),
    # a fresh profile: one with no stay is erased at once (the world's guest has stays)
    ("POST", f"{P}/profiles/{{id}}/erasure"): lambda w: (
        w.fill(f"{P}/profiles/{{id}}/erasure", {"id": w._post(w.fill(f"{P}/profiles"), {
            "first_name": "Eve", "last_name": "Gone",
            "email": f"{random_ref('e')}@example.com"})["id"]}), {}),
}

# Room deletes need the room unreferenced; the world's room is. Room types/rate plans/items/
# packages deleted after their rooms? The world's room type has a room, so deleting it is the
# 409 case: use a fresh one for DELETE.
RECIPES[("DELETE", f"{P}/room-types/{{id}}")] = lambda w: (
    w.fill(f"{P}/room-types/{{id}}", {"id": w._post(w.fill(f"{P}/room-types"), {
        "code": random_ref("RT"), "name": "Spare"})["id"]}), None)


# -- cashiering, night audit -------------------------------------------------------------

def _cashiering_stay(w: World) -> dict[str, Any]:
    """A second hotel of the world's env with a checked-in stay, a transaction code and a charge
    (built through the services; cached on the world)."""
    if getattr(w, "_cash", None) is None:
        from datetime import datetime, timedelta

        import msgspec

        from pms.context import Ctx
        from pms.db.uow import read_scope
        from pms.devkeys import all_scopes
        from pms.models import Folio
        from pms.schemas.cashiering import ChargeIn, TransactionCodeIn
        from pms.services.cashiering import cashiering
        from pms.services.cashiering.transaction_codes import TRANSACTION_CODE
        from pms.services.catalog import catalog
        from tests.factories import make_booking_hotel, make_checked_in

        # dated before the request under test, so "the latest audit row" stays the request's
        ctx = Ctx(env_id=w.api.env_id, sub="recipe", client_kind="user",
                  scopes=frozenset(all_scopes()),
                  now=datetime.now(UTC) - timedelta(seconds=30))
        hotel = make_booking_hotel(ctx, rooms=2)
        catalog.create_child(ctx, TRANSACTION_CODE, hotel.id, msgspec.convert(
            {"code": "FB", "name": "F&B", "category": "F&B",
             "tax_rules": [{"code": "VAT", "kind": "percentage", "rate": "7", "inclusive": True}]},
            TransactionCodeIn))
        res = make_checked_in(ctx, hotel)
        with read_scope(ctx):
            folio = Folio.get(Folio.reservation == res.id)
        out = cashiering.post_charge(ctx, hotel.id, folio.id, ChargeIn(transaction_code="FB",
                                                                       amount=__import__("decimal").Decimal("20")))
        charge = next(c for c in out.charges if c.kind == "charge")
        w._cash = {"ctx": ctx, "hotel": hotel, "res": res, "folio": folio.id,
                   "charge": charge.id, "base": f"/v1/properties/{hotel.id}",
                   "f": f"/v1/properties/{hotel.id}/folios/{folio.id}"}
    return w._cash


def _extra_folio(w: World) -> str:
    from pms.schemas.cashiering import ExtraFolioIn
    from pms.services.cashiering import cashiering

    s = _cashiering_stay(w)
    return str(cashiering.open_extra_folio(s["ctx"], s["hotel"].id, s["res"].id,
                                           ExtraFolioIn()).id)


def _closed_folio(w: World) -> str:
    from decimal import Decimal

    from pms.errors import FolioNotClosable
    from pms.schemas.cashiering import PaymentIn
    from pms.services.cashiering import payments
    from pms.services.frontdesk import checkout

    s = _cashiering_stay(w)
    try:
        checkout.check_out(s["ctx"], s["hotel"].id, s["res"].id)
    except FolioNotClosable as exc:
        payments.post_payment(s["ctx"], s["hotel"].id, s["folio"],
                              PaymentIn(amount=Decimal(exc.extra["balance"]), method="CASH"),
                              payments=None)
        checkout.check_out(s["ctx"], s["hotel"].id, s["res"].id)
    return s["f"]


def _refund(w: World) -> tuple[str, Any]:
    """A cash refund of 5.00 of a credit made first: the folio paid 5.00 beyond what a check-out
    now would leave due (one change: cash needs no payments-service call)."""
    from pms.schemas.cashiering import PaymentIn
    from pms.services.cashiering import cashiering, payments

    s = _cashiering_stay(w)
    due = cashiering.get_folio(s["ctx"], s["hotel"].id, s["folio"]).balance_due
    payments.post_payment(s["ctx"], s["hotel"].id, s["folio"],
                          PaymentIn(amount=max(due, 0) + 5, method="CASH"), payments=None)
    return s["f"] + "/refunds", {"amount": "5.00", "method": "CASH"}


def _receipt(w: World) -> tuple[str, Any]:
    """A receipt of a captured cash payment of the owner's stay (no payments-service call)."""
    from decimal import Decimal

    from pms.schemas.cashiering import PaymentIn
    from pms.services.cashiering import payments

    s = _cashiering_stay(w)
    _, paid = payments.post_payment(s["ctx"], s["hotel"].id, s["folio"],
                                    PaymentIn(amount=Decimal("5"), method="CASH"), payments=None)
    return f"{s['f']}/payments/{paid.id}/receipt", None


def _end_of_day(w: World) -> tuple[str, Any]:
    # the job stays QUEUED (no relay runs in API tests): only the request's rows are counted
    # (the business date is the local date: closing it needs the staff override)
    return f"{_cashiering_stay(w)['base']}/end-of-day", {"override_reason": "test: early close"}


RECIPES.update({
    **_child("transaction-codes", "_tc_id", lambda w: {
        "code": random_ref("TC")[:30], "name": "Spa", "category": "other"}),
    ("POST", f"{P}/gift-vouchers"): lambda w: (w.fill(f"{P}/gift-vouchers"), {"amount": "25"}),
    ("POST", f"{P}/folios/{{id}}/charges"): lambda w: (
        _cashiering_stay(w)["f"] + "/charges", {"transaction_code": "FB", "amount": "9.50"}),
    ("POST", f"{P}/folios/{{id}}/charges/{{charge_id}}/correction"): lambda w: (
        f"{_cashiering_stay(w)['f']}/charges/{_cashiering_stay(w)['charge']}/correction",
        {"reason": "wrong room"}),
    ("POST", f"{P}/folios/{{id}}/charges/{{charge_id}}/move"): lambda w: (
        f"{_cashiering_stay(w)['f']}/charges/{_cashiering_stay(w)['charge']}/move",
        {"target_folio_id": _extra_folio(w)}),
    ("POST", f"{P}/folios/{{id}}/allowances"): lambda w: (
        _cashiering_stay(w)["f"] + "/allowances",
        {"transaction_code": "FB", "amount": "2", "reason": "goodwill"}),
    # Cash is one transaction; a card payment that gets an answer records the outcome in a
    # second one (intent, call after commit, outcome: STYLE K), so it writes two of each.
    ("POST", f"{P}/folios/{{id}}/payments"): lambda w: (
        _cashiering_stay(w)["f"] + "/payments", {"amount": "5", "method": "CASH"}),
    # The sandbox's "unavailable" method leaves the intent PENDING (202): the request's own
    # transaction; the reconciler records the outcome later.
    ("POST", f"{P}/folios/{{id}}/pre-authorizations"): lambda w: (
        _cashiering_stay(w)["f"] + "/pre-authorizations",
        {"amount": "50", "payment_method_id": "pm_card_unavailable"}),
    ("POST", f"{P}/folios/{{id}}/invoice"): lambda w: (_closed_folio(w) + "/invoice", None),
    ("POST", f"{P}/folios/{{id}}/refunds"): _refund,
    ("POST", f"{P}/reservations/{{id}}/folios"): lambda w: (
        f"{_cashiering_stay(w)['base']}/reservations/{_cashiering_stay(w)['res'].id}/folios",
        {"folio_type": "EXTRA"}),
    ("POST", f"{P}/end-of-day"): _end_of_day,
    ("POST", f"{P}/folios/{{id}}/payments/{{payment_id}}/receipt"): _receipt,
    # the auditor's export of a period: a job (stays QUEUED, no relay in API tests)
    ("POST", f"{P}/fiscal-exports"): lambda w: (
        w.fill(f"{P}/fiscal-exports"), {"from": "2030-01-01", "to": "2030-01-31"}),
    ("POST", "/v1/jobs"): lambda w: ("/v1/jobs", {
        "kind": "end_of_day", "property_id": _end_of_day(w)[0].split("/")[3],
        "input": {"override_reason": "test: early close"}}),
})
World._tc_id = property(lambda w: w._post(w.fill(f"{P}/transaction-codes"), {  # type: ignore[attr-defined]
    "code": random_ref("TC")[:30], "name": "Laundry", "category": "other"})["id"])


# -- rates, inventory, maintenance (engineer A) --------------------------------------------

def _promo_id(w: World) -> str:
    return w._post(w.fill(f"{P}/promo-codes"), {"code": random_ref("PC")[:30].replace("-", ""),
                                                 "discount_type": "PERCENT",
                                                 "discount_value": "10"})["id"]


def _maintenance_id(w: World) -> str:
    return w._post(w.fill(f"{P}/maintenance"), {"room_id": w.room_id, "kind": "OUT_OF_SERVICE",
                                                 "from_date": "2031-02-01",
                                                 "to_date": "2031-02-02"})["id"]


RECIPES.update({
    ("PUT", f"{P}/rate-plans/{{id}}/rates"): lambda w: (
        w.fill(f"{P}/rate-plans/{{id}}/rates", {"id": w.rate_plan_id}),
        {"rates": [{"room_type_id": w.room_type_id, "from_date": "2031-01-01",
                    "to_date": "2031-01-31", "amount": "110.00"}]}),
    ("PUT", f"{P}/rate-plans/{{id}}/restrictions"): lambda w: (
        w.fill(f"{P}/rate-plans/{{id}}/restrictions", {"id": w.rate_plan_id}),
        {"from_date": "2031-01-01", "to_date": "2031-01-07", "min_los": 2}),
    ("PUT", f"{P}/restrictions"): lambda w: (
        w.fill(f"{P}/restrictions"), {"from_date": "2031-01-01", "to_date": "2031-01-01",
                                      "closed": True}),
    ("PUT", f"{P}/rate-plans/{{id}}/allotments"): lambda w: (
        w.fill(f"{P}/rate-plans/{{id}}/allotments", {"id": w.rate_plan_id}),
        {"room_type_id": w.room_type_id, "from_date": "2031-01-01", "to_date": "2031-01-03",
         "allotment": 2}),
    ("POST", f"{P}/promo-codes"): lambda w: (
        w.fill(f"{P}/promo-codes"), {"code": "SAVE" + uuid.uuid4().hex[:6].upper(),
                                     "discount_type": "FIXED", "discount_value": "15"}),
    ("PUT", f"{P}/promo-codes/{{id}}"): lambda w: (
        w.fill(f"{P}/promo-codes/{{id}}", {"id": _promo_id(w)}), {"discount_value": "12"}),
    ("DELETE", f"{P}/promo-codes/{{id}}"): lambda w: (
        w.fill(f"{P}/promo-codes/{{id}}", {"id": _promo_id(w)}), None),
    ("PUT", f"{P}/inventory"): lambda w: (
        w.fill(f"{P}/inventory"), {"room_type_id": w.room_type_id, "from_date": "2031-01-01",
                                   "to_date": "2031-01-03", "sell_limit": 1}),
    ("POST", f"{P}/maintenance"): lambda w: (
        w.fill(f"{P}/maintenance"), {"room_id": w.room_id, "kind": "OUT_OF_ORDER",
                                     "from_date": "2031-03-01", "to_date": "2031-03-02",
                                     "reason": "paint"}),
    ("DELETE", f"{P}/maintenance/{{id}}"): lambda w: (
        w.fill(f"{P}/maintenance/{{id}}", {"id": _maintenance_id(w)}), None),
})


# -- reservations and front desk ---------------------------------------------------------

def _stay_hotel(w: World) -> dict[str, Any]:
    """A hotel of the world's env with rates loaded (built through the services; cached)."""
    if getattr(w, "_stays", None) is None:
        from datetime import datetime, timedelta

        from pms.context import Ctx
        from pms.devkeys import all_scopes
        from tests.factories import make_booking_hotel

        # dated before the request under test, so "the latest audit row" stays the request's
        ctx = Ctx(env_id=w.api.env_id, sub="recipe", client_kind="user",
                  scopes=frozenset(all_scopes()),
                  now=datetime.now(UTC) - timedelta(seconds=30))
        hotel = make_booking_hotel(ctx, rooms=3)
        w._stays = {"ctx": ctx, "hotel": hotel, "base": f"/v1/properties/{hotel.id}"}
    return w._stays


def _stay(w: World, *, state: str = "CONFIRMED", nights: int = 2) -> str:
    """The URL of a new reservation of the stay hotel in `state` (CONFIRMED, CHECKED_IN, PAID:
    checked in with its first night paid)."""
    from datetime import timedelta

    from tests.factories import make_checked_in, make_reservation, pay_folio

    s = _stay_hotel(w)
    hotel, ctx = s["hotel"], s["ctx"]
    over = {"departure_date": (hotel.today + timedelta(days=nights)).isoformat()}
    if state == "CONFIRMED":
        row = make_reservation(ctx, hotel, **over)
    else:
        row = make_checked_in(ctx, hotel, **over)
        if state == "PAID":
            pay_folio(ctx, row, "100.00")
    return f"{s['base']}/reservations/{row.id}"


def _new_reservation(w: World) -> tuple[str, Any]:
    from tests.factories import reservation_body

    s = _stay_hotel(w)
    return f"{s['base']}/reservations", reservation_body(s["hotel"])


R_ITEM = f"{P}/reservations/{{id}}"
RECIPES.update({
    ("POST", f"{P}/reservations"): _new_reservation,
    ("PUT", R_ITEM): lambda w: (_stay(w), {"adults": 1}),
    ("POST", f"{R_ITEM}/cancel"): lambda w: (_stay(w) + "/cancel", None),
    ("POST", f"{R_ITEM}/pre-check-in"): lambda w: (_stay(w) + "/pre-check-in",
                                                  {"nationality": "DE", "terms_accepted": True}),
    ("POST", f"{P}/walk-in"): lambda w: (_stay_hotel(w)["base"] + "/walk-in",
                                         {"guest": {"last_name": "Walker"}, "nights": 1}),
    ("POST", f"{R_ITEM}/comments"): lambda w: (_stay(w) + "/comments", {"text": "VIP"}),
    ("POST", f"{R_ITEM}/messages"): lambda w: (_stay(w) + "/messages",
                                              {"direction": "outgoing", "body": "Welcome"}),
    ("POST", f"{R_ITEM}/service-requests"): lambda w: (_stay(w) + "/service-requests",
                                                      {"kind": "towels"}),
    ("POST", f"{R_ITEM}/check-in"): lambda w: (_stay(w) + "/check-in", {}),
    ("POST", f"{R_ITEM}/check-out"): lambda w: (_stay(w, state="PAID", nights=1) + "/check-out",
                                               None),
    ("POST", f"{R_ITEM}/revert"): lambda w: (_stay(w, state="CHECKED_IN") + "/revert",
                                            {"reason": "wrong guest"}),
    ("POST", f"{R_ITEM}/no-show"): lambda w: (_stay(w) + "/no-show", None),
    ("POST", f"{R_ITEM}/split"): lambda w: (_stay(w, nights=3) + "/split", {
        "split_date": (_stay_hotel(w)["hotel"].today
                       + __import__("datetime").timedelta(days=1)).isoformat()}),
    ("PUT", f"{R_ITEM}/room"): lambda w: (_stay(w) + "/room", {"room_number": "101"}),
})

# Reads that need a query or a body (tenancy: another env's ids answer 404, not 422).
_RANGE = "?from_date=2031-01-01&to_date=2031-01-02"
_STAY = {"arrival_date": "2031-01-01", "departure_date": "2031-01-03", "adults": 1}
RECIPES.update({
    ("GET", f"{P}/inventory"): lambda w: (w.fill(f"{P}/inventory") + _RANGE, None),
    ("GET", f"{P}/rate-plans/{{id}}/rates"): lambda w: (
        w.fill(f"{P}/rate-plans/{{id}}/rates", {"id": w.rate_plan_id}) + _RANGE, None),
    ("GET", f"{P}/rate-plans/{{id}}/restrictions"): lambda w: (
        w.fill(f"{P}/rate-plans/{{id}}/restrictions", {"id": w.rate_plan_id}) + _RANGE, None),
    ("GET", f"{P}/restrictions"): lambda w: (w.fill(f"{P}/restrictions") + _RANGE, None),
    ("GET", f"{P}/rate-plans/{{id}}/allotments"): lambda w: (
        w.fill(f"{P}/rate-plans/{{id}}/allotments", {"id": w.rate_plan_id}) + _RANGE, None),
    ("POST", f"{P}/availability"): lambda w: (w.fill(f"{P}/availability"), dict(_STAY)),
    ("POST", f"{P}/corporate-availability"): lambda w: (
        w.fill(f"{P}/corporate-availability"), dict(_STAY)),
    ("POST", f"{P}/promo/validate"): lambda w: (w.fill(f"{P}/promo/validate"), {
        **_STAY, "code": "ANY", "room_type_id": w.room_type_id, "rate_plan_id": w.rate_plan_id}),
})


# -- housekeeping -------------------------------------------------------------------

def _hk_room_number(w: World) -> str:
    if getattr(w, "_hk_room_number", None) is None:
        resp = w.api.get(w.fill(f"{P}/rooms/{{id}}", {"id": w.room_id}))
        w._hk_room_number = resp.json["room_number"]
    return w._hk_room_number


def _hk_task_id(w: World) -> str:
    return w._post(w.fill(f"{P}/housekeeping/tasks"),
                   {"room_number": _hk_room_number(w), "kind": "INSPECTION"})["id"]


RECIPES.update({
    ("PUT", f"{P}/housekeeping/{{room_number}}"): lambda w: (
        w.fill(f"{P}/housekeeping/{{room_number}}", {"room_number": _hk_room_number(w)}),
        {"hk_status": "DIRTY"}),
    ("POST", f"{P}/housekeeping/tasks"): lambda w: (
        w.fill(f"{P}/housekeeping/tasks"), {"room_number": _hk_room_number(w),
                                            "kind": "DEEP_CLEAN"}),
    ("PUT", f"{P}/housekeeping/tasks/{{id}}"): lambda w: (
        w.fill(f"{P}/housekeeping/tasks/{{id}}", {"id": _hk_task_id(w)}),
        {"status": "IN_PROGRESS", "assignee": "maria"}),
})


# -- lists of values, settings, property images ------------------------------------

MERGE_PATCH = "application/merge-patch+json"


def _modules_patch(w: World) -> tuple[str, Any]:
    from tests.helpers import RawBody

    etag = w.api.get("/v1/settings/modules").headers["etag"]
    return "/v1/settings/modules", RawBody(
        json={"blocks": {"tentative_deducts_inventory": True}},
        headers={"If-Match": etag, "Content-Type": MERGE_PATCH})


_SYSTEMS = {"systems": {"channel-manager": {
    "kind": "channel_manager", "endpoint_url": "https://cm.example/api",
    "identifiers": {"hotel_code": "H123"}, "secret_ref": "vault://pms/channel-manager"}}}


def _image_form(primary: bool = False) -> Any:
    from tests.helpers import PNG, multipart

    return multipart({"file": PNG, "caption": "Lobby", "primary": "true" if primary else "false"})


def _uploaded_image(w: World) -> str:
    resp = w.api.post(w.fill(f"{P}/images"), _image_form())
    assert resp.status_code == 201, resp.text
    return resp.json["id"]


# -- corporate accounts ------------------------------------------------------------

CO = f"{P}/companies/{{profile_id}}"


def _company_id(w: World) -> str:
    if getattr(w, "_company_id", None) is None:
        w._company_id = w._post(w.fill(f"{P}/profiles"), {"kind": "COMPANY",
                                                           "company_name": "Acme"})["id"]
    return w._company_id


def _co(w: World, tail: str = "") -> str:
    return w.fill(CO + tail, {"profile_id": _company_id(w)})


def _traveler(w: World) -> str:
    return w._post(w.fill(f"{P}/profiles"), {"first_name": "Tia", "last_name": "Traveler",
                                             "email": f"{random_ref('tr')}@example.com"})["id"]


def _invitation(w: World, action: str) -> str:
    """The answer path of a fresh invitation by a company ADMIN (answered by staff here, on
    the traveler's behalf)."""
    from pms.devkeys import mint_token

    admin, traveler = _traveler(w), _traveler(w)
    w._post(_co(w, "/users"), {"traveler_profile_id": admin, "role": "ADMIN"})
    token = mint_token(w.api.settings, env_id=w.api.env_id, client_kind="user",
                       holder_id=admin)
    resp = w.api.post(_co(w, "/users"), {"traveler_profile_id": traveler, "role": "BOOKER"},
                      token=token)
    assert resp.status_code == 202, resp.text
    return w.fill(f"{P}/profiles/{traveler}/company-invitations/{resp.json['id']}/{action}")


def _company_pm(w: World, *then: tuple[str, dict[str, Any]]) -> str:
    pm = w._post(_co(w, "/payment-methods"),
                 {"payment_method_id": owned_method(_company_id(w))})["id"]
    for action, body in then:
        w._post(_co(w, f"/payment-methods/{pm}/{action}"), body)
    return pm


RECIPES.update({
    ("POST", f"{CO}/users"): lambda w: (_co(w, "/users"), {
        "traveler_profile_id": _traveler(w), "role": "BOOKER"}),
    ("DELETE", f"{CO}/users/{{id}}"): lambda w: (_co(w, "/users/") + w._post(
        _co(w, "/users"), {"traveler_profile_id": _traveler(w), "role": "VIEWER"})["id"], None),
    ("PATCH", f"{CO}/users/{{id}}"): lambda w: (_co(w, "/users/") + w._post(
        _co(w, "/users"), {"traveler_profile_id": _traveler(w), "role": "VIEWER"})["id"],
        {"role": "BOOKER"}),
    ("POST", f"{P}/profiles/{{id}}/company-invitations/{{invitation_id}}/accept"):
        lambda w: (_invitation(w, "accept"), None),
    ("POST", f"{P}/profiles/{{id}}/company-invitations/{{invitation_id}}/decline"):
        lambda w: (_invitation(w, "decline"), None),
    ("PUT", f"{CO}/identity-provider"): lambda w: (_co(w, "/identity-provider"), {
        "sso_provider": "okta"}),
    ("PUT", f"{CO}/receivable-account"): lambda w: (_co(w, "/receivable-account"), {
        "credit_limit": "1500.00", "currency": "EUR"}),
    # a read whose query names its range (required): the walks ask it with one
    ("GET", "/v1/companies/{profile_id}/production"): lambda w: (
        f"/v1/companies/{_company_id(w)}/production?from_date=2030-01-01&to_date=2030-12-31",
        None),
    ("PUT", "/v1/companies/{profile_id}/receivable"): lambda w: (
        f"/v1/companies/{_company_id(w)}/receivable", {"credit_limit": "1500.00",
                                                        "currency": "EUR"}),
    ("PUT", f"{CO}/admin-provisioning"): lambda w: (_co(w, "/admin-provisioning"), {
        "email": f"{random_ref('ad')}@example.com", "first_name": "Ann", "last_name": "Admin"}),
    ("PUT", f"{CO}/rate-links"): lambda w: (_co(w, "/rate-links"), {"rate_plan_ids": [
        w._post(w.fill(f"{P}/rate-plans"), {"code": random_ref("NG"), "name": "Corporate",
                                            "negotiated": True})["id"]]}),
    ("POST", f"{CO}/payment-methods"): lambda w: (_co(w, "/payment-methods"), {
        "payment_method_id": owned_method(_company_id(w)), "label": "Corporate Amex"}),
    ("DELETE", f"{CO}/payment-methods/{{id}}"): lambda w: (
        _co(w, "/payment-methods/") + _company_pm(w), None),
    ("POST", f"{CO}/payment-methods/{{id}}/approve"): lambda w: (
        _co(w, f"/payment-methods/{_company_pm(w)}/approve"), {"approval": "POSTPAY"}),
    ("POST", f"{CO}/payment-methods/{{id}}/reject"): lambda w: (
        _co(w, f"/payment-methods/{_company_pm(w)}/reject"), {"reason": "no contract"}),
    ("POST", f"{CO}/payment-methods/{{id}}/suspend"): lambda w: (
        _co(w, "/payment-methods/" + _company_pm(w, ("approve", {"approval": "POSTPAY"}))
            + "/suspend"), {"reason": "over limit"}),
    ("POST", f"{CO}/payment-methods/{{id}}/resubmit"): lambda w: (
        _co(w, "/payment-methods/" + _company_pm(w, ("reject", {"reason": "no"}))
            + "/resubmit"), None),
})


def _override(w: World, *then: str) -> str:
    """A credit override requested by another staff user (the world's token approves it)."""
    from datetime import datetime, timedelta

    from pms.devkeys import mint_token

    other = mint_token(w.api.settings, env_id=w.api.env_id, sub="staff-2")
    expires = (datetime.now(UTC) + timedelta(days=7)).isoformat()
    resp = w.api.post(_co(w, "/credit-overrides"), {"amount": "300.00", "currency": "EUR",
                                                    "reason": "trade fair", "expires_at": expires},
                      token=other)
    assert resp.status_code == 201, resp.text
    for action in then:
        w._post(_co(w, f"/credit-overrides/{resp.json['id']}/{action}"), {})
    return resp.json["id"]


RECIPES.update({
    ("POST", f"{CO}/credit-overrides"): lambda w: (_co(w, "/credit-overrides"), {
        "amount": "250.00", "currency": "EUR", "reason": "conference",
        "expires_at": "2099-01-01T00:00:00Z"}),
    ("POST", f"{CO}/credit-overrides/{{id}}/approve"): lambda w: (
        _co(w, f"/credit-overrides/{_override(w)}/approve"), None),
    ("POST", f"{CO}/credit-overrides/{{id}}/decline"): lambda w: (
        _co(w, f"/credit-overrides/{_override(w)}/decline"), None),
    ("POST", f"{CO}/credit-overrides/{{id}}/revoke"): lambda w: (
        _co(w, f"/credit-overrides/{_override(w, 'approve')}/revoke"), None),
})


# -- lists of values, settings, property images, continued ---------------------------

RECIPES.update({
    ("PATCH", "/v1/settings/modules"): _modules_patch,
    ("PUT", "/v1/settings/external-systems"): lambda w: (
        "/v1/settings/external-systems", _SYSTEMS),
    ("PATCH", "/v1/settings/external-systems"): lambda w: (
        "/v1/settings/external-systems", RawBody(
            json={"systems": {"pos": {"kind": "pos", "identifiers": {"outlet": "1"}}}},
            content_type=MERGE_PATCH)),
    ("POST", f"{P}/images"): lambda w: (w.fill(f"{P}/images"), _image_form(primary=True)),
    ("DELETE", f"{P}/images/{{id}}"): lambda w: (
        w.fill(f"{P}/images/{{id}}", {"id": _uploaded_image(w)}), None),
    # id-bearing reads: a property's list of values of another env answers 404
    ("GET", "/v1/lov/{list}"): lambda w: (f"/v1/lov/room-types?parent={w.property_id}", None),
})


def _lov_entry(w: World) -> str:
    """The URL of a new entry of one of the env's own lists."""
    url = "/v1/lov/cancellation-reasons/" + random_ref("R")
    assert w.api.put(url, {"name": "A reason"}).status_code == 201
    return url


def _system(w: World) -> str:
    """The URL of a new external system (the others untouched)."""
    url = "/v1/settings/external-systems/pos-" + uuid.uuid4().hex[:8]
    resp = w.api.put(url, {"kind": "pos", "identifiers": {"outlet": "1"}})
    assert resp.status_code == 201, resp.text
    return url


RECIPES.update({
    # a replace of an entry the env has (elsewhere the same PUT makes that env's own)
    ("PUT", "/v1/lov/{list}/{code}"): lambda w: (_lov_entry(w), {"name": "Weather"}),
    ("DELETE", "/v1/lov/{list}/{code}"): lambda w: (_lov_entry(w), None),
    ("PUT", "/v1/settings/external-systems/{code}"): lambda w: (
        _system(w), _SYSTEMS["systems"]["channel-manager"]),
    ("DELETE", "/v1/settings/external-systems/{code}"): lambda w: (_system(w), None),
})


# -- digital keys, kiosk config, feedback, guest payment methods ---------------------

def _key_stay(w: World) -> tuple[str, str]:
    """(base URL of the stay hotel, id of a new CHECKED_IN reservation)."""
    url = _stay(w, state="CHECKED_IN")
    return _stay_hotel(w)["base"], url.rsplit("/", 1)[1]


def _key(w: World, *, active: bool = False) -> str:
    """The URL of a new key of a new checked-in stay (issued, and activated when `active`,
    through the services before the request under test)."""
    from pms.schemas.keys import KeyIn
    from pms.services.keys import keys

    base, reservation_id = _key_stay(w)
    s = _stay_hotel(w)
    row = keys.issue_key(s["ctx"], s["hotel"].id, KeyIn(reservation_id=uuid.UUID(reservation_id),
                                                         key_type="MOBILE"))
    if active:
        keys.activate(s["ctx"], s["hotel"].id, row.id)
    return f"{base}/digital-keys/{row.id}"


def _issue(w: World) -> tuple[str, Any]:
    base, reservation_id = _key_stay(w)
    return f"{base}/digital-keys", {"reservation_id": reservation_id, "key_type": "CARD"}


def _feedback(w: World) -> tuple[str, Any]:
    base, reservation_id = _key_stay(w)
    return f"{base}/feedback", {"reservation_id": reservation_id, "rating": 4}


def _owned_method(w: World, suffix: str) -> str:
    """A sandbox method the payments service reports as the world's guest profile's."""
    return owned_method(w.profile_id, suffix)


def _payment_method(w: World) -> str:
    w._post(w.fill(f"{P}/profiles/{{id}}/payment-methods", {"id": w.profile_id}),
            {"payment_method_id": _owned_method(w, "mastercard")})
    return w.fill(f"{P}/profiles/{{id}}/payment-methods", {"id": w.profile_id})


RECIPES.update({
    ("POST", f"{P}/digital-keys"): _issue,
    ("POST", f"{P}/digital-keys/{{id}}/activate"): lambda w: (_key(w) + "/activate", None),
    ("POST", f"{P}/digital-keys/{{id}}/deactivate"): lambda w: (
        _key(w, active=True) + "/deactivate", None),
    ("PUT", f"{P}/kiosk-config"): lambda w: (w.fill(f"{P}/kiosk-config"), {
        "enabled_modes": ["CHECK_IN", "COLLECT_KEY"], "add_on_package_codes": [],
        "lockdown": False, "max_keys_per_stay": 3}),
    ("POST", f"{P}/feedback"): _feedback,
    ("POST", f"{P}/profiles/{{id}}/payment-methods"): lambda w: (
        w.fill(f"{P}/profiles/{{id}}/payment-methods", {"id": w.profile_id}),
        {"payment_method_id": _owned_method(w, "visa"), "brand": "visa"}),
    ("DELETE", f"{P}/profiles/{{id}}/payment-methods"): lambda w: (
        _payment_method(w) + f"?payment_method_id={_owned_method(w, 'mastercard')}", None),
    ("POST", f"{P}/kiosk/reservations/{{id}}/add-ons"): lambda w: _kiosk_call(
        w, "/add-ons", {"package_code": "BRKF"}),
    ("POST", f"{P}/kiosk/reservations/{{id}}/check-out"): lambda w: _kiosk_call(
        w, "/check-out", {"payment_method_id": "pm_card_visa"}),
    # reads that need a query (tenancy: another env's ids answer 404, not 422)
    ("GET", f"{P}/digital-keys/live"): lambda w: (
        w.fill(f"{P}/digital-keys/live") + "?room_number=101", None),
    ("GET", f"{P}/digital-keys"): lambda w: (
        "{}/digital-keys?reservation_id={}".format(*_key_stay(w)), None),
    ("POST", f"{CO}/credit-overrides"): lambda w: (_co(w, "/credit-overrides"), {
        "amount": "250.00", "currency": "EUR", "reason": "conference",
        "expires_at": "2099-01-01T00:00:00Z"}),
    ("POST", f"{CO}/credit-overrides/{{id}}/approve"): lambda w: (
        _co(w, f"/credit-overrides/{_override(w)}/approve"), None),
    ("POST", f"{CO}/credit-overrides/{{id}}/decline"): lambda w: (
        _co(w, f"/credit-overrides/{_override(w)}/decline"), None),
    ("POST", f"{CO}/credit-overrides/{{id}}/revoke"): lambda w: (
        _co(w, f"/credit-overrides/{_override(w, 'approve')}/revoke"), None),
})


# -- banquet events on function spaces ------------------------------------------------

def _banquet_hotel(w: World) -> dict[str, Any]:
    """The stay hotel with a transaction code BQ and a checked-in stay's folio (cached)."""
    s = _stay_hotel(w)
    if "bq_folio" not in s:
        import msgspec

        from pms.db.uow import read_scope
        from pms.models import Folio
        from pms.schemas.cashiering import TransactionCodeIn
        from pms.services.cashiering.transaction_codes import TRANSACTION_CODE
        from pms.services.catalog import catalog
        from tests.factories import make_checked_in

        catalog.create_child(s["ctx"], TRANSACTION_CODE, s["hotel"].id, msgspec.convert(
            {"code": "BQ", "name": "Banquet", "category": "F&B"}, TransactionCodeIn))
        res = make_checked_in(s["ctx"], s["hotel"])
        with read_scope(s["ctx"]):
            s["bq_folio"] = Folio.get(Folio.reservation == res.id).id
    return s


def _bq_space(w: World) -> str:
    s = _banquet_hotel(w)
    return w._post(f"{s['base']}/function-spaces", {
        "name": random_ref("FS"), "capacities": {"BANQUET": 50}})["id"]


def _bq_item(w: World) -> str:
    s = _banquet_hotel(w)
    return w._post(f"{s['base']}/event-resource-items", {
        "code": random_ref("EQ"), "name": "Projector", "kind": "EQUIPMENT", "stock": 5,
        "unit_price": "40.00", "transaction_code": "BQ"})["id"]


def _bq_event_body(w: World) -> dict[str, Any]:
    s = _banquet_hotel(w)
    return {"name": "Gala", "space_id": _bq_space(w), "setup_style": "BANQUET",
            "start_at": "2027-05-01T18:00:00+00:00", "end_at": "2027-05-01T23:00:00+00:00",
            "attendees_forecast": 30, "folio_id": str(s["bq_folio"])}


def _bq_event(w: World, *moves: str, item: bool = False) -> str:
    """The URL of a new event moved through `moves` (through the services, dated before the
    request), with a booked resource when `item`."""
    import msgspec

    from pms.schemas.banquets import BanquetEventIn, EventResourceIn
    from pms.services.groups import banquets

    s = _banquet_hotel(w)
    ev = banquets.create_event(s["ctx"], s["hotel"].id,
                               msgspec.convert(_bq_event_body(w), BanquetEventIn))
    if item:
        banquets.book_resource(s["ctx"], s["hotel"].id, ev.id, EventResourceIn(
            item_id=uuid.UUID(_bq_item(w)), quantity=2))
    for move in moves:
        banquets.transition(s["ctx"], s["hotel"].id, ev.id, move)
    return f"{s['base']}/events/{ev.id}"


def _bq_resource_to_release(w: World) -> tuple[str, Any]:
    import msgspec

    from pms.schemas.banquets import EventResourceIn
    from pms.services.groups import banquets

    s = _banquet_hotel(w)
    url = _bq_event(w)
    item_id = _bq_item(w)
    banquets.book_resource(s["ctx"], s["hotel"].id, uuid.UUID(url.rsplit("/", 1)[1]),
                           msgspec.convert({"item_id": item_id, "quantity": 1},
                                           EventResourceIn))
    return f"{url}/resources?item_id={item_id}", None


def _bq_fs_item(w: World) -> str:
    return f"{_banquet_hotel(w)['base']}/function-spaces/{_bq_space(w)}"


def _bq_ri_item(w: World) -> str:
    return f"{_banquet_hotel(w)['base']}/event-resource-items/{_bq_item(w)}"


RECIPES.update({
    ("POST", f"{P}/function-spaces"): lambda w: (
        f"{_banquet_hotel(w)['base']}/function-spaces",
        {"name": random_ref("FS"), "capacities": {"THEATRE": 80, "BANQUET": 40}}),
    ("PUT", f"{P}/function-spaces/{{id}}"): lambda w: (_bq_fs_item(w), {"name": random_ref("N")}),
    ("PATCH", f"{P}/function-spaces/{{id}}"): lambda w: (
        _bq_fs_item(w), {"capacities": {"BOARDROOM": 12}}),
    ("DELETE", f"{P}/function-spaces/{{id}}"): lambda w: (_bq_fs_item(w), None),
    ("GET", f"{P}/function-spaces/{{id}}/slots"): lambda w: (
        _bq_fs_item(w) + "/slots?from_at=2031-01-01T09:00:00Z&to_at=2031-01-01T18:00:00Z", None),
    ("POST", f"{P}/event-resource-items"): lambda w: (
        f"{_banquet_hotel(w)['base']}/event-resource-items",
        {"code": random_ref("EQ"), "name": "Screen", "kind": "EQUIPMENT", "stock": 3,
         "unit_price": "25.00", "transaction_code": "BQ"}),
    ("PUT", f"{P}/event-resource-items/{{id}}"): lambda w: (_bq_ri_item(w), {"stock": 9}),
    ("PATCH", f"{P}/event-resource-items/{{id}}"): lambda w: (
        _bq_ri_item(w), {"unit_price": "45.00"}),
    ("POST", f"{P}/events"): lambda w: (f"{_banquet_hotel(w)['base']}/events", _bq_event_body(w)),
    ("PUT", f"{P}/events/{{id}}"): lambda w: (_bq_event(w), {"attendees_forecast": 20}),
    ("PATCH", f"{P}/events/{{id}}"): lambda w: (_bq_event(w), {"name": "Renamed"}),
    ("DELETE", f"{P}/events/{{id}}"): lambda w: (_bq_event(w), None),
    ("POST", f"{P}/events/{{id}}/tentative"): lambda w: (_bq_event(w) + "/tentative", None),
    ("POST", f"{P}/events/{{id}}/definite"): lambda w: (_bq_event(w) + "/definite", None),
    ("POST", f"{P}/events/{{id}}/actual"): lambda w: (
        _bq_event(w, "definite") + "/actual", None),
    ("POST", f"{P}/events/{{id}}/close"): lambda w: (
        _bq_event(w, "definite", "actual") + "/close", None),
    ("POST", f"{P}/events/{{id}}/cancel"): lambda w: (_bq_event(w) + "/cancel", None),
    ("POST", f"{P}/events/{{id}}/lose"): lambda w: (_bq_event(w) + "/lose", None),
    ("POST", f"{P}/events/{{id}}/resources"): lambda w: (
        _bq_event(w) + "/resources", {"item_id": _bq_item(w), "quantity": 2}),
    ("DELETE", f"{P}/events/{{id}}/resources"): _bq_resource_to_release,
    ("POST", f"{P}/events/{{id}}/post"): lambda w: (
        _bq_event(w, "definite", "actual", item=True) + "/post", None),
})


def _kiosk_call(w: World, suffix: str, body: dict[str, Any]) -> tuple[str, Any]:
    """A terminal's request on an in-house stay of the stay hotel, through its session: the
    kiosk offers a BRKF add-on, the terminal looks the stay up, then sends `body` with its
    kiosk token and session (a kiosk-only route answers the terminal, not the desk)."""
    from pms.db.uow import read_scope
    from pms.devkeys import mint_token
    from pms.models import Reservation
    from pms.schemas.kiosk import KioskConfigIn
    from pms.services.kiosk import kiosk
    from tests.api.kiosk_recipes import ALL_MODES, KIOSK_SCOPES, TERMINAL
    from tests.factories import make_package

    s = _stay_hotel(w)
    if not s.get("kiosk_addons"):
        make_package(s["ctx"], s["hotel"].id, code="BRKF", name="Breakfast", price="15.00",
                     calculation="PER_PERSON_PER_NIGHT")
        kiosk.put_config(s["ctx"], s["hotel"].id, KioskConfigIn(
            enabled_modes=list(ALL_MODES), add_on_package_codes=["BRKF"], lockdown=False,
            max_keys_per_stay=3))
        s["kiosk_addons"] = True
    url = _stay(w, state="PAID", nights=1)
    with read_scope(s["ctx"]):
        row = Reservation.get_by_id(uuid.UUID(url.rsplit("/", 1)[1]))
    token = mint_token(w.api.settings, env_id=w.api.env_id, client_kind="kiosk", sub=TERMINAL,
                       scopes=KIOSK_SCOPES)
    found = w.api.post(f"{s['base']}/kiosk/lookup", {
        "last_name": row.guest_last_name, "confirmation_number": row.confirmation_number},
        token=token)
    assert found.status_code == 200, found.text
    headers = {"Authorization": f"Bearer {token}",
               "X-Kiosk-Session": found.json["kiosk_session"]}
    return (url.replace("/reservations/", "/kiosk/reservations/") + suffix,
            RawBody(json=body, headers=headers))


# --- h30 ---
# the kiosk lookup: a today's arrival of the stay hotel, the kiosk configured

def _kiosk_lookup(w: World) -> tuple[str, Any]:
    from tests.api.kiosk_recipes import configure

    url = _stay(w)
    s = _stay_hotel(w)
    configure(s["ctx"], s["hotel"])
    from pms.db.uow import read_scope
    from pms.models import Reservation

    with read_scope(s["ctx"]):
        row = Reservation.get_by_id(uuid.UUID(url.rsplit("/", 1)[1]))
    return f"{s['base']}/kiosk/lookup", {"last_name": row.guest_last_name,
                                         "confirmation_number": row.confirmation_number}


RECIPES.update({("POST", f"{P}/kiosk/lookup"): _kiosk_lookup})


# --- h35 ---
# the ARI re-push job (a job row with its `job:queued` event and audit row)
RECIPES.update({
    ("POST", f"{P}/ari/push"): lambda w: (w.fill(f"{P}/ari/push"), {"months": ["2031-01"]}),
})


# --- h33 ---
# Room blocks: each recipe makes a new block of the stay hotel, one room allotted on
# a night of its own (so DEFINITE blocks never run the hotel's three rooms out).

def _blk(w: World, *moves: str, picked: bool = False) -> str:
    """The URL of a new block (through the services, dated before the request), moved through
    `moves`, with one room picked up when `picked`."""
    from datetime import timedelta

    import msgspec

    from pms.schemas import room_blocks as bs
    from pms.services.groups import block_changes, pickups, room_blocks

    s = _stay_hotel(w)
    n = s["blocks_made"] = s.get("blocks_made", 0) + 1
    night = s["hotel"].today + timedelta(days=20 + n % 30)
    out = room_blocks.create_block(s["ctx"], s["hotel"].id, msgspec.convert({
        "code": random_ref("BK"), "name": "Group", "arrival_date": night.isoformat(),
        "departure_date": (night + timedelta(days=1)).isoformat(),
        "rate_plan_id": str(s["hotel"].rate_plan.id),
        "allocation": [{"room_type_id": str(s["hotel"].room_type.id),
                        "date": night.isoformat(), "allotted": 1}]}, bs.BlockIn))
    for move in moves:
        block_changes.transition(s["ctx"], s["hotel"].id, out.id, move)
    if picked:
        pickups.pick_up(s["ctx"], s["hotel"].id, out.id, msgspec.convert(
            _blk_pick_body(w, out), bs.PickupIn))
    return f"{s['base']}/blocks/{out.id}"


def _blk_pick_body(w: World, block: Any) -> dict[str, Any]:
    s = _stay_hotel(w)
    return {"room_type_id": str(s["hotel"].room_type.id),
            "arrival_date": block.arrival_date.isoformat(),
            "departure_date": block.departure_date.isoformat(),
            "guest": {"last_name": "Member"}}


def _blk_new_body(w: World) -> dict[str, Any]:
    from datetime import timedelta

    s = _stay_hotel(w)
    night = s["hotel"].today + timedelta(days=25)
    return {"code": random_ref("BK"), "name": "Conference", "arrival_date": night.isoformat(),
            "departure_date": (night + timedelta(days=2)).isoformat(),
            "rate_plan_id": str(s["hotel"].rate_plan.id),
            "allocation": [{"room_type_id": str(s["hotel"].room_type.id),
                            "date": night.isoformat(), "to_date": night.isoformat(),
                            "allotted": 1}]}


def _blk_pick(w: World) -> tuple[str, Any]:
    from pms.db.uow import read_scope
    from pms.services.groups import room_blocks

    s = _stay_hotel(w)
    url = _blk(w, "definite")
    with read_scope(s["ctx"]):
        block = room_blocks.load_block(s["hotel"].id, uuid.UUID(url.rsplit("/", 1)[1]))
    return url + "/reservations", _blk_pick_body(w, block)


def _blk_allocation(w: World) -> tuple[str, Any]:
    from pms.db.uow import read_scope
    from pms.services.groups import room_blocks

    s = _stay_hotel(w)
    url = _blk(w)
    with read_scope(s["ctx"]):
        block = room_blocks.load_block(s["hotel"].id, uuid.UUID(url.rsplit("/", 1)[1]))
    return url + "/allocation", {"allocation": [{
        "room_type_id": str(s["hotel"].room_type.id), "date": block.arrival_date.isoformat(),
        "allotted": 2}]}


RECIPES.update({
    ("POST", f"{P}/blocks"): lambda w: (f"{_stay_hotel(w)['base']}/blocks", _blk_new_body(w)),
    ("PUT", f"{P}/blocks/{{id}}"): lambda w: (_blk(w), {"name": "Renamed"}),
    ("PATCH", f"{P}/blocks/{{id}}"): lambda w: (_blk(w), {"name": "Renamed again"}),
    ("DELETE", f"{P}/blocks/{{id}}"): lambda w: (_blk(w), None),
    ("POST", f"{P}/blocks/{{id}}/tentative"): lambda w: (_blk(w) + "/tentative", None),
    ("POST", f"{P}/blocks/{{id}}/definite"): lambda w: (_blk(w) + "/definite", None),
    ("POST", f"{P}/blocks/{{id}}/release"): lambda w: (_blk(w, "definite") + "/release", None),
    ("POST", f"{P}/blocks/{{id}}/actualize"): lambda w: (
        _blk(w, "definite") + "/actualize", None),
    ("POST", f"{P}/blocks/{{id}}/cancel"): lambda w: (_blk(w) + "/cancel", None),
    ("POST", f"{P}/blocks/{{id}}/lose"): lambda w: (_blk(w) + "/lose", None),
    ("POST", f"{P}/blocks/{{id}}/cut-off"): lambda w: (_blk(w, "definite") + "/cut-off", None),
    ("POST", f"{P}/blocks/{{id}}/wash"): lambda w: (_blk(w, "definite") + "/wash",
                                                    {"percent": 100}),
    ("PUT", f"{P}/blocks/{{id}}/allocation"): _blk_allocation,
    ("POST", f"{P}/blocks/{{id}}/reservations"): _blk_pick,
})


def _blk_rooming(w: World) -> tuple[str, Any]:
    url, body = _blk_pick(w)
    return url.rsplit("/", 1)[0] + "/rooming-list", {"rows": [body]}


RECIPES[("POST", f"{P}/blocks/{{id}}/rooming-list")] = _blk_rooming


def _blk_overpick(w: World) -> tuple[str, Any]:
    """An overpick inside the allocation (a plain pick-up through the overpick route)."""
    url, body = _blk_pick(w)
    return url.rsplit("/", 1)[0] + "/overpicks", body


def _blk_dates(w: World) -> tuple[str, Any]:
    """A DEFINITE block moved a day later (its held room follows)."""
    from datetime import timedelta

    from pms.db.uow import read_scope
    from pms.services.groups import room_blocks

    s = _stay_hotel(w)
    url = _blk(w, "definite")
    with read_scope(s["ctx"]):
        block = room_blocks.load_block(s["hotel"].id, uuid.UUID(url.rsplit("/", 1)[1]))
    return url + "/dates", {
        "arrival_date": (block.arrival_date + timedelta(days=1)).isoformat(),
        "departure_date": (block.departure_date + timedelta(days=1)).isoformat()}


RECIPES[("POST", f"{P}/blocks/{{id}}/overpicks")] = _blk_overpick
RECIPES[("POST", f"{P}/blocks/{{id}}/dates")] = _blk_dates
# an inquiry that never took a guest has ended: its empty master folio is settled
RECIPES[("POST", f"{P}/blocks/{{id}}/master-folio/settle")] = lambda w: (
    _blk(w) + "/master-folio/settle", None)
# the block's bulk jobs: a DEFINITE block with one room picked up (the job is queued: 202)
RECIPES[("POST", f"{P}/blocks/{{id}}/reservations/bulk-cancel")] = lambda w: (
    _blk(w, "definite", picked=True) + "/reservations/bulk-cancel", {})
RECIPES[("POST", f"{P}/blocks/{{id}}/reservations/bulk-date-change")] = lambda w: (
    _blk(w, "definite", picked=True) + "/reservations/bulk-date-change", {"shift_days": 1})


# --- h31 ---
# Routing a stay's folio to a company: a CONFIRMED stay of the stay hotel, a company
# there with an approved POSTPAY method (no receivable account needed).

def _h31_route_stay(w: World) -> tuple[str, Any]:
    s = _stay_hotel(w)
    company = w._post(f"{s['base']}/profiles", {"kind": "COMPANY",
                                                "company_name": random_ref("Co")})["id"]
    base = f"{s['base']}/companies/{company}"
    pm = w._post(f"{base}/payment-methods",
                 {"payment_method_id": owned_method(company)})["id"]
    w._post(f"{base}/payment-methods/{pm}/approve", {"approval": "POSTPAY"})
    return _stay(w) + "/company-billing", {"company_profile_id": company,
                                           "company_payment_method_id": pm, "cap": "50.00"}


def _h31_unroute_stay(w: World) -> tuple[str, Any]:
    path, body = _h31_route_stay(w)
    resp = w.api.put(path, body)
    assert resp.status_code == 200, resp.text
    return path, None


def _h31_receivable_payment(w: World) -> tuple[str, Any]:
    """A payment of 1.00 against an account the company owes 100.00 on (as a direct bill at a
    check-out leaves it; written here, not through a stay, to keep the recipe short)."""
    from decimal import Decimal

    from pms.context import Ctx
    from pms.db.uow import unit_of_work
    from pms.models import CompanyReceivableAccount

    w.api.put(_co(w, "/receivable-account"), {"credit_limit": "1500.00", "currency": "EUR"})
    with unit_of_work(Ctx(env_id=w.api.env_id, sub="recipe")):
        CompanyReceivableAccount.update(open_balance=Decimal("100.00")).where(
            CompanyReceivableAccount.company_profile_id == uuid.UUID(_company_id(w))).execute()
    return _co(w, "/receivable-account/payments"), {"amount": "1.00", "currency": "EUR",
                                                    "reference": "WIRE-1"}


def _ar_item(w: World, kind: str = "DIRECT_BILL") -> str:
    """An item of the company's receivable (100.00 open, written here as a check-out or a
    payment leaves it, to keep the recipes short)."""
    from datetime import date
    from decimal import Decimal

    from pms.context import Ctx
    from pms.db.uow import unit_of_work
    from pms.models import CompanyArItem

    w.api.put(_co(w, "/receivable-account"), {"credit_limit": "1500.00", "currency": "EUR"})
    company = uuid.UUID(_company_id(w))
    prop = uuid.UUID(_co(w).split("/")[3])
    with unit_of_work(Ctx(env_id=w.api.env_id, sub="recipe")):
        item = CompanyArItem.create(
            company_profile_id=company, property_id=prop, kind=kind, currency="EUR",
            amount=Decimal("100.00") * (1 if kind == "DIRECT_BILL" else -1),
            open_amount=Decimal("100.00"), business_date=date(2031, 1, 1))
    return str(item.id)


def _ar_apply(w: World) -> tuple[str, Any]:
    _ar_item(w)
    invoice = w._post(_co(w, "/receivable-account/invoices"), {})["id"]
    return (_co(w, f"/receivable-account/items/{_ar_item(w, 'PAYMENT')}/apply"),
            {"invoice_id": invoice})


RECIPES.update({
    ("POST", f"{CO}/receivable-account/invoices"): lambda w: (
        _co(w, "/receivable-account/invoices"), {"item_ids": [_ar_item(w)]}),
    ("POST", f"{CO}/receivable-account/items/{{id}}/apply"): _ar_apply,
    ("POST", f"{CO}/receivable-account/write-offs"): lambda w: (
        _co(w, "/receivable-account/write-offs"), {"item_id": _ar_item(w), "amount": "1.00",
                                                   "reason": "goodwill"}),
    ("PUT", f"{CO}/routing-instructions"): lambda w: (
        _co(w, "/routing-instructions"), {"categories": ["room", "tax"]}),
})


RECIPES.update({
    ("PUT", f"{P}/reservations/{{id}}/company-billing"): _h31_route_stay,
    ("DELETE", f"{P}/reservations/{{id}}/company-billing"): _h31_unroute_stay,
    ("POST", f"{CO}/receivable-account/payments"): _h31_receivable_payment,
})


# --- h37 ---
# every admin submit alias takes its domain route's recipe, at the alias path.
def _h37_alias_recipes() -> dict[tuple[str, str], Recipe]:
    from pms.api.admin import alias_table
    from pms.routes import all_routes

    out: dict[tuple[str, str], Recipe] = {}
    for (method, domain_path), (alias, _spec) in alias_table(all_routes()).items():
        domain = RECIPES[(method, domain_path)]
        prefix = alias[: len(alias) - len(domain_path.removeprefix("/v1"))]

        def recipe(w: World, _domain: Recipe = domain, _prefix: str = prefix) -> tuple[str, Any]:
            url, body = _domain(w)
            return _prefix + url.removeprefix("/v1"), body

        out[(method, alias)] = recipe
    return out


RECIPES.update(_h37_alias_recipes())


# --- h37p ---
# policy administration, each id-bearing route on a row of the owner's env.
def _h37p_policy_recipes() -> dict[tuple[str, str], Recipe]:
    bodies: dict[str, tuple[Callable[[], dict[str, Any]], dict[str, Any] | None]] = {
        "policy-sets": (lambda: {"name": random_ref("ps"), "rules": [
            {"effect": "deny", "scopes": ["hotel:pms:rates:write"]}]}, {"name": "renamed"}),
        "relations": (lambda: {"subject": f"user:{random_ref('u')}", "relation": "staff",
                               "object": f"property:{uuid.uuid4()}"}, None),
        "attributes": (lambda: {"target_kind": "subject", "target_id": f"user:{random_ref('u')}",
                                "name": "team", "value": "desk"}, {"value": "night"}),
    }
    out: dict[tuple[str, str], Recipe] = {}
    for kind, (make, put) in bodies.items():
        def recipe(w: World, _kind: str = kind, _make: Any = make, _body: Any = None
                   ) -> tuple[str, Any]:
            return f"/v1/admin/{_kind}/{w._post(f'/v1/admin/{_kind}', _make())['id']}", _body

        out[("POST", f"/v1/admin/{kind}")] = lambda w, _kind=kind, _make=make: (
            f"/v1/admin/{_kind}", _make())
        out[("GET", f"/v1/admin/{kind}/{{id}}")] = recipe
        out[("DELETE", f"/v1/admin/{kind}/{{id}}")] = recipe
        if put is not None:
            out[("PUT", f"/v1/admin/{kind}/{{id}}")] = functools.partial(recipe, _body=put)

    def replace_set(w: World) -> tuple[str, Any]:
        """A policy set is replaced only with its version (If-Match: its ETag)."""
        made = w._post("/v1/admin/policy-sets", bodies["policy-sets"][0]())
        return (f"/v1/admin/policy-sets/{made['id']}",
                RawBody(json={"name": "renamed"}, headers={"If-Match": f'"{made["version"]}"'}))

    out[("PUT", "/v1/admin/policy-sets/{id}")] = replace_set
    return out


RECIPES.update(_h37p_policy_recipes())


# --- h36 ---
# (config bundles): a bundle of one new package applied to the world's property, so the
# one change is one pair (a bundle of n changes writes n pairs: tests/api/test_config_bundles.py)
RECIPES.update({
    ("POST", f"{P}/config-bundle"): lambda w: (w.fill(f"{P}/config-bundle") + "?dry_run=false", {
        "bundle_version": 1,
        "packages": [{"code": random_ref("PK"), "name": "Late check-out", "price": "25.00"}]}),
})
