"""The holder-scoping matrix (CONTRACT §2: a holder sees only its own rows; others answer 404),
driven from the route table so that no route can skip it.

Every operation of `pms.routes.all_routes()` must appear in `GUEST_CLASS` below, with the class
its `@endpoint(guest=...)` declares: adding a route fails `test_every_route_is_classified_for_
guests` until someone decides what a guest may do there. Then, per class:
- deny: a guest token holding every scope answers 403 guest_not_allowed;
- open: a guest token is served (no holder-owned rows are involved);
- own: a guest token of ANOTHER holder answers 404 on the holder's rows, and the holder's own
  token is served.
Plus the regressions found earlier, each named after its rule.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from pms.db.uow import read_scope
from pms.devkeys import mint_token
from pms.models import Folio
from pms.routes import all_routes, operations
from tests.factories import make_booking_hotel, make_checked_in, make_profile, make_reservation
from tests.helpers import assert_problem, owned_method, random_ref

P = "/v1/properties/{property_id}"
R = P + "/reservations/{id}"
F = P + "/folios/{id}"
C = P + "/companies/{profile_id}"

# The decision per operation. Keep in step with the `guest=` of each @endpoint.
OPEN = {
    ("GET", "/v1/openapi.json"), ("GET", "/v1/properties"), ("GET", P),
    ("GET", P + "/room-types"), ("GET", P + "/room-types/{id}"),
    ("GET", P + "/packages"), ("GET", P + "/packages/{id}"),
    ("POST", P + "/promo/validate"), ("POST", P + "/availability"), ("GET", "/v1/availability"),
    ("GET", P + "/images"),  # a property's pictures, as its room types
}
OWN = {
    ("POST", P + "/profiles"), ("GET", P + "/profiles/{id}"),
    ("POST", P + "/corporate-availability"),
    ("GET", P + "/reservations"), ("POST", P + "/reservations"), ("GET", R), ("PUT", R),
    ("POST", R + "/cancel"), ("POST", R + "/pre-check-in"), ("GET", R + "/boarding-pass"),
    ("GET", R + "/messages"), ("POST", R + "/messages"),
    ("GET", R + "/service-requests"), ("POST", R + "/service-requests"),
    ("POST", R + "/check-in"), ("POST", R + "/check-out"),
    ("GET", R + "/folio"), ("GET", R + "/folios"), ("GET", P + "/folios"), ("GET", F),
    ("POST", F + "/pre-authorizations"), ("GET", F + "/invoice"), ("GET", F + "/documents"),
    # a guest's keys, feedback and payment methods are its own stays' and profile's
    ("GET", P + "/digital-keys"), ("POST", P + "/digital-keys"),
    ("POST", P + "/digital-keys/{id}/activate"), ("POST", P + "/digital-keys/{id}/deactivate"),
    ("GET", P + "/feedback"), ("POST", P + "/feedback"),
    ("GET", P + "/profiles/{id}/payment-methods"), ("POST", P + "/profiles/{id}/payment-methods"),
    ("DELETE", P + "/profiles/{id}/payment-methods"),
    # a guest's data rights are its own: consents, the export of its data, its erasure
    ("GET", P + "/profiles/{id}/consents"), ("GET", P + "/profiles/{id}/consents/current"),
    ("POST", P + "/profiles/{id}/consents"), ("POST", P + "/profiles/{id}/erasure"),
    ("GET", P + "/profiles/{id}/personal-data"),
    ("POST", P + "/profiles/{id}/personal-data/exports"),
    ("GET", P + "/profiles/{id}/personal-data/exports/{job_id}"),
    ("GET", P + "/profiles/{id}/personal-data/exports/{job_id}/archive"),
    # a traveler answers a company's invitation on its own profile only
    ("GET", P + "/profiles/{id}/company-invitations"),
    ("POST", P + "/profiles/{id}/company-invitations/{invitation_id}/accept"),
    ("POST", P + "/profiles/{id}/company-invitations/{invitation_id}/decline"),
    # corporate accounts: a traveler session bound to the company, or the company's
    # own profile; the owner here is the company's own token (client_kind user)
    ("GET", C + "/users"), ("POST", C + "/users"), ("DELETE", C + "/users/{id}"),
    ("PATCH", C + "/users/{id}"),
    ("GET", C + "/payment-methods"), ("POST", C + "/payment-methods"),
    ("DELETE", C + "/payment-methods/{id}"), ("POST", C + "/payment-methods/{id}/resubmit"),
    ("GET", C + "/bookings"),  # "our bookings": the company's stays, by the caller's role
}

OPERATIONS = sorted((m, p, s.guest) for m, p, _f, s in operations(all_routes()))


def guest_class(method: str, path: str) -> str:
    if (method, path) in OPEN:
        return "open"
    if (method, path) in OWN:
        return "own"
    return "deny"


def test_every_route_is_classified_for_guests():
    declared = {(m, p): g for m, p, g in OPERATIONS}
    stale = (OPEN | OWN) - set(declared)
    assert not stale, f"classified here but not routed: {sorted(stale)}"
    wrong = {k: (g, guest_class(*k)) for k, g in declared.items() if g != guest_class(*k)}
    assert not wrong, ("the route's guest= and this table disagree: decide, then update both "
                       f"(route, table): {wrong}")


# -- the scene: two guests of one hotel ------------------------------------------------------

@dataclass
class Scene:
    api: Any
    ctx: Any
    hotel: Any
    mine: Any           # holder A's profile
    theirs: Any         # holder B's profile
    company: Any        # a company profile with a negotiated plan
    reservation: Any    # A's CONFIRMED reservation
    stay: Any           # A's CHECKED_IN stay
    folio_id: uuid.UUID  # the guest folio of `stay`
    room_number: str    # the room of `stay`

    def token(self, holder: Any, kind: str = "guest") -> str:
        return mint_token(self.api.settings, env_id=self.api.env_id, client_kind=kind,
                          holder_id=str(holder))

    @property
    def base(self) -> str:
        return f"/v1/properties/{self.hotel.id}"


@pytest.fixture
def scene(api, ctx) -> Scene:
    hotel = make_booking_hotel(ctx, rooms=4)
    mine = make_profile(ctx, hotel.id, email=f"{random_ref('a')}@example.com")
    theirs = make_profile(ctx, hotel.id, email=f"{random_ref('b')}@example.com")
    company = make_profile(ctx, hotel.id, kind="COMPANY", company_name="Acme", last_name=None,
                           first_name=None)
    reservation = make_reservation(ctx, hotel, guest_profile_id=str(mine.id), guest=None)
    stay = make_checked_in(ctx, hotel, guest_profile_id=str(mine.id), guest=None,
                           departure_date=(hotel.today + timedelta(days=1)).isoformat())
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == stay.id)
        room_number = stay.room.room_number
    return Scene(api, ctx, hotel, mine, theirs, company, reservation, stay, folio.id,
                 room_number)


def _stay_body(s: Scene) -> dict[str, Any]:
    return {"arrival_date": s.hotel.today.isoformat(),
            "departure_date": (s.hotel.today + timedelta(days=1)).isoformat(), "adults": 1}


def _target(s: Scene, method: str, path: str) -> tuple[str, Any]:
    """(url, body) of an operation aimed at holder A's rows."""
    ids = {"property_id": s.hotel.id, "id": s.reservation.id}
    body: Any = None
    if path.startswith(F) or path == P + "/folios/{id}":
        ids["id"] = s.folio_id
    if path in (R + "/folio", R + "/folios", R + "/check-out"):
        ids["id"] = s.stay.id
    if "/profiles/{id}" in path:
        ids["id"] = s.mine.id
    if path.startswith(C):
        ids["profile_id"] = s.company.id
        ids["id"] = _company_row(s, path)
    if "{invitation_id}" in path:  # a company's invitation of holder A (by its own token)
        invited = s.api.post(f"{s.base}/companies/{s.company.id}/users",
                             {"traveler_profile_id": str(s.mine.id), "role": "VIEWER"},
                             token=s.token(s.company.id, "user"))
        assert invited.status_code == 202, invited.text
        ids["invitation_id"] = invited.json["id"]
    if "{job_id}" in path:  # an export job of holder A's
        from pms.services.privacy import export_jobs

        ids["job_id"] = export_jobs.start(s.ctx, s.hotel.id, s.mine.id).id
    url = path
    for name, value in ids.items():
        url = url.replace("{" + name + "}", str(value))
    bodies: dict[tuple[str, str], Any] = {
        ("POST", P + "/profiles"): {"last_name": "Intruder", "email": s.mine.email},
        ("PUT", P + "/profiles/{id}/loyalty-number"): {"loyalty_number": "GOLD-1"},
        ("POST", P + "/profiles/{id}/consents"): {"purpose": "PROFILING", "granted": True,
                                                  "source": "GUEST_PORTAL", "text_version": "v1"},
        ("POST", P + "/profiles/{id}/erasure"): {"dry_run": True},
        ("POST", P + "/corporate-availability"): {**_stay_body(s),
                                                  "company_profile_id": str(s.company.id)},
        ("POST", P + "/reservations"): {
            "room_type_id": str(s.hotel.room_type.id), "rate_plan_id": str(s.hotel.rate_plan.id),
            **_stay_body(s), "guest_profile_id": str(s.mine.id)},
        ("PUT", R): {"adults": 1},
        ("POST", R + "/pre-check-in"): {"nationality": "DE", "terms_accepted": True},
        ("POST", R + "/messages"): {"direction": "incoming", "body": "Late arrival"},
        ("POST", R + "/service-requests"): {"kind": "towels"},
        ("POST", R + "/check-in"): {},
        # the sandbox's method of holder A (a guest pays only with its own)
        ("POST", F + "/pre-authorizations"): {"amount": "50",
                                              "payment_method_id": f"pm_holder_{s.mine.id.hex}"},
        ("POST", C + "/users"): {"traveler_profile_id": str(s.theirs.id), "role": "VIEWER"},
        ("PATCH", C + "/users/{id}"): {"role": "BOOKER"},
        ("POST", C + "/payment-methods"): {"payment_method_id": owned_method(s.company.id)},
    }
    body = bodies.get((method, path))
    if (method, path) == ("GET", P + "/folios"):
        url += f"?room_number={s.room_number}"
    return _issue_29_target(s, method, path, url, body)


