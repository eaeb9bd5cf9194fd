"""The kiosk through the HTTP API, on SQLite and PostgreSQL: the two-identifier
lookup, one 404 for every miss, the per-terminal failure budget (429 + Retry-After, kept in the
database), the lookup-bound session standing in for the route's scope on check-in, key issue
and check-out, lockdown and modes, and the walk-in with its guarantee."""

from __future__ import annotations

from datetime import timedelta

import falcon.testing
import pytest

from pms.app import create_app
from pms.db.uow import read_scope
from pms.models import KioskSession, KioskTerminal, Reservation
from pms.services.kiosk import kiosk_lookup
from pms.services.reservations.reservations import business_date
from tests.api.kiosk_recipes import (
    TERMINAL,
    configure,
    kiosk_token,
    lookup,
    session_for,
    with_session,
)
from tests.factories import (
    make_booking_hotel,
    make_checked_in,
    make_rate_plan,
    make_reservation,
    pay_folio,
)
from tests.helpers import assert_problem, audit_actions, outbox_types


@pytest.fixture
def hotel(ctx):
    hotel = make_booking_hotel(ctx, rooms=6)
    configure(ctx, hotel)
    return hotel


def _arrival(ctx, hotel, last="de la Peña", first="José"):
    return make_reservation(ctx, hotel, guest={"first_name": first, "last_name": last})


# -- lookup --------------------------------------------------------------------------------------

def test_a_lookup_by_name_and_confirmation_finds_todays_arrival_and_opens_a_session(
        api, ctx, hotel):
    row = _arrival(ctx, hotel)
    token = kiosk_token(api)
    resp = lookup(api, hotel, token, last_name="  DELA pena ",
                  confirmation_number=row.confirmation_number)
    assert resp.status_code == 200, resp.text
    found = resp.json["reservation"]
    assert found["id"] == str(row.id) and found["status"] == "CONFIRMED"
    assert found["reasons"] == [] and found["actions"] == ["CHECK_IN"]
    assert set(found) == {
        "id", "property_id", "confirmation_number", "status", "arrival_date", "departure_date",
        "adults", "children", "guest_first_name", "guest_last_name", "room_type_id",
        "room_type_name", "room_number", "balance", "currency", "key_count", "reasons",
        "actions"}
    assert resp.json["idle_timeout_seconds"] == 70 and len(resp.json["kiosk_session"]) >= 40
    assert resp.headers["cache-control"] == "no-store"
    with read_scope(ctx):  # only the token's digest is stored
        stored = KioskSession.get(KioskSession.reservation_id == row.id)
    assert stored.terminal == TERMINAL and stored.ended_at is None
    assert resp.json["kiosk_session"] not in stored.token_digest
    assert outbox_types(ctx)[-1] == "hotel:pms:kiosk_terminal:lookup_matched"
    assert audit_actions(ctx)[-1] == "kiosk_terminal.lookup_matched"


def test_names_compare_after_case_folding_and_removing_accents_and_spaces():
    fold = kiosk_lookup.fold_name
    assert fold("de la Peña") == fold("DELAPENA") == fold(" Dela  peña ") == "delapena"
    assert fold("Müller") == fold("MULLER") and fold("Straße") == fold("STRASSE")
    assert fold("Lovelace") != fold("Lovelac")


