"""A kiosk token whose session is bound to reservation A reaches no other reservation on any
route, driven from the route table: every operation the app serves is called with a
kiosk token (kiosk scopes), A's live session, and B's ids wherever the path or the body names
a reservation (or B's key, for the key routes). Nothing may change B, and no answer may show B;
the session routes answer 404. Two Bs: one arriving today (what check-in would take) and one
in house with a key (what key issue and check-out would take). A route added later is covered
by construction; the positive control shows the same session works on A.
"""

from __future__ import annotations

import re
import uuid

import msgspec
import pytest

from pms.db.uow import read_scope
from pms.models import DigitalKey, Reservation
from pms.routes import all_routes, operations
from pms.schemas.keys import KeyIn
from pms.services.keys import keys
from tests.api.kiosk_recipes import configure, kiosk_token, session_for, with_session
from tests.factories import make_booking_hotel, make_checked_in, make_reservation, pay_folio

OPERATIONS = [(m, p, s) for m, p, _f, s in operations(all_routes())]
SESSION_ROUTES = {(m, p) for m, p, s in OPERATIONS if s.kiosk == "session"}


def test_the_session_routes_are_exactly_check_in_key_issue_check_out_folio_and_add_ons():
    base = "/v1/properties/{property_id}"
    assert SESSION_ROUTES == {("POST", base + "/reservations/{id}/check-in"),
                              ("POST", base + "/reservations/{id}/check-out"),
                              ("POST", base + "/digital-keys"),
                              ("GET", base + "/kiosk/reservations/{id}/folio"),
                              ("POST", base + "/kiosk/reservations/{id}/add-ons"),
                              ("POST", base + "/kiosk/reservations/{id}/check-out")}


def _state(ctx, row):
    with read_scope(ctx):
        res = Reservation.get_by_id(row.id)
        held = [(k.id, k.status, k.version) for k in
                DigitalKey.select().where(DigitalKey.reservation == row.id)]
    return res.status, res.version, res.room_id, sorted(held, key=str)


def _url(path, hotel, target, key_id):
    values = {"property_id": str(hotel.id), "room_number": "100", "name": "arrivals",
              "list": "reservation-statuses", "profile_id": str(uuid.uuid4())}

    def fill(match):
        name = match.group(1)
        if name == "id":
            return str(key_id) if "/digital-keys/" in path else str(target.id)
        return values.get(name, str(target.id))
    return re.sub(r"\{(\w+)\}", fill, path)


def _body(spec, target):
    if spec.body is None:
        return None
    names = {f.name for f in msgspec.structs.fields(spec.body)} if hasattr(
        spec.body, "__struct_fields__") else set()
    body = {}
    if "reservation_id" in names:
        body["reservation_id"] = str(target.id)
    if "key_type" in names:
        body["key_type"] = "CARD"
    if "package_code" in names:
        body["package_code"] = "BRKF"
    return body


@pytest.mark.slow
def test_a_kiosk_session_for_one_reservation_reaches_no_other_on_any_route(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=4)
    configure(ctx, hotel)
    mine = make_reservation(ctx, hotel, guest={"last_name": "Lovelace"})
    arriving = make_reservation(ctx, hotel, guest={"last_name": "Byron"})
    in_house = make_checked_in(ctx, hotel, guest={"last_name": "Shelley"})
    pay_folio(ctx, in_house, "100.00")  # so nothing but the session stops its check-out
    key = keys.issue_key(ctx, hotel.id, KeyIn(reservation_id=in_house.id, key_type="CARD"))
    token = kiosk_token(api)
    session = session_for(api, hotel, token, mine)
    headers = with_session(session)
    for target in (arriving, in_house):
        before = _state(ctx, target)
        for method, path, spec in OPERATIONS:
            url = _url(path, hotel, target, key.id)
            resp = api.request(method, url, token=token, headers=headers,
                               json=_body(spec, target))
            where = f"{method} {path} -> {resp.status_code} {resp.text[:200]}"
            if (method, path) in SESSION_ROUTES:
                assert resp.status_code == 404, where
            if 200 <= resp.status_code < 300:
                assert str(target.id) not in resp.text, where
                assert target.confirmation_number not in resp.text, where
                assert str(key.id) not in resp.text, where
            assert _state(ctx, target) == before, where
    # the positive control: the same token and session act on A
    resp = api.post(f"/v1/properties/{hotel.id}/reservations/{mine.id}/check-in", {},
                    token=token, headers=headers)
    assert resp.status_code == 200, resp.text