def _issue_29_target(s: Scene, method: str, path: str, url: str, body: Any) -> tuple[str, Any]:
    """Digital keys, feedback and payment methods aimed at holder A's stay and profile."""
    from pms.schemas.keys import KeyIn
    from pms.services.keys import keys
    from pms.services.profiles import guest_payment_methods

    stay = str(s.stay.id)
    if path == P + "/digital-keys":
        if method == "GET":
            return url + f"?reservation_id={stay}", None
        return url, {"reservation_id": stay, "key_type": "MOBILE"}
    if path.startswith(P + "/digital-keys/{id}/"):
        key = keys.issue_key(s.ctx, s.hotel.id, KeyIn(reservation_id=s.stay.id,
                                                        key_type="CARD"))
        return url.replace(str(s.reservation.id), str(key.id)), None
    if path == P + "/feedback":
        if method == "GET":
            return url + f"?reservation_id={stay}", None
        return url, {"reservation_id": stay, "rating": 5}
    if path == P + "/profiles/{id}/payment-methods":
        # sandbox methods the payments service reports as the holder's own
        if method == "POST":
            return url, {"payment_method_id": f"pm_holder_{s.mine.id.hex}_visa"}
        if method == "DELETE":
            from pms.platform.payments import EmbeddedPayments
            from pms.schemas.feedback import PaymentMethodIn

            amex = f"pm_holder_{s.mine.id.hex}_amex"
            guest_payment_methods.add_method(s.ctx, s.hotel.id, s.mine.id,
                                             PaymentMethodIn(payment_method_id=amex),
                                             payments=EmbeddedPayments())
            return url + f"?payment_method_id={amex}", None
    return url, body


