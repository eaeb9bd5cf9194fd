"""The kiosk guest's journey through the HTTP API, on SQLite and PostgreSQL: a ready room at
check-in, a key that opens the door, the folio and its payment at check-out, the add-ons, the
session's end, the terminal's identity, and a terminal's whole day end to end."""

from __future__ import annotations

import uuid

import pytest

from pms.db.uow import read_scope
from pms.models import AuditEntry, Reservation, Room
from tests.api.kiosk_recipes import configure, kiosk_token, lookup, session_for, with_session
from tests.factories import make_booking_hotel, make_reservation
from tests.helpers import assert_problem, owned_method


@pytest.fixture
def hotel(ctx):
    hotel = make_booking_hotel(ctx, rooms=2)
    configure(ctx, hotel)
    return hotel


def _arrival(ctx, hotel, last="Lovelace"):
    return make_reservation(ctx, hotel, guest={"first_name": "Ada", "last_name": last})


def _mark(api, hotel, room, hk_status):
    resp = api.put(f"/v1/properties/{hotel.id}/housekeeping/{room.room_number}",
                   {"hk_status": hk_status})
    assert resp.status_code == 200, resp.text


def _check_in(api, hotel, row, body=None, **kw):
    return api.post(f"/v1/properties/{hotel.id}/reservations/{row.id}/check-in", body or {},
                    **kw)


# -- a ready room at check-in --------------------------------------------------------------------

def test_a_kiosk_never_checks_a_guest_into_a_dirty_room(api, ctx, hotel):
    row = _arrival(ctx, hotel)
    for room in hotel.rooms:
        _mark(api, hotel, room, "DIRTY")
    token = kiosk_token(api)
    found = lookup(api, hotel, token, last_name="Lovelace",
                   confirmation_number=row.confirmation_number)
    assert found.json["reservation"]["reasons"] == ["room_not_ready"]
    session = found.json["kiosk_session"]
    # the auto-pick finds only dirty rooms: refused, as the lookup said
    problem = assert_problem(_check_in(api, hotel, row, token=token,
                                       headers=with_session(session)), 409, "room_not_ready")
    assert "dirty_room_reason" not in problem["detail"]
    # a room named by the kiosk is held to the same rule
    assert_problem(_check_in(api, hotel, row, {"room_number": hotel.rooms[0].room_number},
                             token=token, headers=with_session(session)), 409,
                   "room_not_ready")
    # and a kiosk cannot waive it
    assert_problem(_check_in(api, hotel, row, {"dirty_room_reason": "guest insists"},
                             token=token, headers=with_session(session)), 403,
                   "override_not_allowed")
    with read_scope(ctx):
        assert Reservation.get_by_id(row.id).status == "CONFIRMED"
        assert {r.status for r in Room.select()} == {"VACANT"}
    # one room cleaned: the lookup offers CHECK_IN and the kiosk gets that very room
    _mark(api, hotel, hotel.rooms[1], "CLEAN")
    session = session_for(api, hotel, token, row)
    checked = _check_in(api, hotel, row, token=token, headers=with_session(session))
    assert checked.status_code == 200, checked.text
    assert checked.json["room_number"] == hotel.rooms[1].room_number


def test_an_assigned_dirty_room_is_refused_to_the_kiosk(api, ctx, hotel):
    row = _arrival(ctx, hotel)
    assigned = api.put(f"/v1/properties/{hotel.id}/reservations/{row.id}/room",
                        {"room_number": hotel.rooms[0].room_number})
    assert assigned.status_code == 200, assigned.text
    _mark(api, hotel, hotel.rooms[0], "DIRTY")
    token = kiosk_token(api)
    session = session_for(api, hotel, token, row)
    assert_problem(_check_in(api, hotel, row, token=token, headers=with_session(session)), 409,
                   "room_not_ready")


