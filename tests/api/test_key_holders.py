"""A key has a holder, the profile it is for: the stay's guest by default, or a companion
sharing the room named at issue. The companion's guest app (a guest token of its own profile)
reaches its own key (list, activate) and nothing else of the stay; the stay's guest sees every
key of its stay; anyone else 404. On SQLite and PostgreSQL, through the HTTP API."""

from __future__ import annotations

import uuid

from pms.devkeys import mint_token
from tests.factories import make_booking_hotel, make_checked_in, make_profile
from tests.helpers import assert_problem


def _guest(api, profile) -> str:  # noqa: ANN001
    return mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                      holder_id=str(profile.id))


def test_a_companions_guest_app_holds_its_own_key(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=2)
    guest, companion, stranger = (make_profile(ctx, hotel.id) for _ in range(3))
    stay = make_checked_in(ctx, hotel, guest_profile_id=str(guest.id), guest=None)
    base = f"/v1/properties/{hotel.id}/digital-keys"
    own = api.post(base, json={"reservation_id": str(stay.id), "key_type": "MOBILE"})
    theirs = api.post(base, json={"reservation_id": str(stay.id), "key_type": "MOBILE",
                                  "holder_profile_id": str(companion.id)})
    assert own.status_code == theirs.status_code == 201, theirs.text
    assert own.json["holder_profile_id"] == str(guest.id)  # the stay's guest by default
    assert theirs.json["holder_profile_id"] == str(companion.id)
    listing = {"reservation_id": str(stay.id)}

    seen = api.get(base, params=listing, token=_guest(api, companion))
    assert seen.status_code == 200, seen.text
    assert [k["id"] for k in seen.json["data"]] == [theirs.json["id"]]
    on = api.post(f"{base}/{theirs.json['id']}/activate", token=_guest(api, companion))
    assert on.status_code == 200 and on.json["status"] == "ACTIVE", on.text
    assert_problem(api.post(f"{base}/{own.json['id']}/activate",
                            token=_guest(api, companion)), 404)

    mine = api.get(base, params=listing, token=_guest(api, guest)).json["data"]
    assert {k["id"] for k in mine} == {own.json["id"], theirs.json["id"]}
    assert_problem(api.get(base, params=listing, token=_guest(api, stranger)), 404)
    assert_problem(api.post(f"{base}/{theirs.json['id']}/deactivate",
                            token=_guest(api, stranger)), 404)


def test_a_key_holder_is_a_guest_profile_of_the_env(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    stay = make_checked_in(ctx, hotel)
    company = make_profile(ctx, hotel.id, kind="COMPANY", company_name="Acme Travel")
    base = f"/v1/properties/{hotel.id}/digital-keys"
    for holder in (company.id, uuid.uuid4()):
        body = assert_problem(api.post(base, json={
            "reservation_id": str(stay.id), "key_type": "CARD",
            "holder_profile_id": str(holder)}), 422, "unknown_reference")
        assert body["errors"][0]["field"] == "holder_profile_id"
    assert api.get(base, params={"reservation_id": str(stay.id)}).json["data"] == []
