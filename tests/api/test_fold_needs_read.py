"""a create that folds into an existing
row hands it back only to a caller holding the read scope, and a reservation's only to the
`sub` that made it; anyone else gets 409 without the row's fields. The fold itself still makes
no second row."""

from __future__ import annotations

from pms.db.uow import read_scope
from pms.devkeys import mint_token
from pms.models import Profile, Reservation
from tests.factories import make_booking_hotel, make_profile, reservation_body
from tests.helpers import assert_problem, random_ref

PROFILES_WRITE = "hotel:pms:profiles:write"
RESERVATIONS_WRITE = "hotel:pms:reservations:write"
RESERVATIONS_READ = "hotel:pms:reservations:read"


def test_a_write_only_token_gets_409_profile_exists_without_the_profile(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    email = f"{random_ref('fold')}@example.com"
    existing = make_profile(ctx, hotel.id, email=email, phone="+44 20 7946 0001",
                            last_name="Hopper")
    url = f"/v1/properties/{hotel.id}/profiles"
    writer = mint_token(api.settings, env_id=api.env_id, scopes=[PROFILES_WRITE])
    resp = api.post(url, {"last_name": "X", "email": email.upper()}, token=writer)
    assert_problem(resp, 409, "profile_exists")
    for secret in (str(existing.id), "+44 20 7946 0001", "Hopper"):
        assert secret not in resp.text
    with read_scope(ctx):
        assert Profile.select().where(Profile.email_normalized == email).count() == 1
    # a new email is still created for the write-only token
    fresh = api.post(url, {"last_name": "New", "email": f"{random_ref('n')}@example.com"},
                     token=writer)
    assert fresh.status_code == 201
    # with the read scope the fold answers the existing profile
    reader = mint_token(api.settings, env_id=api.env_id,
                        scopes=[PROFILES_WRITE, "hotel:pms:profiles:read"])
    resp = api.post(url, {"last_name": "X", "email": email}, token=reader)
    assert resp.status_code == 200 and resp.json["id"] == str(existing.id)


def _booking(hotel, number: str) -> dict:
    return reservation_body(hotel, confirmation_number=number)


def test_a_confirmation_number_folds_only_for_its_maker_holding_the_read_scope(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=3)
    url = f"/v1/properties/{hotel.id}/reservations"
    number = random_ref("CH")
    channel_a = mint_token(api.settings, env_id=api.env_id, sub="channel-a",
                           scopes=[RESERVATIONS_WRITE, RESERVATIONS_READ])
    made = api.post(url, _booking(hotel, number), token=channel_a)
    assert made.status_code == 201, made.text
    # the maker's retry folds into its own booking
    again = api.post(url, _booking(hotel, number), token=channel_a)
    assert again.status_code == 200 and again.json["id"] == made.json["id"]
    # another channel, even holding the read scope, gets 409 and nothing of the booking
    channel_b = mint_token(api.settings, env_id=api.env_id, sub="channel-b",
                           scopes=[RESERVATIONS_WRITE, RESERVATIONS_READ])
    resp = api.post(url, _booking(hotel, number), token=channel_b)
    assert_problem(resp, 409, "confirmation_number_taken")
    assert made.json["id"] not in resp.text and "Lovelace" not in resp.text
    # the maker without the read scope: 409 too (write does not imply read)
    writer_a = mint_token(api.settings, env_id=api.env_id, sub="channel-a",
                          scopes=[RESERVATIONS_WRITE])
    resp = api.post(url, _booking(hotel, number), token=writer_a)
    assert_problem(resp, 409, "confirmation_number_taken")
    assert made.json["id"] not in resp.text
    # one reservation, its nights taken once
    with read_scope(ctx):
        assert Reservation.select().where(Reservation.confirmation_number == number).count() == 1
        assert Reservation.select().where(Reservation.property == hotel.id).count() == 1