def test_the_desk_checks_into_a_dirty_room_only_knowingly_with_an_audited_reason(
        api, ctx, hotel):
    row = _arrival(ctx, hotel)
    for room in hotel.rooms:
        _mark(api, hotel, room, "DIRTY")
    problem = assert_problem(_check_in(api, hotel, row), 409, "room_not_ready")
    assert "dirty_room_reason" in problem["detail"]
    resp = _check_in(api, hotel, row, {"dirty_room_reason": "guest waits, rush clean ordered"})
    assert resp.status_code == 200, resp.text
    assert resp.json["status"] == "CHECKED_IN"
    with read_scope(ctx):
        entry = (AuditEntry.select().where(AuditEntry.action == "reservation.checked_in")
                 .order_by(AuditEntry.created_at.desc()).first())
    assert entry.reason == "guest waits, rush clean ordered"
    assert_problem(_check_in(api, hotel, _arrival(ctx, hotel, "Byron"), {"dirty_room_reason": ""}),
                   422)


# -- the key a kiosk gives out opens the door ---------------------------------------------------

def _in_house(api, ctx, hotel, last="Lovelace"):
    row = _arrival(ctx, hotel, last)
    assert _check_in(api, hotel, row).status_code == 200
    with read_scope(ctx):
        return Reservation.get_by_id(row.id)


def _collect_key(api, hotel, row, token, session, key_type="CARD"):
    return api.post(f"/v1/properties/{hotel.id}/digital-keys",
                    {"reservation_id": str(row.id), "key_type": key_type}, token=token,
                    headers=with_session(session))


def _key_of(api, hotel, row, key_id):
    listed = api.get(f"/v1/properties/{hotel.id}/digital-keys?reservation_id={row.id}")
    assert listed.status_code == 200, listed.text
    return next(k for k in listed.json["data"] if k["id"] == key_id)


def test_a_key_collected_at_a_kiosk_is_active_and_enabled_at_the_lock(kapi, ctx, hotel,
                                                                      platform):
    from pms.services.keys import lock_sync
    from tests.helpers import outbox_types

    row = _in_house(kapi, ctx, hotel)
    token = kiosk_token(kapi)
    session = session_for(kapi, hotel, token, row)
    key = _collect_key(kapi, hotel, row, token, session)
    assert key.status_code == 201, key.text
    assert key.json["status"] == "ACTIVE" and key.json["lock"]["state"] == "pending"
    types = outbox_types(ctx)
    assert types[-2:] == ["hotel:pms:digital_key:issued", "hotel:pms:digital_key:activated"]
    # the relay's sync (the sync_digital_key actor) sends the intent to the lock
    lock_sync.sync_lock(ctx, uuid.UUID(key.json["id"]), platform.locks)
    ref = _key_of(kapi, hotel, row, key.json["id"])["credential_ref"]
    assert platform.locks.credentials[ref]["state"] == "enabled"
    # the desk's keys are still issued INACTIVE (activated by the desk or the guest app)
    desk = kapi.post(f"/v1/properties/{hotel.id}/digital-keys",
                     {"reservation_id": str(row.id), "key_type": "CARD"})
    assert desk.status_code == 201 and desk.json["status"] == "INACTIVE"


# -- the folio and the payment at check-out --------------------------------------------------------

def _walk_in(api, hotel, token, **over):
    body = {"guest": {"first_name": "John", "last_name": "Keats"}, "nights": 1,
            "payment_method_id": "pm_card_visa", **over}
    resp = api.post(f"/v1/properties/{hotel.id}/walk-in", body, token=token)
    assert resp.status_code == 201, resp.text
    return resp.json


def _in_house_walk_in(api, ctx, hotel, token):
    """A kiosk walk-in (pre-authorized for its total), checked in at the kiosk."""
    booked = _walk_in(api, hotel, token)
    found = lookup(api, hotel, token, last_name="Keats",
                   confirmation_number=booked["confirmation_number"])
    session = found.json["kiosk_session"]
    checked = _check_in(api, hotel, _Row(booked["id"]), token=token,
                        headers=with_session(session))
    assert checked.status_code == 200, checked.text
    return booked, session


class _Row:
    def __init__(self, id):  # noqa: A002
        self.id = id


def _folio(api, hotel, rid, token, session):
    return api.get(f"/v1/properties/{hotel.id}/kiosk/reservations/{rid}/folio", token=token,
                   headers=with_session(session))