def test_every_miss_is_the_same_404_whatever_its_cause(api, ctx, hotel):
    arriving = _arrival(ctx, hotel, last="Lovelace")
    tomorrow = make_reservation(ctx, hotel, arrival_date=(hotel.today + timedelta(days=1))
                                .isoformat(), departure_date=(hotel.today + timedelta(days=3))
                                .isoformat(), guest={"last_name": "Lovelace"})
    other = make_booking_hotel(ctx, rooms=1)
    configure(ctx, other)
    elsewhere = make_reservation(ctx, other, guest={"last_name": "Lovelace"})
    confirmed_room = make_reservation(ctx, hotel, guest={"last_name": "Byron"})
    cancelled = _arrival(ctx, hotel, last="Lovelace")
    api.post(f"/v1/properties/{hotel.id}/reservations/{cancelled.id}/cancel")
    tries = [
        {"last_name": "Babbage", "confirmation_number": arriving.confirmation_number},
        {"last_name": "Lovelace", "confirmation_number": "NOPE-000000"},
        {"last_name": "Lovelace", "confirmation_number": tomorrow.confirmation_number},
        {"last_name": "Lovelace", "confirmation_number": elsewhere.confirmation_number},
        {"last_name": "Lovelace", "confirmation_number": cancelled.confirmation_number},
        # a room number finds in-house stays only (this arrival has no stay in a room yet)
        {"last_name": "Byron", "room_number": hotel.rooms[0].room_number},
    ]
    assert confirmed_room.status == "CONFIRMED"
    bodies = []
    for n, body in enumerate(tries):
        token = kiosk_token(api, sub=f"terminal-{n}")  # a fresh budget per cause
        resp = lookup(api, hotel, token, **body)
        problem = assert_problem(resp, 404, "reservation_not_found")
        bodies.append({k: v for k, v in problem.items() if k != "instance"})
        assert "Lovelace" not in resp.text and "Byron" not in resp.text
    assert all(b == bodies[0] for b in bodies), bodies


def test_a_room_number_finds_an_in_house_stay_only(api, ctx, hotel):
    stay = make_checked_in(ctx, hotel, guest={"first_name": "Ada", "last_name": "Lovelace"})
    token = kiosk_token(api)
    with read_scope(ctx):
        number = Reservation.get_by_id(stay.id).room.room_number
    pay_folio(ctx, stay, "100.00")  # the night a check-out today posts
    resp = lookup(api, hotel, token, last_name="lovelace", room_number=number)
    assert resp.status_code == 200, resp.text
    assert resp.json["reservation"]["room_number"] == number
    assert resp.json["reservation"]["reasons"] == ["already_checked_in"]
    assert resp.json["reservation"]["actions"] == ["COLLECT_KEY", "CHECK_OUT"]
    assert_problem(lookup(api, hotel, token, last_name="Lovelace", room_number="999"), 404,
                   "reservation_not_found")


@pytest.mark.parametrize("body", [
    {"last_name": "Lovelace"},
    {"confirmation_number": "X1"},
    {"last_name": "Lovelace", "confirmation_number": "X1", "room_number": "101"},
    {"last_name": "", "confirmation_number": "X1"},
    {"last_name": "Lovelace", "confirmation_number": "X1", "env_id": "x"},
])
def test_a_lookup_needs_a_name_and_exactly_one_more_identifier(api, hotel, body):
    resp = lookup(api, hotel, kiosk_token(api), **body)
    assert_problem(resp, 422)


def test_reasons_come_only_after_a_two_identifier_match(api, ctx, hotel):

    row = _arrival(ctx, hotel, last="Lovelace")
    token = kiosk_token(api)
    for room in hotel.rooms:  # no clean vacant room of the type is left
        resp = api.put(f"/v1/properties/{hotel.id}/housekeeping/{room.room_number}",
                       {"hk_status": "DIRTY"})
        assert resp.status_code == 200, resp.text
    resp = lookup(api, hotel, token, last_name="Lovelace",
                  confirmation_number=row.confirmation_number)
    assert resp.status_code == 200, resp.text
    assert resp.json["reservation"]["reasons"] == ["room_not_ready"]
    assert resp.json["reservation"]["actions"] == []
    # the same stay with a wrong name tells nothing
    miss = lookup(api, hotel, token, last_name="Byron",
                  confirmation_number=row.confirmation_number)
    assert_problem(miss, 404, "reservation_not_found")
    assert "room_not_ready" not in miss.text