def _company_row(s: Scene, path: str) -> Any:
    """A row of the scene's company for the item routes (made by staff), else None."""
    base = f"{s.base}/companies/{s.company.id}"
    if path.endswith("/users/{id}"):
        resp = s.api.post(f"{base}/users", {"traveler_profile_id": str(s.mine.id),
                                            "role": "VIEWER"})
        return resp.json["id"]
    if "/payment-methods/{id}" in path:
        pm = s.api.post(f"{base}/payment-methods",
                        {"payment_method_id": owned_method(s.company.id)}).json["id"]
        if path.endswith("/resubmit"):
            s.api.post(f"{base}/payment-methods/{pm}/reject", {"reason": "no contract"})
        return pm
    return None


# Status codes the own holder may get where the operation's precondition is not met in the
# scene (the point there is only that it is not refused as a stranger).
OWN_ALSO = {
    ("POST", R + "/check-out"): {409},          # the folio has a balance
    ("GET", F + "/invoice"): {404},             # no invoice issued for an open folio
    ("POST", F + "/pre-authorizations"): {402},  # the sandbox may decline
    # the export job is queued, not run: its archive is not there yet
    ("GET", P + "/profiles/{id}/personal-data/exports/{job_id}/archive"): {409},
}


def _own_ops() -> list[tuple[str, str]]:
    return [(m, p) for m, p, g in OPERATIONS if g == "own"]