def _kiosk_check_out(api, hotel, rid, token, session, body=None):
    return api.post(f"/v1/properties/{hotel.id}/kiosk/reservations/{rid}/check-out",
                    body or {}, token=token, headers=with_session(session))


def test_the_kiosk_captures_its_walk_ins_pre_authorization_and_checks_out(kapi, ctx, hotel,
                                                                          platform):
    token = kiosk_token(kapi)
    booked, session = _in_house_walk_in(kapi, ctx, hotel, token)
    again = lookup(kapi, hotel, token, last_name="Keats",
                   confirmation_number=booked["confirmation_number"])
    found = again.json["reservation"]
    assert found["balance"] == "100.00" and found["reasons"] == ["already_checked_in"]
    assert found["actions"] == ["COLLECT_KEY", "CHECK_OUT"]  # the pre-authorization covers it
    session = again.json["kiosk_session"]
    folio = _folio(kapi, hotel, booked["id"], token, session)
    assert folio.status_code == 200, folio.text
    assert folio.json["owed"]["guest_owes"] == "100.00"
    assert folio.json["owed"]["pre_authorized"] == "100.00"
    assert folio.json["folio"]["balance_due"] == "100.00"
    out = kapi.post(f"/v1/properties/{hotel.id}/reservations/{booked['id']}/check-out",
                    token=token, headers=with_session(session))
    assert out.status_code == 200, out.text
    assert out.json["status"] == "CHECKED_OUT"
    captured = [c for c in platform.payments.charges.values() if c["payment_intent"]]
    assert len(captured) == 1 and captured[0]["status"] == "succeeded"
    intent = platform.payments.intents[captured[0]["payment_intent"]]
    assert intent["status"] == "succeeded"
    staff = kapi.get(f"/v1/properties/{hotel.id}/reservations/{booked['id']}/folio").json
    assert staff["status"] == "CLOSED" and staff["balance_due"] == "0.00"


def test_a_declined_capture_leaves_the_stay_in_house_and_names_the_desk(kapi, ctx, hotel,
                                                                       platform):
    token = kiosk_token(kapi)
    booked, session = _in_house_walk_in(kapi, ctx, hotel, token)
    for intent in platform.payments.intents.values():  # the authorization lapsed at the bank
        intent["status"] = "canceled"
    problem = assert_problem(_kiosk_check_out(kapi, hotel, booked["id"], token, session), 402,
                             "payment_declined")
    assert "front desk" in problem["detail"] and problem["see"] == "front_desk"
    with read_scope(ctx):
        assert Reservation.get_by_id(booked["id"]).status == "CHECKED_IN"
    # a card at the kiosk pays it instead
    paid = _kiosk_check_out(kapi, hotel, booked["id"], token, session,
                            {"payment_method_id": "pm_card_visa"})
    assert paid.status_code == 200, paid.text
    assert paid.json["status"] == "CHECKED_OUT"


def test_a_kiosk_charges_a_card_for_the_balance_or_sends_the_guest_to_the_desk(kapi, ctx,
                                                                              hotel):
    row = _in_house(kapi, ctx, hotel)
    token = kiosk_token(kapi)
    session = session_for(kapi, hotel, token, row)
    assert_problem(_kiosk_check_out(kapi, hotel, row.id, token, session), 409,
                   "folio_not_closable")
    declined = assert_problem(_kiosk_check_out(kapi, hotel, row.id, token, session,
                                               {"payment_method_id": "pm_card_declined"}),
                              402, "payment_declined")
    assert "front desk" in declined["detail"]
    paid = _kiosk_check_out(kapi, hotel, row.id, token, session,
                            {"payment_method_id": "pm_card_visa"})
    assert paid.status_code == 200, paid.text
    # the desk has its own check-out route
    assert_problem(_kiosk_check_out(kapi, hotel, row.id, None, None), 403)


def test_the_kiosk_folio_is_the_sessions_own_stay_only(kapi, ctx, hotel):
    mine = _in_house(kapi, ctx, hotel)
    other = _in_house(kapi, ctx, hotel, "Byron")
    token = kiosk_token(kapi)
    session = session_for(kapi, hotel, token, mine)
    assert _folio(kapi, hotel, mine.id, token, session).status_code == 200
    assert_problem(_folio(kapi, hotel, other.id, token, session), 404)
    assert_problem(kapi.get(f"/v1/properties/{hotel.id}/kiosk/reservations/{mine.id}/folio",
                            token=token), 403, "kiosk_session_invalid")