def test_an_in_house_stay_with_a_balance_cannot_check_out_at_the_kiosk(api, ctx, hotel):
    stay = make_checked_in(ctx, hotel, guest={"last_name": "Lovelace"})
    token = kiosk_token(api)
    found = lookup(api, hotel, token, last_name="Lovelace",
                   confirmation_number=stay.confirmation_number)
    assert found.status_code == 200, found.text
    # the night a check-out today posts is due
    assert found.json["reservation"]["reasons"] == ["already_checked_in", "balance_due"]
    assert found.json["reservation"]["balance"] == "100.00"
    assert found.json["reservation"]["actions"] == ["COLLECT_KEY"]
    session = found.json["kiosk_session"]
    assert_problem(api.post(f"/v1/properties/{hotel.id}/reservations/{stay.id}/check-out",
                            token=token, headers=with_session(session)), 409,
                   "folio_not_closable")
    pay_folio(ctx, stay, "100.00")
    paid = lookup(api, hotel, token, last_name="Lovelace",
                  confirmation_number=stay.confirmation_number)
    assert paid.json["reservation"]["reasons"] == ["already_checked_in"]
    assert paid.json["reservation"]["balance"] == "0.00"
    assert paid.json["reservation"]["actions"] == ["COLLECT_KEY", "CHECK_OUT"]


# -- the failure budget ---------------------------------------------------------------------------

def test_a_terminal_over_its_failure_budget_is_refused_with_retry_after(api, ctx, hotel, clock,
                                                                       settings, database):
    row = _arrival(ctx, hotel, last="Lovelace")
    token = kiosk_token(api)
    for _ in range(kiosk_lookup.FAILURE_BUDGET):
        assert_problem(lookup(api, hotel, token, last_name="Babbage",
                              confirmation_number=row.confirmation_number), 404)
    right = {"last_name": "Lovelace", "confirmation_number": row.confirmation_number}
    refused = lookup(api, hotel, token, **right)  # even the right details, while blocked
    assert_problem(refused, 429, "too_many_lookups")
    assert 0 < int(refused.headers["retry-after"]) <= kiosk_lookup.LOCKOUT.total_seconds()
    assert "kiosk_session" not in refused.text
    # another host (another app on the same database) sees the same block: no process state
    other_host = falcon.testing.TestClient(create_app(settings, db=database, clock=clock))
    again = other_host.simulate_post(f"/v1/properties/{hotel.id}/kiosk/lookup", json=right,
                                      headers=api.headers(token=token))
    assert_problem(again, 429, "too_many_lookups")
    # another terminal is not refused
    assert lookup(api, hotel, kiosk_token(api, sub="kiosk-lobby-2"), **right).status_code == 200
    with read_scope(ctx):
        stored = KioskTerminal.get(KioskTerminal.terminal == TERMINAL)
    assert stored.failures == kiosk_lookup.FAILURE_BUDGET and stored.blocked_until is not None
    # after the lockout the terminal is served again: the arrival is found, unless the
    # lockout ran past the property's midnight (then it is yesterday's arrival: not found)
    clock.advance(seconds=kiosk_lookup.LOCKOUT.total_seconds() + 1)
    served = lookup(api, hotel, token, **right)
    if business_date(hotel.prop, clock.now()) == row.arrival_date:
        assert served.status_code == 200, served.text
    else:
        assert_problem(served, 404, "reservation_not_found")


def test_hits_do_not_spend_the_budget(api, ctx, hotel):
    row = _arrival(ctx, hotel, last="Lovelace")
    token = kiosk_token(api)
    for _ in range(kiosk_lookup.FAILURE_BUDGET + 2):
        assert session_for(api, hotel, token, row)


# -- sessions on the ordinary routes --------------------------------------------------------------

def _check_in(api, hotel, row, token, session=None):
    headers = with_session(session) if session else None
    return api.post(f"/v1/properties/{hotel.id}/reservations/{row.id}/check-in", {},
                    token=token, headers=headers)


