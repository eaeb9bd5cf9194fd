"""Kiosk config, stay feedback and guest payment-method references through the HTTP API
, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from pms.db.uow import read_scope
from pms.devkeys import mint_token
from pms.errors import FolioNotClosable
from pms.models import Feedback, GuestPaymentMethod, KioskConfig
from pms.platform.payments import EmbeddedPayments
from pms.services.frontdesk import checkout
from tests.factories import (
    make_booking_hotel,
    make_checked_in,
    make_package,
    make_profile,
    make_reservation,
    pay_folio,
)
from tests.helpers import assert_problem, audit_actions, counts, outbox_types


@pytest.fixture
def hotel(ctx):
    return make_booking_hotel(ctx, rooms=3)


def _config(**over):
    body = {"enabled_modes": ["CHECK_IN", "COLLECT_KEY"], "add_on_package_codes": [],
            "lockdown": False, "max_keys_per_stay": 3}
    body.update(over)
    return body


def _token(api, kind: str, holder=None, scopes=None) -> str:
    return mint_token(api.settings, env_id=api.env_id, client_kind=kind,
                      holder_id=str(holder) if holder else None, scopes=scopes)


# -- kiosk config --------------------------------------------------------------------------------

def test_kiosk_config_defaults_until_set_then_put_replaces_it_with_an_event(api, ctx, hotel):
    url = f"/v1/properties/{hotel.id}/kiosk-config"
    got = api.get(url)
    assert got.status_code == 200, got.text
    assert got.json["configured"] is False and got.json["max_keys_per_stay"] == 2
    assert got.json["enabled_modes"] == [] and got.json["lockdown"] is False
    assert got.headers["etag"] == '"0"'
    pkg = make_package(ctx, hotel.id, code="BRKF")
    put = api.put(url, _config(add_on_package_codes=["BRKF"], lockdown=True),
                  headers={"If-Match": '"0"'})
    assert put.status_code == 200, put.text
    assert put.json["configured"] is True and put.json["add_on_package_codes"] == [pkg.code]
    etag = put.headers["etag"]
    assert etag != '"0"' and api.get(url).headers["etag"] == etag
    assert outbox_types(ctx)[-1] == "hotel:pms:kiosk_config:updated"
    assert audit_actions(ctx)[-1] == "kiosk_config.updated"
    again = api.put(url, _config(enabled_modes=["WALK_IN"]), headers={"If-Match": etag})
    assert again.status_code == 200 and again.json["enabled_modes"] == ["WALK_IN"]
    assert again.json["add_on_package_codes"] == [] and again.json["lockdown"] is False
    with read_scope(ctx):
        assert KioskConfig.select().where(KioskConfig.property == hotel.id).count() == 1


def test_a_stale_if_match_answers_412_and_changes_nothing(api, ctx, hotel):
    url = f"/v1/properties/{hotel.id}/kiosk-config"
    first = api.put(url, _config())
    assert first.status_code == 200
    stale = first.headers["etag"]
    assert api.put(url, _config(lockdown=True)).status_code == 200
    written = counts(ctx)
    assert_problem(api.put(url, _config(max_keys_per_stay=1), headers={"If-Match": stale}), 412,
                   "precondition_failed")
    assert_problem(api.put(url, _config(), headers={"If-Match": '"0"'}), 412)
    assert counts(ctx) == written
    assert api.get(url).json["lockdown"] is True


@pytest.mark.parametrize("body,field", [
    (_config(enabled_modes=["CHECK_IN", "CHECK_IN"]), "enabled_modes"),
    (_config(enabled_modes=["TELEPORT"]), "enabled_modes"),
    (_config(add_on_package_codes=["NOPE"]), "add_on_package_codes"),
    (_config(max_keys_per_stay=0), "max_keys_per_stay"),
    (_config(max_keys_per_stay=11), "max_keys_per_stay"),
    ({"enabled_modes": []}, None),
    ({**_config(), "env_id": "x"}, None),
])
def test_invalid_kiosk_configs_answer_422(api, hotel, body, field):
    problem = assert_problem(api.put(f"/v1/properties/{hotel.id}/kiosk-config", body), 422)
    if field:
        assert problem["errors"][0]["field"].startswith(field), problem


def test_kiosk_tokens_may_read_but_never_change_the_kiosk_config(api, hotel):
    url = f"/v1/properties/{hotel.id}/kiosk-config"
    kiosk = _token(api, "kiosk")  # every scope, kiosk:write included
    assert api.get(url, token=kiosk).status_code == 200
    assert_problem(api.put(url, _config(), token=kiosk), 403, "kiosk_not_allowed")
    assert api.get(url).json["configured"] is False
    machine = _token(api, "machine", scopes=["hotel:pms:kiosk:write", "hotel:pms:kiosk:read"])
    assert api.put(url, _config(), token=machine).status_code == 200


def test_guests_cannot_use_the_kiosk_config(api, ctx, hotel):
    guest = make_profile(ctx, hotel.id)
    url = f"/v1/properties/{hotel.id}/kiosk-config"
    assert_problem(api.get(url, token=_token(api, "guest", guest.id)), 403, "guest_not_allowed")


# -- feedback ------------------------------------------------------------------------------------

def _check_out(ctx, hotel, stay):
    try:
        checkout.check_out(ctx, hotel.id, stay.id)
    except FolioNotClosable as exc:
        pay_folio(ctx, stay, exc.extra["balance"])
        checkout.check_out(ctx, hotel.id, stay.id)


def test_feedback_is_one_row_per_stay_and_a_repeat_updates_it(api, ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    url = f"/v1/properties/{hotel.id}/feedback"
    first = api.post(url, {"reservation_id": str(stay.id), "rating": 3, "comment": "ok"})
    assert first.status_code == 201, first.text
    assert outbox_types(ctx)[-1] == "hotel:pms:feedback:submitted"
    again = api.post(url, {"reservation_id": str(stay.id), "rating": 5})
    assert again.status_code == 200, again.text
    assert again.json["id"] == first.json["id"] and again.json["rating"] == 5
    assert again.json["comment"] is None
    assert outbox_types(ctx)[-1] == "hotel:pms:feedback:updated"
    listed = api.get(url, params={"reservation_id": str(stay.id)}).json["data"]
    assert [(f["id"], f["rating"]) for f in listed] == [(first.json["id"], 5)]
    with read_scope(ctx):
        assert Feedback.select().where(Feedback.reservation == stay.id).count() == 1


def test_checked_out_stays_may_be_rated_but_not_booked_cancelled_or_no_show_ones(
        api, ctx, hotel):
    url = f"/v1/properties/{hotel.id}/feedback"
    out = make_checked_in(ctx, hotel)
    _check_out(ctx, hotel, out)
    assert api.post(url, {"reservation_id": str(out.id), "rating": 4}).status_code == 201
    booked = make_reservation(ctx, hotel)
    assert_problem(api.post(url, {"reservation_id": str(booked.id), "rating": 4}), 409,
                   "feedback_not_allowed")
    cancelled = make_reservation(ctx, hotel)
    assert api.post(f"/v1/properties/{hotel.id}/reservations/{cancelled.id}/cancel"
                    ).status_code == 200
    assert_problem(api.post(url, {"reservation_id": str(cancelled.id), "rating": 1}), 409,
                   "feedback_not_allowed")


@pytest.mark.parametrize("rating", [0, 6, "5", None])
def test_ratings_outside_one_to_five_answer_422(api, ctx, hotel, rating):
    stay = make_checked_in(ctx, hotel)
    assert_problem(api.post(f"/v1/properties/{hotel.id}/feedback",
                            {"reservation_id": str(stay.id), "rating": rating}), 422)


def test_guests_rate_and_read_only_their_own_stays(api, ctx, hotel):
    mine = make_profile(ctx, hotel.id)
    theirs = make_profile(ctx, hotel.id)
    stay = make_checked_in(ctx, hotel, guest_profile_id=str(mine.id), guest=None)
    other = make_checked_in(ctx, hotel, guest_profile_id=str(theirs.id), guest=None)
    url = f"/v1/properties/{hotel.id}/feedback"
    owner, stranger = _token(api, "guest", mine.id), _token(api, "guest", theirs.id)
    assert_problem(api.post(url, {"reservation_id": str(stay.id), "rating": 1},
                            token=stranger), 404)
    assert api.post(url, {"reservation_id": str(stay.id), "rating": 5},
                    token=owner).status_code == 201
    assert api.post(url, {"reservation_id": str(other.id), "rating": 2},
                    token=stranger).status_code == 201
    assert_problem(api.get(url, params={"reservation_id": str(stay.id)}, token=stranger), 404)
    seen = api.get(url, token=stranger).json["data"]
    assert [f["reservation_id"] for f in seen] == [str(other.id)]
    assert len(api.get(url).json["data"]) == 2  # staff see the property's feedback


# -- guest payment methods -----------------------------------------------------------------------

def _owned(profile, suffix: str = "") -> str:
    """A sandbox method the payments service reports as the profile's own."""
    return f"pm_holder_{profile.id.hex}{suffix}"