# -- a session ends at check-out -----------------------------------------------------------------

def test_a_kiosk_session_ends_at_check_out(kapi, ctx, hotel):
    from tests.factories import pay_folio

    row = _in_house(kapi, ctx, hotel)
    pay_folio(ctx, row, "100.00")
    token = kiosk_token(kapi)
    session = session_for(kapi, hotel, token, row)
    out = kapi.post(f"/v1/properties/{hotel.id}/reservations/{row.id}/check-out", token=token,
                    headers=with_session(session))
    assert out.status_code == 200, out.text
    assert_problem(_folio(kapi, hotel, row.id, token, session), 403, "kiosk_session_invalid")
    with read_scope(ctx):
        from pms.models import KioskSession

        assert KioskSession.select().where(KioskSession.reservation_id == row.id,
                                           KioskSession.ended_at.is_null()).count() == 0


# -- one rule for what a stay owes: a company-billed guest -----------------------------------------

def _company_routing(api, hotel, row, cap):
    from tests.helpers import random_ref

    company = api.post(f"/v1/properties/{hotel.id}/profiles", {
        "kind": "COMPANY", "company_name": random_ref("Co")}).json["id"]
    base = f"/v1/properties/{hotel.id}/companies/{company}"
    assert api.put(f"{base}/receivable-account", {
        "credit_limit": "5000.00", "currency": hotel.prop.currency_code}).status_code in (200, 201)
    pm = api.post(f"{base}/payment-methods", {"payment_method_id": owned_method(company)}).json["id"]
    assert api.post(f"{base}/payment-methods/{pm}/approve",
                    {"approval": "BILL_TO_COMPANY"}).status_code == 200
    url = f"/v1/properties/{hotel.id}/reservations/{row.id}/company-billing"
    body = {"company_profile_id": company, "company_payment_method_id": pm}
    if cap is not None:
        body["cap"] = cap
    resp = api.put(url, body)
    assert resp.status_code == 200, resp.text
    return base, url, body


def test_a_company_billed_guest_checks_out_at_the_kiosk_only_when_the_company_pays_it_all(
        kapi, ctx, hotel):
    row = _in_house(kapi, ctx, hotel)
    base, url, body = _company_routing(kapi, hotel, row, cap="60.00")
    token = kiosk_token(kapi)
    found = lookup(kapi, hotel, token, last_name="Lovelace",
                   confirmation_number=row.confirmation_number)
    stay = found.json["reservation"]
    # the night check-out posts is 100.00, the company pays 60.00 of it
    assert stay["balance"] == "40.00"
    assert stay["reasons"] == ["already_checked_in", "company_billed"]
    assert stay["actions"] == ["COLLECT_KEY"]
    session = found.json["kiosk_session"]
    owed = _folio(kapi, hotel, row.id, token, session).json["owed"]
    assert (owed["balance_due"], owed["company_pays"], owed["guest_owes"],
            owed["company_billed"]) == ("100.00", "60.00", "40.00", True)
    # neither the plain nor the kiosk check-out lets it through, even with a card
    for attempt in (kapi.post(f"/v1/properties/{hotel.id}/reservations/{row.id}/check-out",
                              token=token, headers=with_session(session)),
                    _kiosk_check_out(kapi, hotel, row.id, token, session,
                                     {"payment_method_id": "pm_card_visa"})):
        problem = assert_problem(attempt, 409, "company_billed_stay")
        assert problem["balance"] == "40.00" and "front desk" in problem["detail"]
    with read_scope(ctx):
        assert Reservation.get_by_id(row.id).status == "CHECKED_IN"
    # the company takes the whole stay: nothing is the guest's, the kiosk checks out
    body.pop("cap")
    assert kapi.put(url, body).status_code == 200
    found = lookup(kapi, hotel, token, last_name="Lovelace",
                   confirmation_number=row.confirmation_number)
    assert found.json["reservation"]["balance"] == "0.00"
    assert found.json["reservation"]["actions"] == ["COLLECT_KEY", "CHECK_OUT"]
    out = kapi.post(f"/v1/properties/{hotel.id}/reservations/{row.id}/check-out", token=token,
                    headers=with_session(found.json["kiosk_session"]))
    assert out.status_code == 200, out.text
    assert kapi.get(f"{base}/receivable-account").json["open_balance"] == "100.00"