def test_a_kiosk_session_stands_in_for_the_route_scope_on_check_in_key_and_check_out(
        api, ctx, hotel):
    row = _arrival(ctx, hotel, last="Lovelace")
    token = kiosk_token(api)
    session = session_for(api, hotel, token, row)
    resp = _check_in(api, hotel, row, token, session)
    assert resp.status_code == 200, resp.text
    assert resp.json["status"] == "CHECKED_IN"
    key = api.post(f"/v1/properties/{hotel.id}/digital-keys",
                   {"reservation_id": str(row.id), "key_type": "CARD"}, token=token,
                   headers=with_session(session))
    assert key.status_code == 201, key.text
    assert key.json["issued_by"] == TERMINAL
    pay_folio(ctx, row, "100.00")
    out = api.post(f"/v1/properties/{hotel.id}/reservations/{row.id}/check-out", token=token,
                   headers=with_session(session))
    assert out.status_code == 200, out.text
    assert out.json["status"] == "CHECKED_OUT"
    # the actions were the terminal's, audited as such
    assert audit_actions(ctx)[-1] == "reservation.checked_out"


def test_without_a_live_session_of_this_terminal_a_kiosk_token_is_refused(api, ctx, hotel,
                                                                          clock):
    row = _arrival(ctx, hotel, last="Lovelace")
    token = kiosk_token(api)
    assert_problem(_check_in(api, hotel, row, token), 403, "kiosk_session_invalid")
    assert_problem(_check_in(api, hotel, row, token, "not-a-session"), 403,
                   "kiosk_session_invalid")
    session = session_for(api, hotel, token, row)
    other_terminal = kiosk_token(api, sub="kiosk-lobby-2")
    assert_problem(_check_in(api, hotel, row, other_terminal, session), 403,
                   "kiosk_session_invalid")
    # a kiosk token without the kiosk scope: 403 before anything
    no_scope = kiosk_token(api, scopes=["hotel:pms:frontdesk:write"])
    assert_problem(_check_in(api, hotel, row, no_scope, session), 403, "missing_scope")
    # idle past 70 s: over
    clock.advance(seconds=71)
    assert_problem(_check_in(api, hotel, row, token, session), 403, "kiosk_session_invalid")
    with read_scope(ctx):
        assert Reservation.get_by_id(row.id).status == "CONFIRMED"


def test_each_use_moves_the_idle_clock(api, ctx, hotel, clock):
    stay = make_checked_in(ctx, hotel, guest={"last_name": "Lovelace"})
    token = kiosk_token(api)
    session = session_for(api, hotel, token, stay)
    for _ in range(2):
        clock.advance(seconds=60)
        key = api.post(f"/v1/properties/{hotel.id}/digital-keys",
                       {"reservation_id": str(stay.id), "key_type": "CARD"}, token=token,
                       headers=with_session(session))
        assert key.status_code == 201, key.text


def test_a_session_for_one_stay_reaches_no_other(api, ctx, hotel):
    mine = _arrival(ctx, hotel, last="Lovelace")
    other = _arrival(ctx, hotel, last="Byron")
    in_house = make_checked_in(ctx, hotel, guest={"last_name": "Shelley"})
    token = kiosk_token(api)
    session = session_for(api, hotel, token, mine)
    assert_problem(_check_in(api, hotel, other, token, session), 404)
    base = f"/v1/properties/{hotel.id}"
    assert_problem(api.post(f"{base}/digital-keys", {"reservation_id": str(in_house.id),
                                                     "key_type": "CARD"},
                            token=token, headers=with_session(session)), 404)
    assert_problem(api.post(f"{base}/reservations/{in_house.id}/check-out", token=token,
                            headers=with_session(session)), 404)
    with read_scope(ctx):
        assert Reservation.get_by_id(other.id).status == "CONFIRMED"
        assert Reservation.get_by_id(in_house.id).status == "CHECKED_IN"


def test_staff_tokens_need_no_session(api, ctx, hotel):
    row = _arrival(ctx, hotel)
    assert api.post(f"/v1/properties/{hotel.id}/reservations/{row.id}/check-in",
                    {}).status_code == 200


# -- lockdown and modes, per route ---------------------------------------------------------------

