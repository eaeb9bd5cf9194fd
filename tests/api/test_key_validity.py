"""A key's validity window through the HTTP API, on SQLite and PostgreSQL: no key is issued
once the stay's window is over, and an extension never revives a key whose window ended,
whether or not the sweeper has written it EXPIRED."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pms.db.uow import unit_of_work
from pms.models import DigitalKey
from pms.services.keys import lock_sync
from tests.factories import make_booking_hotel, make_checked_in
from tests.helpers import assert_problem


@pytest.fixture
def hotel(ctx):
    return make_booking_hotel(ctx, rooms=2)


def _issue(api, hotel, stay):
    return api.post(f"/v1/properties/{hotel.id}/digital-keys",
                    {"reservation_id": str(stay.id), "key_type": "MOBILE"})


def _keys(api, hotel, stay):
    return api.get(f"/v1/properties/{hotel.id}/digital-keys?reservation_id={stay.id}").json[
        "data"]


def test_no_key_is_issued_once_the_departure_days_check_out_time_has_passed(api, ctx, hotel):
    from pms.models import Property, Reservation

    stay = make_checked_in(ctx, hotel)
    assert _issue(api, hotel, stay).status_code == 201
    with unit_of_work(ctx):  # the guest is still in house on the departure day, after check-out
        Reservation.update(departure_date=hotel.today).where(Reservation.id == stay.id).execute()
        Property.update(check_out_time="00:00").where(Property.id == hotel.id).execute()
    problem = assert_problem(_issue(api, hotel, stay), 409, "key_validity_ended")
    assert problem["valid_until"]
    assert len(_keys(api, hotel, stay)) == 1


@pytest.mark.parametrize("swept", [False, True])
def test_an_extension_never_revives_a_key_whose_window_ended(api, ctx, hotel, swept):
    stay = make_checked_in(ctx, hotel)
    key = _issue(api, hotel, stay).json
    with unit_of_work(ctx):  # the key's window ended (as at its departure's check-out time)
        DigitalKey.update(valid_until=ctx.now - timedelta(minutes=1)).where(
            DigitalKey.reservation == stay.id).execute()
    if swept:
        assert lock_sync.expire_keys(ctx) == 1
    later = stay.departure_date + timedelta(days=2)
    resp = api.put(f"/v1/properties/{hotel.id}/reservations/{stay.id}",
                   {"departure_date": later.isoformat()})
    assert resp.status_code == 200, resp.text
    [listed] = _keys(api, hotel, stay)
    assert listed["id"] == key["id"] and listed["status"] == "EXPIRED"
    with unit_of_work(ctx):
        stored = DigitalKey.get_by_id(key["id"])
    assert stored.valid_until <= ctx.now  # not moved to the new departure
    # the stay gets a new key for the new dates
    assert _issue(api, hotel, stay).json["status"] == "INACTIVE"


def test_staff_list_a_rooms_live_keys_across_stays(api, ctx, hotel):
    from pms.db.uow import read_scope
    from pms.devkeys import mint_token
    from pms.models import Reservation

    stay = make_checked_in(ctx, hotel)
    with read_scope(ctx):
        number = Reservation.get_by_id(stay.id).room.room_number
    live = _issue(api, hotel, stay).json
    ended = _issue(api, hotel, stay).json
    api.post(f"/v1/properties/{hotel.id}/digital-keys/{ended['id']}/activate")
    with unit_of_work(ctx):
        DigitalKey.update(valid_until=ctx.now - timedelta(minutes=1)).where(
            DigitalKey.id == ended["id"]).execute()
    other = make_checked_in(ctx, hotel)
    _issue(api, hotel, other)
    url = f"/v1/properties/{hotel.id}/digital-keys/live?room_number={number}"
    listed = api.get(url)
    assert listed.status_code == 200, listed.text
    assert [k["id"] for k in listed.json["data"]] == [live["id"]]
    guest = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                       holder_id=str(stay.guest_profile_id or stay.id))
    assert_problem(api.get(url, token=guest), 403)
