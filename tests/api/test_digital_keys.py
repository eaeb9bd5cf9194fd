"""Digital keys through the HTTP API, on SQLite and PostgreSQL: issue only for a
checked-in stay with a room, validity from the property's check-out time, activate/deactivate,
the key limit (with the staff override), revocation at check-out (in its transaction, not
undone by a revert), the room move's tracked pair, a departure edit moving valid_until,
EXPIRED on read without a write and by the sweeper with an event, the boarding pass's count."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from pms.db.uow import read_scope, unit_of_work
from pms.devkeys import mint_token
from pms.errors import FolioNotClosable
from pms.models import DigitalKey, OutboxEvent
from pms.services.frontdesk import checkout
from pms.services.keys import lock_sync
from tests.factories import (
    make_booking_hotel,
    make_checked_in,
    make_profile,
    make_reservation,
    pay_folio,
)
from tests.helpers import assert_problem, audit_actions, counts, outbox_types


@pytest.fixture
def hotel(ctx):
    return make_booking_hotel(ctx, rooms=4)


def _base(hotel) -> str:
    return f"/v1/properties/{hotel.id}"


def _issue(api, hotel, stay, key_type: str = "MOBILE", **extra: Any) -> Any:
    return api.post(f"{_base(hotel)}/digital-keys",
                    {"reservation_id": str(stay.id), "key_type": key_type, **extra})


def _issue_ok(api, hotel, stay, key_type: str = "MOBILE") -> dict[str, Any]:
    resp = api.post(f"{_base(hotel)}/digital-keys",
                    {"reservation_id": str(stay.id), "key_type": key_type})
    assert resp.status_code == 201, resp.text
    return resp.json


def _keys(api, hotel, stay, **kw: Any) -> list[dict[str, Any]]:
    resp = api.get(f"{_base(hotel)}/digital-keys?reservation_id={stay.id}", **kw)
    assert resp.status_code == 200, resp.text
    return resp.json["data"]


def _check_out(ctx, hotel, stay):
    try:
        return checkout.check_out(ctx, hotel.id, stay.id)
    except FolioNotClosable as exc:
        pay_folio(ctx, stay, exc.extra["balance"])
        return checkout.check_out(ctx, hotel.id, stay.id)


def _stored(ctx, key_id) -> DigitalKey:
    with read_scope(ctx):
        return DigitalKey.get_by_id(key_id)


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# -- issue ---------------------------------------------------------------------------------------

def test_issue_is_inactive_and_valid_until_the_departure_at_the_property_check_out_time(
        api, ctx, hotel):
    assert api.get(_base(hotel)).json["checkOutTime"] == "11:00"
    for bad in ("25:00", "10.30", "9:30"):
        assert_problem(api.put(_base(hotel), {"checkOutTime": bad}), 422)
    resp = api.put(_base(hotel), {"checkOutTime": "10:30"})
    assert resp.status_code == 200 and resp.json["checkOutTime"] == "10:30", resp.text
    stay = make_checked_in(ctx, hotel)
    key = _issue_ok(api, hotel, stay, "CARD")
    assert key["status"] == "INACTIVE" and key["key_type"] == "CARD"
    assert key["room_number"] == stay.room.room_number
    local = datetime.combine(stay.departure_date, time(10, 30), tzinfo=ZoneInfo("Europe/Berlin"))
    assert _at(key["valid_until"]) == local.astimezone(UTC)
    assert _at(key["valid_from"]) <= _at(key["valid_until"])
    assert key["lock"]["state"] == "pending" and key["credential_ref"] is None
    assert key["revocation"] is None
    assert outbox_types(ctx)[-1] == "hotel:pms:digital_key:issued"
    assert audit_actions(ctx)[-1] == "digital_key.issued"


def test_issue_defaults_to_eleven_oclock_when_the_property_sets_no_check_out_time(
        api, ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    key = _issue_ok(api, hotel, stay)
    local = datetime.combine(stay.departure_date, time(11, 0), tzinfo=ZoneInfo("Europe/Berlin"))
    assert _at(key["valid_until"]) == local.astimezone(UTC)


def test_issue_for_a_stay_not_checked_in_answers_409_key_requires_checked_in(api, ctx, hotel):
    booked = make_reservation(ctx, hotel)
    assert_problem(_issue(api, hotel, booked), 409, "key_requires_checked_in")
    out = make_checked_in(ctx, hotel)
    _check_out(ctx, hotel, out)
    assert_problem(_issue(api, hotel, out), 409, "key_requires_checked_in")
    with read_scope(ctx):
        assert DigitalKey.select().count() == 0


def test_bad_key_bodies_answer_422_and_never_take_a_secret(api, ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    url = f"{_base(hotel)}/digital-keys"
    assert_problem(api.post(url, {"reservation_id": str(stay.id), "key_type": "BRASS"}), 422)
    assert_problem(api.post(url, {"reservation_id": "nope", "key_type": "PIN"}), 422)
    assert_problem(api.post(url, {"reservation_id": str(stay.id), "key_type": "PIN",
                                  "pin": "1234"}), 422)
    assert_problem(api.get(url), 422)  # reservation_id is required to list


def test_no_secret_column_exists_and_the_lock_reference_is_all_that_is_kept(api, ctx, hotel):
    columns = {f.column_name for f in DigitalKey._meta.sorted_fields}
    assert not {c for c in columns if any(w in c for w in ("pin", "secret", "code", "payload"))
                and c != "credential_ref"}
    stay = make_checked_in(ctx, hotel)
    key = _issue_ok(api, hotel, stay, "PIN")
    from pms.platform.locks import EmbeddedLocks

    lock_sync.sync_lock(ctx, _stored(ctx, key["id"]).id, EmbeddedLocks())
    row = _stored(ctx, key["id"])
    assert row.credential_ref and row.credential_ref.startswith("lk_")


# -- activate / deactivate -----------------------------------------------------------------------

def test_activate_deactivate_and_repeats(api, ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    key = _issue_ok(api, hotel, stay)
    url = f"{_base(hotel)}/digital-keys/{key['id']}"
    resp = api.post(url + "/activate")
    assert resp.status_code == 200 and resp.json["status"] == "ACTIVE", resp.text
    assert outbox_types(ctx)[-1] == "hotel:pms:digital_key:activated"
    written = counts(ctx)
    again = api.post(url + "/activate")
    assert again.status_code == 200 and again.json["status"] == "ACTIVE"
    assert counts(ctx) == written  # the repeat answers the current state and writes nothing
    resp = api.post(url + "/deactivate")
    assert resp.status_code == 200 and resp.json["status"] == "INACTIVE"
    assert outbox_types(ctx)[-1] == "hotel:pms:digital_key:deactivated"
    assert api.post(url + "/activate").json["status"] == "ACTIVE"  # reversible


def test_activate_an_unknown_key_answers_404(api, hotel):
    import uuid

    assert_problem(api.post(f"{_base(hotel)}/digital-keys/{uuid.uuid4()}/activate"), 404)


# -- the key limit -------------------------------------------------------------------------------

def test_the_third_key_of_a_stay_answers_409_key_limit_reached_with_limit_and_count(
        api, ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    _issue_ok(api, hotel, stay)
    _issue_ok(api, hotel, stay, "CARD")
    body = assert_problem(_issue(api, hotel, stay), 409, "key_limit_reached")
    assert body["limit"] == 2 and body["count"] == 2
    with read_scope(ctx):
        assert DigitalKey.select().where(DigitalKey.reservation == stay.id).count() == 2


def test_staff_may_exceed_the_limit_only_with_a_reason_which_is_audited(api, ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    _issue_ok(api, hotel, stay)
    _issue_ok(api, hotel, stay)
    resp = _issue(api, hotel, stay, override_reason="guest lost both cards")
    assert resp.status_code == 201, resp.text
    assert resp.json["override_reason"] == "guest lost both cards"
    from pms.models import AuditEntry

    with read_scope(ctx):
        last = AuditEntry.select().order_by(AuditEntry.created_at.desc()).first()
    assert last.action == "digital_key.issued" and last.reason == "guest lost both cards"


def test_guest_and_kiosk_tokens_cannot_override_the_limit(api, ctx, hotel):
    guest = make_profile(ctx, hotel.id)
    stay = make_checked_in(ctx, hotel, guest_profile_id=str(guest.id), guest=None)
    url = f"{_base(hotel)}/digital-keys"
    body = {"reservation_id": str(stay.id), "key_type": "MOBILE", "override_reason": "please"}
    token = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                       holder_id=str(guest.id))
    assert_problem(api.post(url, body, token=token), 403, "override_not_allowed")
    # A kiosk token reaches no stay at all without its kiosk session (the route gate
    # refuses it before the body is read); with one, the service refuses it an override too.
    from tests.api.kiosk_recipes import configure, kiosk_token, session_for, with_session

    token = kiosk_token(api)
    assert_problem(api.post(url, body, token=token), 403, "kiosk_session_invalid")
    configure(ctx, hotel, max_keys_per_stay=2)
    session = session_for(api, hotel, token, stay)
    assert_problem(api.post(url, body, token=token, headers=with_session(session)), 403,
                   "override_not_allowed")
    token = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                       holder_id=str(guest.id))
    for _ in range(2):
        assert api.post(url, {"reservation_id": str(stay.id), "key_type": "MOBILE"},
                        token=token).status_code == 201
    assert_problem(api.post(url, {"reservation_id": str(stay.id), "key_type": "MOBILE"},
                            token=token), 409, "key_limit_reached")


def test_the_limit_comes_from_the_kiosk_config_and_counts_live_keys_only(api, ctx, hotel):
    put = api.put(f"{_base(hotel)}/kiosk-config", {
        "enabled_modes": ["COLLECT_KEY"], "add_on_package_codes": [], "lockdown": False,
        "max_keys_per_stay": 1})
    assert put.status_code == 200, put.text
    stay = make_checked_in(ctx, hotel)
    _issue_ok(api, hotel, stay)
    body = assert_problem(_issue(api, hotel, stay), 409, "key_limit_reached")
    assert body["limit"] == 1 and body["count"] == 1
    # a key past its valid_until is not live: it no longer counts
    with unit_of_work(ctx):
        DigitalKey.update(valid_until=ctx.now - timedelta(minutes=1)).where(
            DigitalKey.reservation == stay.id).execute()
    assert _issue(api, hotel, stay).status_code == 201


# -- check-out, revert, room move, departure edit ----------------------------------------------

def test_check_out_revokes_every_live_key_in_its_transaction_and_revert_does_not_revive(
        api, ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    active = _issue_ok(api, hotel, stay)
    inactive = _issue_ok(api, hotel, stay, "CARD")
    assert api.post(f"{_base(hotel)}/digital-keys/{active['id']}/activate").status_code == 200
    # a refused check-out (balance on the folio) revokes nothing: same transaction
    with pytest.raises(FolioNotClosable):
        checkout.check_out(ctx, hotel.id, stay.id)
    assert {k["status"] for k in _keys(api, hotel, stay)} == {"ACTIVE", "INACTIVE"}
    _check_out(ctx, hotel, stay)
    listed = {k["id"]: k for k in _keys(api, hotel, stay)}
    for key_id in (active["id"], inactive["id"]):
        assert listed[key_id]["status"] == "REVOKED"
        assert listed[key_id]["revocation"]["reason"] == "check_out"
        assert listed[key_id]["lock"]["state"] == "pending"
    with read_scope(ctx):
        revoked = [e for e in OutboxEvent.select() if e.type == "hotel:pms:digital_key:revoked"]
        checked_out = OutboxEvent.get(OutboxEvent.type == "hotel:pms:reservation:checked_out")
    assert len(revoked) == 2 and {e.request_id for e in revoked} == {checked_out.request_id}
    for key_id in (active["id"], inactive["id"]):
        assert_problem(api.post(f"{_base(hotel)}/digital-keys/{key_id}/activate"), 409,
                       "key_not_active")
    resp = api.post(f"{_base(hotel)}/reservations/{stay.id}/revert", {"reason": "oops"})
    assert resp.status_code == 200, resp.text
    assert {k["status"] for k in _keys(api, hotel, stay)} == {"REVOKED"}


def test_revert_of_a_check_in_revokes_the_stays_keys(api, ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    key = _issue_ok(api, hotel, stay)
    resp = api.post(f"{_base(hotel)}/reservations/{stay.id}/revert", {"reason": "wrong guest"})
    assert resp.status_code == 200, resp.text
    assert _stored(ctx, key["id"]).status == "REVOKED"
    assert _stored(ctx, key["id"]).revoke_reason == "check_in_reverted"


def test_room_move_revokes_the_old_rooms_keys_and_issues_the_new_ones_as_a_pair(
        api, ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    old_room = stay.room.room_number
    old = _issue_ok(api, hotel, stay, "CARD")
    api.post(f"{_base(hotel)}/digital-keys/{old['id']}/activate")
    new_room = next(r.room_number for r in hotel.rooms if r.room_number != old_room)
    resp = api.put(f"{_base(hotel)}/reservations/{stay.id}/room", {"room_number": new_room})
    assert resp.status_code == 200, resp.text
    listed = {k["id"]: k for k in _keys(api, hotel, stay)}
    assert listed[old["id"]]["status"] == "REVOKED"
    assert listed[old["id"]]["revocation"]["reason"] == "room_move"
    [new] = [k for k in listed.values() if k["id"] != old["id"]]
    assert new["status"] == "INACTIVE" and new["room_number"] == new_room
    assert new["key_type"] == "CARD" and new["replaces_key_id"] == old["id"]
    assert new["pair_id"] == listed[old["id"]]["pair_id"] and new["pair_id"]
    assert new["valid_until"] == old["valid_until"]


def test_departure_edit_of_an_in_house_stay_moves_valid_until(api, ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    key = _issue_ok(api, hotel, stay)
    later = stay.departure_date + timedelta(days=2)
    resp = api.put(f"{_base(hotel)}/reservations/{stay.id}",
                   {"departure_date": later.isoformat()})
    assert resp.status_code == 200, resp.text
    [moved] = _keys(api, hotel, stay)
    local = datetime.combine(later, time(11, 0), tzinfo=ZoneInfo("Europe/Berlin"))
    assert _at(moved["valid_until"]) == local.astimezone(UTC) != _at(key["valid_until"])
    assert moved["lock"]["state"] == "pending"  # the lock must learn the new end
    assert "hotel:pms:digital_key:validity_changed" in outbox_types(ctx)


def test_split_of_an_in_house_stay_ends_its_keys_with_the_first_part(api, ctx, hotel):
    stay = make_checked_in(ctx, hotel, departure_date=(hotel.today + timedelta(days=3)).isoformat())
    _issue_ok(api, hotel, stay)
    at = hotel.today + timedelta(days=1)
    resp = api.post(f"{_base(hotel)}/reservations/{stay.id}/split",
                    {"split_date": at.isoformat()})
    assert resp.status_code == 201, resp.text
    [key] = _keys(api, hotel, stay)
    local = datetime.combine(at, time(11, 0), tzinfo=ZoneInfo("Europe/Berlin"))
    assert _at(key["valid_until"]) == local.astimezone(UTC)


# -- expiry --------------------------------------------------------------------------------------

def _end_keys(ctx, stay) -> None:
    """Put the stay's keys past their valid_until (the app's clock stays: tokens stay valid)."""
    with unit_of_work(ctx):
        DigitalKey.update(valid_until=ctx.now - timedelta(minutes=1)).where(
            DigitalKey.reservation == stay.id).execute()


def test_a_key_past_valid_until_reads_expired_without_a_write(api, ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    key = _issue_ok(api, hotel, stay)
    _end_keys(ctx, stay)
    written = counts(ctx)
    [listed] = _keys(api, hotel, stay)
    assert listed["status"] == "EXPIRED"
    assert _stored(ctx, key["id"]).status == "INACTIVE"  # never written by a read
    assert counts(ctx) == written
    assert_problem(api.post(f"{_base(hotel)}/digital-keys/{key['id']}/activate"), 409,
                   "key_not_active")


def test_the_sweeper_writes_expired_with_an_event_and_leaves_live_keys(api, ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    key = _issue_ok(api, hotel, stay)
    other = make_checked_in(ctx, hotel, departure_date=(
        hotel.today + timedelta(days=9)).isoformat())
    live = _issue_ok(api, hotel, other)
    assert lock_sync.expire_keys(ctx) == 0
    later = ctx.with_(now=_at(key["valid_until"]) + timedelta(seconds=1))
    assert lock_sync.expire_keys(later) == 1
    assert lock_sync.expire_keys(later) == 0  # safe to re-run
    assert _stored(ctx, key["id"]).status == "EXPIRED"
    assert _stored(ctx, live["id"]).status == "INACTIVE"
    assert outbox_types(ctx).count("hotel:pms:digital_key:expired") == 1
    assert audit_actions(ctx).count("digital_key.expired") == 1


# -- boarding pass -------------------------------------------------------------------------------

def test_boarding_pass_counts_live_keys(api, ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    url = f"{_base(hotel)}/reservations/{stay.id}/boarding-pass"
    assert api.get(url).json["key_count"] == 0
    one = _issue_ok(api, hotel, stay)
    _issue_ok(api, hotel, stay)
    api.post(f"{_base(hotel)}/digital-keys/{one['id']}/activate")
    assert api.get(url).json["key_count"] == 2
    new_room = next(r.room_number for r in hotel.rooms if r.room_number != stay.room.room_number)
    api.put(f"{_base(hotel)}/reservations/{stay.id}/room", {"room_number": new_room})
    assert api.get(url).json["key_count"] == 2  # two revoked, two new
    _end_keys(ctx, stay)
    assert api.get(url).json["key_count"] == 0  # expired keys do not count


# -- holders -------------------------------------------------------------------------------------

def test_a_guest_reaches_only_the_keys_of_its_own_stays(api, ctx, hotel):
    mine = make_profile(ctx, hotel.id)
    theirs = make_profile(ctx, hotel.id)
    stay = make_checked_in(ctx, hotel, guest_profile_id=str(mine.id), guest=None)
    key = _issue_ok(api, hotel, stay)
    stranger = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                          holder_id=str(theirs.id))
    owner = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                       holder_id=str(mine.id))
    base = _base(hotel)
    assert_problem(api.get(f"{base}/digital-keys?reservation_id={stay.id}", token=stranger), 404)
    assert_problem(api.post(f"{base}/digital-keys", {"reservation_id": str(stay.id),
                                                     "key_type": "MOBILE"}, token=stranger), 404)
    for action in ("activate", "deactivate"):
        assert_problem(api.post(f"{base}/digital-keys/{key['id']}/{action}", token=stranger),
                       404)
    assert _stored(ctx, key["id"]).status == "INACTIVE"
    assert [k["id"] for k in _keys(api, hotel, stay, token=owner)] == [key["id"]]
    resp = api.post(f"{base}/digital-keys/{key['id']}/activate", token=owner)
    assert resp.status_code == 200 and resp.json["status"] == "ACTIVE"
