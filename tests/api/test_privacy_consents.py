"""A guest's consents: records per purpose with source, time and text version, withdrawable,
reachable by staff and by the guest's own token only; events carry no personal data."""

from __future__ import annotations

from pms.db.uow import read_scope
from pms.devkeys import mint_token
from pms.models import OutboxEvent, Profile
from tests.factories import make_booking_hotel, make_profile
from tests.helpers import assert_problem


def _setup(api, ctx):  # noqa: ANN001, ANN202
    hotel = make_booking_hotel(ctx, rooms=1)
    guest = make_profile(ctx, hotel.id)
    url = f"/v1/properties/{hotel.id}/profiles/{guest.id}/consents"
    token = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                       holder_id=str(guest.id))
    return hotel, guest, url, token


def test_consent_is_recorded_withdrawn_and_the_newest_record_stands(api, ctx):
    hotel, guest, url, _ = _setup(api, ctx)
    granted = api.post(url, {"purpose": "MARKETING_EMAIL", "granted": True, "source": "DESK",
                             "text_version": "mkt-2026-01"})
    assert granted.status_code == 201, granted.text
    body = granted.json
    assert body["purpose"] == "MARKETING_EMAIL" and body["granted"] is True
    assert body["source"] == "DESK" and body["text_version"] == "mkt-2026-01"
    assert body["recorded_at"] and body["recorded_by"]
    sms = api.post(url, {"purpose": "MARKETING_SMS", "granted": True, "source": "KIOSK",
                         "text_version": "mkt-2026-01"})
    assert sms.status_code == 201, sms.text
    assert sorted(api.get(url + "/current").json["granted"]) == ["MARKETING_EMAIL",
                                                                   "MARKETING_SMS"]
    withdrawn = api.post(url, {"purpose": "MARKETING_EMAIL", "granted": False,
                               "source": "GUEST_PORTAL", "text_version": "mkt-2026-01"})
    assert withdrawn.status_code == 201, withdrawn.text
    current = api.get(url + "/current").json
    assert current["granted"] == ["MARKETING_SMS"]
    email = [c for c in current["consents"] if c["purpose"] == "MARKETING_EMAIL"]
    assert email[0]["granted"] is False and email[0]["source"] == "GUEST_PORTAL"
    # the history keeps the proof of the grant
    history = api.get(url, params={"purpose": "MARKETING_EMAIL"}).json["data"]
    assert [r["granted"] for r in history] == [True, False]
    assert len(api.get(url).json["data"]) == 3
    with read_scope(ctx):
        events = [e for e in OutboxEvent.select() if e.type.startswith("hotel:pms:consent:")]
    assert sorted(e.type for e in events) == ["hotel:pms:consent:granted",
                                              "hotel:pms:consent:granted",
                                              "hotel:pms:consent:withdrawn"]
    for event in events:
        text = str(event.data)
        assert guest.email not in text and guest.last_name not in text


def test_the_guest_manages_its_own_consents_and_never_anothers(api, ctx):
    hotel, guest, url, token = _setup(api, ctx)
    other = make_profile(ctx, hotel.id)
    own = api.post(url, {"purpose": "PROFILING", "granted": True, "source": "GUEST_PORTAL",
                         "text_version": "v3"}, token=token)
    assert own.status_code == 201, own.text
    assert api.get(url + "/current", token=token).json["granted"] == ["PROFILING"]
    other_url = f"/v1/properties/{hotel.id}/profiles/{other.id}/consents"
    assert_problem(api.post(other_url, {"purpose": "PROFILING", "granted": True,
                                        "source": "GUEST_PORTAL", "text_version": "v3"},
                            token=token), 404)
    assert_problem(api.get(other_url + "/current", token=token), 404)
    assert_problem(api.get(other_url, token=token), 404)
    assert api.get(other_url + "/current").json["granted"] == []


def test_bad_consent_bodies_are_422(api, ctx):
    _, _, url, _ = _setup(api, ctx)
    for bad in ({"purpose": "SPAM", "granted": True, "source": "DESK", "text_version": "v1"},
                {"purpose": "PROFILING", "granted": True, "source": "FAX", "text_version": "v1"},
                {"purpose": "PROFILING", "granted": True, "source": "DESK", "text_version": ""},
                {"purpose": "PROFILING", "source": "DESK", "text_version": "v1"},
                {"purpose": "PROFILING", "granted": "yes", "source": "DESK",
                 "text_version": "v1"}):
        resp = api.post(url, bad)
        assert resp.status_code == 422, (bad, resp.text)


def test_a_malformed_cursor_on_the_history_is_422(api, ctx):
    _, _, url, _ = _setup(api, ctx)
    assert_problem(api.get(url, params={"cursor": "!!!not base64"}), 422, "invalid_cursor")


def test_the_standing_consent_is_on_the_profile_and_its_events(api, ctx):
    """A marketing system reads the consent from the profile's events, without contact data:
    a grant or a withdrawal that changes the granted set changes the profile (its version,
    `profile:consents_changed`); a record that repeats the standing answer changes nothing."""
    from pms.event_views import consumer_data

    hotel, guest, url, _ = _setup(api, ctx)
    profile_url = f"/v1/properties/{hotel.id}/profiles/{guest.id}"
    start = api.get(profile_url).json
    assert start["consents"] == []
    with read_scope(ctx):
        version = Profile.get_by_id(guest.id).version

    def record(purpose, granted):  # noqa: ANN001, ANN202
        resp = api.post(url, {"purpose": purpose, "granted": granted, "source": "DESK",
                              "text_version": "mkt-2026-02"})
        assert resp.status_code == 201, resp.text

    record("MARKETING_EMAIL", True)
    record("PROFILING", True)
    record("MARKETING_EMAIL", True)  # the same standing answer: no profile change
    record("PROFILING", False)
    now = api.get(profile_url).json
    assert now["consents"] == ["MARKETING_EMAIL"]
    with read_scope(ctx):
        changes = [e for e in OutboxEvent.select().order_by(OutboxEvent.created_at)
                   if e.type == "hotel:pms:profile:consents_changed"]
    assert [sorted(e.data["consents"]) for e in changes] == [
        ["MARKETING_EMAIL"], ["MARKETING_EMAIL", "PROFILING"], ["MARKETING_EMAIL"]]
    published = consumer_data(changes[-1].type, changes[-1].data)
    assert published["consents"] == ["MARKETING_EMAIL"]
    assert guest.email not in str(published) and guest.last_name not in str(published)
    # each change is a new version of the profile; the repeat is none
    with read_scope(ctx):
        assert Profile.get_by_id(guest.id).version == version + 3
    assert now["updated_at"] > start["updated_at"]