# -- kiosk add-ons -------------------------------------------------------------------------------

def _offer(ctx, hotel, *packages):
    from pms.schemas.kiosk import KioskConfigIn
    from pms.services.kiosk import kiosk

    kiosk.put_config(ctx, hotel.id, KioskConfigIn(
        enabled_modes=["CHECK_IN", "CHECK_OUT", "COLLECT_KEY", "WALK_IN"],
        add_on_package_codes=[p.code for p in packages], lockdown=False, max_keys_per_stay=3))


def test_the_kiosk_lists_its_add_ons_and_sells_one_to_the_stay(kapi, ctx, hotel):
    from pms.models import FolioCharge
    from tests.factories import make_package
    from tests.helpers import outbox_rows

    breakfast = make_package(ctx, hotel.id, code="BRKF", name="Breakfast", price="15.00",
                             calculation="PER_PERSON_PER_NIGHT", category="F&B")
    late = make_package(ctx, hotel.id, code="LATECO", name="Late check-out", price="30.00",
                        calculation="PER_STAY")
    make_package(ctx, hotel.id, code="SPA", name="Spa", price="80.00")  # not on the offer
    _offer(ctx, hotel, late, breakfast)
    token = kiosk_token(kapi)
    listed = kapi.get(f"/v1/properties/{hotel.id}/kiosk/add-ons", token=token)
    assert listed.status_code == 200, listed.text
    assert [(a["code"], a["price"], a["calculation"]) for a in listed.json["data"]] == [
        ("LATECO", "30.00", "PER_STAY"), ("BRKF", "15.00", "PER_PERSON_PER_NIGHT")]
    row = _in_house(kapi, ctx, hotel)  # 2 adults, 2 nights
    session = session_for(kapi, hotel, token, row)
    url = f"/v1/properties/{hotel.id}/kiosk/reservations/{row.id}/add-ons"
    assert_problem(kapi.post(url, {"package_code": "SPA"}, token=token,
                             headers=with_session(session)), 422)
    sold = kapi.post(url, {"package_code": "BRKF"}, token=token, headers=with_session(session))
    assert sold.status_code == 201, sold.text
    assert sold.json["amount"] == "60.00" and sold.json["add_on"]["code"] == "BRKF"
    with read_scope(ctx):
        line = FolioCharge.get_by_id(sold.json["charge_id"])
        audited = (AuditEntry.select().where(AuditEntry.action == "folio.charge_posted")
                   .order_by(AuditEntry.created_at.desc()).first())
    assert (line.amount, line.category, line.reservation_id) == (60, "F&B", row.id)
    assert audited.reason == "kiosk add-on BRKF" and audited.actor_kind == "kiosk"
    assert outbox_rows(ctx)[-1].type == "hotel:pms:folio:charge_posted"
    # the stay owes it now: the folio the kiosk shows and the lookup agree
    owed = _folio(kapi, hotel, row.id, token, session).json["owed"]
    assert owed["guest_owes"] == "160.00"
    assert lookup(kapi, hotel, token, last_name="Lovelace",
                  confirmation_number=row.confirmation_number).json[
        "reservation"]["balance"] == "160.00"


def test_add_ons_need_a_stay_in_house_and_the_terminals_session(kapi, ctx, hotel):
    from tests.factories import make_package

    breakfast = make_package(ctx, hotel.id, code="BRKF")
    _offer(ctx, hotel, breakfast)
    arriving = _arrival(ctx, hotel)
    other = _in_house(kapi, ctx, hotel, "Byron")
    token = kiosk_token(kapi)
    session = session_for(kapi, hotel, token, arriving)
    base = f"/v1/properties/{hotel.id}/kiosk/reservations"
    assert_problem(kapi.post(f"{base}/{arriving.id}/add-ons", {"package_code": "BRKF"},
                             token=token, headers=with_session(session)), 409,
                   "add_on_requires_checked_in")
    assert_problem(kapi.post(f"{base}/{other.id}/add-ons", {"package_code": "BRKF"},
                             token=token, headers=with_session(session)), 404)
    # lockdown refuses the offer too
    configure(ctx, hotel, lockdown=True)
    assert_problem(kapi.get(f"/v1/properties/{hotel.id}/kiosk/add-ons", token=token), 409,
                   "kiosk_locked")