def test_lockdown_refuses_every_kiosk_action(api, ctx, hotel):
    row = _arrival(ctx, hotel, last="Lovelace")
    stay = make_checked_in(ctx, hotel, guest={"last_name": "Byron"})
    token = kiosk_token(api)
    session = session_for(api, hotel, token, row)
    stay_session = session_for(api, hotel, token, stay)
    configure(ctx, hotel, lockdown=True)
    base = f"/v1/properties/{hotel.id}"
    assert_problem(lookup(api, hotel, token, last_name="Lovelace",
                          confirmation_number=row.confirmation_number), 409, "kiosk_locked")
    assert_problem(_check_in(api, hotel, row, token, session), 409, "kiosk_locked")
    assert_problem(api.post(f"{base}/digital-keys", {"reservation_id": str(stay.id),
                                                     "key_type": "CARD"},
                            token=token, headers=with_session(stay_session)), 409, "kiosk_locked")
    assert_problem(api.post(f"{base}/reservations/{stay.id}/check-out", token=token,
                            headers=with_session(stay_session)), 409, "kiosk_locked")
    assert_problem(api.post(f"{base}/walk-in", {"guest": {"last_name": "Keats"},
                                                "payment_method_id": "pm_card_visa"},
                            token=token), 409, "kiosk_locked")
    # the config stays readable to the terminal, and staff still work
    assert api.get(f"{base}/kiosk-config", token=token).json["lockdown"] is True
    assert _check_in(api, hotel, row, api.token).status_code == 200


@pytest.mark.parametrize("disabled", ["CHECK_IN", "COLLECT_KEY", "CHECK_OUT", "WALK_IN"])
def test_a_mode_not_enabled_refuses_its_action_only(api, ctx, hotel, disabled):
    row = _arrival(ctx, hotel, last="Lovelace")
    stay = make_checked_in(ctx, hotel, guest={"last_name": "Byron"})
    token = kiosk_token(api)
    session = session_for(api, hotel, token, row)
    stay_session = session_for(api, hotel, token, stay)
    pay_folio(ctx, stay, "100.00")
    configure(ctx, hotel, tuple(m for m in ("CHECK_IN", "CHECK_OUT", "COLLECT_KEY", "WALK_IN")
                                if m != disabled))
    base = f"/v1/properties/{hotel.id}"
    answers = {
        "CHECK_IN": _check_in(api, hotel, row, token, session),
        "COLLECT_KEY": api.post(f"{base}/digital-keys", {"reservation_id": str(stay.id),
                                                         "key_type": "CARD"},
                                token=token, headers=with_session(stay_session)),
        "WALK_IN": api.post(f"{base}/walk-in", {"guest": {"last_name": "Keats"},
                                                "payment_method_id": "pm_card_visa"},
                            token=token),
    }
    answers["CHECK_OUT"] = api.post(f"{base}/reservations/{stay.id}/check-out", token=token,
                                    headers=with_session(stay_session))
    for mode, resp in answers.items():
        if mode == disabled:
            assert_problem(resp, 409, "kiosk_mode_disabled")
        else:
            assert resp.status_code in (200, 201), (mode, resp.text)


def test_no_lookup_without_a_lookup_mode(api, ctx, hotel):
    row = _arrival(ctx, hotel)
    configure(ctx, hotel, ("WALK_IN",))
    assert_problem(lookup(api, hotel, kiosk_token(api), last_name=row.guest_last_name,
                          confirmation_number=row.confirmation_number), 409,
                   "kiosk_mode_disabled")


# -- walk-in at a kiosk ---------------------------------------------------------------------------

def _walk_in(api, hotel, token, **over):
    body = {"guest": {"first_name": "John", "last_name": "Keats"},
            "payment_method_id": "pm_card_visa", **over}
    return api.post(f"/v1/properties/{hotel.id}/walk-in", body, token=token)