def test_payment_method_references_are_kept_listed_and_forgotten(api, ctx, hotel):
    guest = make_profile(ctx, hotel.id)
    url = f"/v1/properties/{hotel.id}/profiles/{guest.id}/payment-methods"
    visa = _owned(guest, "_visa")
    card = EmbeddedPayments().payment_method(visa, env_id="")
    body = {"payment_method_id": visa, "brand": "visa", "last4": card.last4,
            "exp_month": 12, "exp_year": card.exp_year}
    # a card field the payments service contradicts is refused, naming it; nothing is kept
    lied = assert_problem(api.post(url, {**body, "last4": "0000" if card.last4 != "0000"
                                         else "1111", "exp_month": 1}),
                          422, "payment_method_mismatch")
    assert sorted(e["field"] for e in lied["errors"]) == ["exp_month", "last4"]
    assert api.get(url).json["data"] == []
    added = api.post(url, body)
    assert added.status_code == 201, added.text
    assert {k: added.json[k] for k in body} == body
    assert_problem(api.post(url, body), 409, "already_exists")
    assert [m["payment_method_id"] for m in api.get(url).json["data"]] == [visa]
    assert outbox_types(ctx)[-1] == "hotel:pms:guest_payment_method:added"
    gone = api.delete(url, params={"payment_method_id": visa})
    assert gone.status_code == 204, gone.text
    assert outbox_types(ctx)[-1] == "hotel:pms:guest_payment_method:deleted"
    assert api.get(url).json["data"] == []
    assert_problem(api.delete(url, params={"payment_method_id": visa}), 404)