def _ids(ops: list[Any]) -> list[str]:
    return [f"{o[0]} {o[1]}" for o in ops]


@pytest.mark.parametrize("method,path", _own_ops(), ids=_ids(_own_ops()))
def test_another_holders_guest_token_answers_404_and_the_own_holder_is_served(
        scene, method, path):
    url, body = _target(scene, method, path)
    stranger = scene.token(scene.theirs.id)
    resp = scene.api.request(method, url, json=body, token=stranger)
    if (method, path) == ("POST", P + "/profiles"):
        # the ensure is the stranger's own profile, never the one whose email it sent
        assert resp.status_code == 200, resp.text
        assert resp.json["id"] == str(scene.theirs.id)
        assert scene.mine.email not in resp.text
    elif (method, path) == ("GET", P + "/reservations"):
        assert resp.status_code == 200, resp.text
        assert resp.json["data"] == []
    else:
        assert_problem(resp, 404)
    owner = scene.company.id if "corporate" in path or path.startswith(C) else scene.mine.id
    kind = "user" if path.startswith(C) else "guest"  # company rows: a traveler-kind session
    resp = scene.api.request(method, url, json=body, token=scene.token(owner, kind))
    assert resp.status_code in {200, 201, 202, 204} | OWN_ALSO.get((method, path), set()), \
        (url, resp.status_code, resp.text)


def _deny_ops() -> list[tuple[str, str]]:
    return [(m, p) for m, p, g in OPERATIONS if g == "deny"]


@pytest.mark.parametrize("method,path", _deny_ops(), ids=_ids(_deny_ops()))
def test_staff_only_routes_answer_403_to_guest_tokens(api, method, path):
    # the guest gate runs before the body is read and before any row is loaded, so random ids
    # and no body are enough; the token holds every scope
    words = {"room_number": "101", "name": "arrivals"}  # every other parameter is an id
    url = re.sub(r"\{(\w+)\}", lambda m: words.get(m.group(1), str(uuid.uuid4())), path)
    guest = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                       holder_id=str(uuid.uuid4()))
    assert_problem(api.request(method, url, token=guest), 403, "guest_not_allowed")
    traveler = mint_token(api.settings, env_id=api.env_id, client_kind="user",
                          holder_id=str(uuid.uuid4()))
    assert_problem(api.request(method, url, token=traveler), 403, "guest_not_allowed")


def _open_ops() -> list[tuple[str, str]]:
    return [(m, p) for m, p, g in OPERATIONS if g == "open"]


@pytest.mark.parametrize("method,path", _open_ops(), ids=_ids(_open_ops()))
def test_open_routes_serve_guest_tokens(scene, method, path):
    url = path.replace("{property_id}", str(scene.hotel.id))
    if path.endswith("/room-types/{id}"):
        url = url.replace("{id}", str(scene.hotel.room_type.id))
    body: Any = None
    if path.endswith("/availability") and method == "POST":
        body = _stay_body(scene)
    if path.endswith("/promo/validate"):
        body = {**_stay_body(scene), "code": "NONE", "room_type_id": str(scene.hotel.room_type.id),
                "rate_plan_id": str(scene.hotel.rate_plan.id)}
    if path == "/v1/availability":
        stay = _stay_body(scene)
        url += f"?arrival_date={stay['arrival_date']}&departure_date={stay['departure_date']}"
    if path.endswith("/packages/{id}"):
        pkg = scene.api.post(f"{scene.base}/packages", {"code": random_ref("PK"), "name": "B",
                                                        "price": "5.00"})
        url = url.replace("{id}", pkg.json["id"])
    resp = scene.api.request(method, url, json=body, token=scene.token(scene.theirs.id))
    assert resp.status_code < 400 or resp.status_code == 422, (url, resp.status_code, resp.text)
    assert resp.status_code != 403


# -- regressions, named after their rules --------------------------------------------