# -- the walk-in --------------------------------------------------------------------------------

def test_a_walk_in_too_large_for_every_room_answers_422_not_unavailable(kapi, ctx, hotel):
    token = kiosk_token(kapi)
    body = {"guest": {"last_name": "Keats"}, "adults": 3, "payment_method_id": "pm_card_visa"}
    for caller in (token, None):  # the kiosk and the desk alike
        problem = assert_problem(kapi.post(f"/v1/properties/{hotel.id}/walk-in", body,
                                           token=caller), 422)
        assert problem["code"] != "room_type_unavailable"
    # a house that is full is still 409
    for _ in hotel.rooms:
        _walk_in(kapi, hotel, token)
    assert_problem(kapi.post(f"/v1/properties/{hotel.id}/walk-in",
                             {**body, "adults": 1}, token=token), 409, "room_type_unavailable")


def test_a_declined_guarantee_leaves_no_open_folio(kapi, ctx, hotel):
    from pms.models import Folio

    token = kiosk_token(kapi)
    resp = kapi.post(f"/v1/properties/{hotel.id}/walk-in",
                     {"guest": {"last_name": "Keats"}, "payment_method_id": "pm_card_declined"},
                     token=token)
    assert_problem(resp, 402, "payment_declined")
    with read_scope(ctx):
        [stay] = list(Reservation.select().where(Reservation.property == hotel.id))
        folios = [f.status for f in Folio.select().where(Folio.reservation == stay.id)]
    assert stay.status == "CANCELLED" and folios == ["CLOSED"]


# -- the terminal's identity ---------------------------------------------------------------------

def test_a_terminal_serves_the_property_of_its_first_lookup_only(kapi, ctx, hotel):
    other = make_booking_hotel(ctx, rooms=1)
    configure(ctx, other)
    here = _arrival(ctx, hotel)
    there = make_reservation(ctx, other, guest={"last_name": "Byron"})
    token = kiosk_token(kapi)
    assert session_for(kapi, hotel, token, here)
    refused = lookup(kapi, other, token, last_name="Byron",
                     confirmation_number=there.confirmation_number)
    assert_problem(refused, 403, "terminal_other_property")
    assert "kiosk_session" not in refused.text
    assert_problem(kapi.post(f"/v1/properties/{other.id}/walk-in",
                             {"guest": {"last_name": "Keats"},
                              "payment_method_id": "pm_card_visa"}, token=token), 403,
                   "terminal_other_property")
    assert_problem(kapi.get(f"/v1/properties/{other.id}/kiosk/add-ons", token=token), 403,
                   "terminal_other_property")
    # the other hotel's own terminal is served there
    lobby2 = kiosk_token(kapi, sub="kiosk-other-lobby")
    assert lookup(kapi, other, lobby2, last_name="Byron",
                  confirmation_number=there.confirmation_number).status_code == 200


def test_a_name_and_a_room_number_never_answer_the_confirmation_number(kapi, ctx, hotel):
    row = _in_house(kapi, ctx, hotel)
    with read_scope(ctx):
        number = Reservation.get_by_id(row.id).room.room_number
    token = kiosk_token(kapi)
    by_room = lookup(kapi, hotel, token, last_name="Lovelace", room_number=number)
    assert by_room.status_code == 200, by_room.text
    assert by_room.json["reservation"]["confirmation_number"] is None
    assert row.confirmation_number not in by_room.text
    by_number = lookup(kapi, hotel, token, last_name="Lovelace",
                       confirmation_number=row.confirmation_number)
    assert by_number.json["reservation"]["confirmation_number"] == row.confirmation_number