def test_a_payment_method_keeps_the_card_the_payments_service_reports(api, ctx, hotel):
    guest = make_profile(ctx, hotel.id)
    url = f"/v1/properties/{hotel.id}/profiles/{guest.id}/payment-methods"
    amex = _owned(guest, "_amex")
    card = EmbeddedPayments().payment_method(amex, env_id="")
    added = api.post(url, {"payment_method_id": amex})
    assert added.status_code == 201, added.text
    assert (added.json["brand"], added.json["last4"], added.json["exp_month"],
            added.json["exp_year"]) == ("amex", card.last4, 12, card.exp_year)
    assert api.get(url).json["data"][0]["last4"] == card.last4


@pytest.mark.parametrize("body", [
    {"payment_method_id": "4242424242424242"},
    {"payment_method_id": "pm_x", "card_number": "4242424242424242"},
    {"payment_method_id": "pm_x", "last4": "42424"},
    {"payment_method_id": "pm_x", "exp_month": 13},
    {"payment_method_id": "pm x"},
    {"brand": "visa"},
])
def test_payment_method_bodies_carry_references_only(api, ctx, hotel, body):
    guest = make_profile(ctx, hotel.id)
    resp = api.post(f"/v1/properties/{hotel.id}/profiles/{guest.id}/payment-methods", body)
    assert_problem(resp, 422)
    with read_scope(ctx):
        assert GuestPaymentMethod.select().count() == 0


def test_a_guest_reaches_only_its_own_payment_methods(api, ctx, hotel):
    mine = make_profile(ctx, hotel.id)
    theirs = make_profile(ctx, hotel.id)
    url = f"/v1/properties/{hotel.id}/profiles/{mine.id}/payment-methods"
    owner, stranger = _token(api, "guest", mine.id), _token(api, "guest", theirs.id)
    pm_mine = _owned(mine)
    assert api.post(url, {"payment_method_id": pm_mine}, token=owner).status_code == 201
    assert_problem(api.get(url, token=stranger), 404)
    assert_problem(api.post(url, {"payment_method_id": _owned(theirs)}, token=stranger), 404)
    assert_problem(api.delete(url, params={"payment_method_id": pm_mine}, token=stranger), 404)
    assert [m["payment_method_id"] for m in api.get(url, token=owner).json["data"]] == [pm_mine]


def test_forgetting_a_reference_leaves_the_payments_token_usable(api, ctx, hotel):
    from pms.models import Folio

    guest = make_profile(ctx, hotel.id)
    stay = make_checked_in(ctx, hotel, guest_profile_id=str(guest.id), guest=None)
    url = f"/v1/properties/{hotel.id}/profiles/{guest.id}/payment-methods"
    visa = _owned(guest, "_visa")
    assert api.post(url, {"payment_method_id": visa}).status_code == 201
    assert api.delete(url, params={"payment_method_id": visa}).status_code == 204
    assert outbox_types(ctx)[-1] == "hotel:pms:guest_payment_method:deleted"
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == stay.id)
    resp = api.post(f"/v1/properties/{hotel.id}/folios/{folio.id}/pre-authorizations",
                    {"amount": "50.00", "payment_method_id": visa})
    assert resp.status_code in (200, 201, 202), resp.text  # the token still authorizes