def test_in_house_list_is_staff_only_and_never_shows_a_guest_other_stays(scene):
    staff = scene.api.get(f"{scene.base}/in-house")
    assert [r["id"] for r in staff.json["data"]] == [str(scene.stay.id)]
    assert_problem(scene.api.get(f"{scene.base}/in-house", token=scene.token(scene.theirs.id)),
                   403, "guest_not_allowed")


@pytest.mark.parametrize("report", ["arrivals", "in-house", "open-folios", "departures"])
def test_reports_are_staff_only(scene, report):
    url = f"{scene.base}/reports/{report}"
    assert scene.api.get(url).status_code == 200
    for holder in (scene.theirs.id, scene.mine.id):
        assert_problem(scene.api.get(url, token=scene.token(holder)), 403, "guest_not_allowed")


def test_profile_ensure_with_another_guests_email_never_returns_that_profile(scene):
    url = f"{scene.base}/profiles"
    stranger = scene.token(scene.theirs.id)
    resp = scene.api.post(url, {"last_name": "X", "email": scene.mine.email}, token=stranger)
    assert resp.status_code == 200 and resp.json["id"] == str(scene.theirs.id)
    assert scene.mine.email not in resp.text
    # a holder without a profile yet gets its own, created with its holder id ...
    newcomer = uuid.uuid4()
    resp = scene.api.post(url, {"last_name": "New", "email": f"{random_ref('n')}@example.com"},
                          token=scene.token(newcomer))
    assert resp.status_code == 201 and resp.json["id"] == str(newcomer)
    # ... but never by taking another profile's email: a conflict that shows nothing of it
    other = uuid.uuid4()
    resp = scene.api.post(url, {"last_name": "Y", "email": scene.mine.email},
                          token=scene.token(other))
    body = assert_problem(resp, 409, "profile_conflict")
    assert str(scene.mine.id) not in resp.text and "Lovelace" not in str(body)
    # staff keep the ensure-by-email behaviour
    resp = scene.api.post(url, {"last_name": "Z", "email": scene.mine.email})
    assert resp.status_code == 200 and resp.json["id"] == str(scene.mine.id)


def test_a_guest_cannot_give_itself_negotiated_plans_through_its_profile(scene):
    resp = scene.api.post(f"{scene.base}/profiles", {
        "kind": "COMPANY", "company_name": "Mine Inc",
        "preferences": {"negotiated_rate_plan_ids": [str(scene.hotel.rate_plan.id)]}},
        token=scene.token(uuid.uuid4()))
    assert_problem(resp, 422, "field_not_allowed")


def test_confirmation_number_is_no_existence_oracle_for_guests(scene):
    url = f"{scene.base}/reservations"
    body = _target(scene, "POST", P + "/reservations")[1]
    body["guest_profile_id"] = str(scene.theirs.id)
    stranger = scene.token(scene.theirs.id)
    taken = scene.api.post(url, {**body, "confirmation_number":
                                 scene.reservation.confirmation_number}, token=stranger)
    fresh = scene.api.post(url, {**body, "confirmation_number": random_ref("CN")},
                           token=stranger)
    a, b = assert_problem(taken, 422, "field_not_allowed"), assert_problem(fresh, 422)
    assert (a["code"], a["errors"]) == (b["code"], b["errors"])
    assert scene.reservation.confirmation_number not in taken.text
    # staff and channels keep the fold: the same number returns the existing reservation to
    # the sub that made it (the scene's reservation was made as `test-user`)
    maker = mint_token(scene.api.settings, env_id=scene.api.env_id, sub=scene.ctx.sub)
    staff = scene.api.post(url, {**body, "confirmation_number":
                                 scene.reservation.confirmation_number}, token=maker)
    assert staff.status_code == 200 and staff.json["id"] == str(scene.reservation.id)


def test_corporate_availability_gives_negotiated_plans_only_to_the_bound_company(scene):
    url = f"{scene.base}/corporate-availability"
    body = {**_stay_body(scene), "company_profile_id": str(scene.company.id)}
    assert_problem(scene.api.post(url, body, token=scene.token(scene.mine.id)), 404)
    # unknown company: the same answer, so company ids cannot be probed
    assert_problem(scene.api.post(url, {**body, "company_profile_id": str(uuid.uuid4())},
                                  token=scene.token(scene.mine.id)), 404)
    assert scene.api.post(url, body, token=scene.token(scene.company.id)).status_code == 200
    assert scene.api.post(url, body).status_code == 200  # staff