def test_a_kiosk_walk_in_is_guaranteed_by_a_manual_confirmation_intent(kapi, ctx, platform):
    hotel = make_booking_hotel(ctx, rooms=2)
    configure(ctx, hotel)
    resp = _walk_in(kapi, hotel, kiosk_token(kapi), nights=2)
    assert resp.status_code == 201, resp.text
    body = resp.json
    assert body["source"] == "WALKIN" and body["channel"] == "KIOSK"
    assert body["status"] == "CONFIRMED" and body["arrival_date"] == hotel.today.isoformat()
    guarantee = body["guarantee"]
    assert guarantee["status"] == "AUTHORIZED" and guarantee["amount"] == body["total_amount"]
    intents = list(platform.payments.intents.values())
    assert len(intents) == 1 and intents[0]["capture_method"] == "manual"
    assert intents[0]["status"] == "requires_capture"
    assert intents[0]["payment_method_id"] == "pm_card_visa"
    # then the kiosk looks it up and checks in through the normal route
    token = kiosk_token(kapi)
    found = lookup(kapi, hotel, token, last_name="keats",
                   confirmation_number=body["confirmation_number"])
    assert found.status_code == 200, found.text
    checked = kapi.post(f"/v1/properties/{hotel.id}/reservations/{body['id']}/check-in", {},
                        token=token, headers=with_session(found.json["kiosk_session"]))
    assert checked.status_code == 200, checked.text


def test_a_kiosk_walk_in_needs_a_guarantee_and_books_public_plans_only(kapi, ctx):
    hotel = make_booking_hotel(ctx, rooms=2)
    configure(ctx, hotel)
    token = kiosk_token(kapi)
    resp = kapi.post(f"/v1/properties/{hotel.id}/walk-in", {"guest": {"last_name": "Keats"}},
                     token=token)
    problem = assert_problem(resp, 422)
    assert problem["errors"][0]["field"] == "payment_method_id"
    negotiated = make_rate_plan(ctx, hotel.id, negotiated=True)
    assert_problem(_walk_in(kapi, hotel, token, rate_plan_id=str(negotiated.id),
                            room_type_id=str(hotel.room_type.id)), 422)
    # staff may book a walk-in without a guarantee, as before
    staff = kapi.post(f"/v1/properties/{hotel.id}/walk-in", {"guest": {"last_name": "Keats"}})
    assert staff.status_code == 201 and staff.json["guarantee"] is None


def test_a_declined_guarantee_cancels_the_walk_in(kapi, ctx, platform):
    hotel = make_booking_hotel(ctx, rooms=1)
    configure(ctx, hotel)
    resp = _walk_in(kapi, hotel, kiosk_token(kapi), payment_method_id="pm_card_declined")
    assert_problem(resp, 402, "payment_declined")
    with read_scope(ctx):
        rows = list(Reservation.select().where(Reservation.property == hotel.id))
    assert [r.status for r in rows] == ["CANCELLED"]
    # the room went back on sale: the next guest gets it
    assert _walk_in(kapi, hotel, kiosk_token(kapi)).status_code == 201


def test_a_lookup_answer_is_never_stored_for_replay(api, ctx, hotel):
    """The match holds a session token: no Idempotency-Key record keeps it (SPEC rule 3); a
    retry with the key runs again and opens a new session."""
    from pms.models import IdempotencyRecord

    row = _arrival(ctx, hotel, last="Lovelace")
    token = kiosk_token(api)
    body = {"last_name": "Lovelace", "confirmation_number": row.confirmation_number}
    first, again = (api.post(f"/v1/properties/{hotel.id}/kiosk/lookup", body, token=token,
                             headers={"Idempotency-Key": "kiosk-retry-1"}) for _ in range(2))
    assert first.status_code == again.status_code == 200, (first.text, again.text)
    assert "idempotent-replayed" not in again.headers
    assert first.json["kiosk_session"] != again.json["kiosk_session"]
    with read_scope(ctx):
        stored = [r.response_body or "" for r in IdempotencyRecord.select()]
    assert not any(first.json["kiosk_session"] in b for b in stored)
