"""Retention: past the env's rules a profile without a recent or unfinished stay is erased (as
a request would erase it) and a finished stay's registration is cleared; a dry run counts and
changes nothing; a profile with a stay to come is kept; a re-run takes nothing again."""

from __future__ import annotations

from datetime import timedelta

from pms.context import system_ctx
from pms.db.uow import read_scope, unit_of_work
from pms.models import Reservation
from pms.services.privacy import erasure, retention
from tests.factories import make_booking_hotel, make_profile, make_reservation


def test_purge_erases_stale_profiles_and_clears_old_registrations(api, ctx, monkeypatch):
    monkeypatch.setenv("PMS_PRIVACY_PROFILE_RETENTION_DAYS", "365")
    monkeypatch.setenv("PMS_PRIVACY_REGISTRATION_RETENTION_DAYS", "30")
    hotel = make_booking_hotel(ctx, rooms=2)
    base = f"/v1/properties/{hotel.id}"
    idle = make_profile(ctx, hotel.id)
    coming = make_profile(ctx, hotel.id)
    stay = make_reservation(ctx, hotel, guest_profile_id=str(coming.id), guest=None)
    gone = make_profile(ctx, hotel.id)
    old = make_reservation(ctx, hotel, guest_profile_id=str(gone.id), guest=None)
    assert api.post(f"{base}/reservations/{old.id}/cancel").status_code == 200
    with unit_of_work(ctx):
        Reservation.update(registration={"document_number": "X123"}).where(
            Reservation.id == old.id).execute()
    later = system_ctx(ctx.env_id, sub="retention-test").with_(
        now=ctx.now + timedelta(days=400))

    dry = retention.purge(later, dry_run=True)
    assert dry["profiles"] >= 2 and dry["registrations_cleared"] == 1
    assert api.get(f"{base}/profiles/{idle.id}").json["email"] == idle.email

    ticks: list[tuple[int, int]] = []
    report = retention.purge(later, progress=lambda done, total: ticks.append((done, total)))
    assert report["profiles_erased"] == report["profiles"] >= 2
    assert ticks and ticks[-1][0] == ticks[-1][1]
    for erased in (idle, gone):
        body = api.get(f"{base}/profiles/{erased.id}").json
        assert body["email"] is None and body["last_name"].startswith("erased-")
    assert api.get(f"{base}/profiles/{coming.id}").json["email"] == coming.email
    with read_scope(ctx):
        assert Reservation.get_by_id(old.id).registration is None
        assert Reservation.get_by_id(stay.id).guest_profile_id == coming.id
    again = retention.purge(later)
    assert again["profiles"] == 0 and again["registrations_cleared"] == 0


def test_before_the_rule_nothing_is_purged(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    idle = make_profile(ctx, hotel.id)
    report = retention.purge(system_ctx(ctx.env_id, sub="retention-test").with_(now=ctx.now))
    assert report["profiles"] == 0
    assert api.get(f"/v1/properties/{hotel.id}/profiles/{idle.id}").json["email"] == idle.email


def _set_privacy(api, property_id, **days):  # noqa: ANN001, ANN003, ANN202
    from tests.helpers import RawBody

    path = f"/v1/settings/modules?property_id={property_id}"
    etag = api.get(path).headers["etag"]
    resp = api.request("PATCH", path, json=RawBody(
        json={"privacy": days},
        headers={"If-Match": etag, "Content-Type": "application/merge-patch+json"}))
    assert resp.status_code == 200, resp.text
    return resp


def test_each_property_keeps_its_own_rules_and_the_longest_hold_wins(api, ctx, monkeypatch):
    """A data-protection officer sets a short rule at one hotel: a guest known only there goes
    after that rule, a guest who also stayed at a hotel with the default rule is kept by the
    longer one, and each stay's registration and messages follow their own hotel's rule."""
    for var in ("PROFILE", "REGISTRATION", "MESSAGE"):
        monkeypatch.setenv(f"PMS_PRIVACY_{var}_RETENTION_DAYS", "1000")
    short = make_booking_hotel(ctx, rooms=3)
    default = make_booking_hotel(ctx, rooms=3)
    _set_privacy(api, short.id, profile_retention_days=100, registration_retention_days=10,
                 message_retention_days=30)
    assert api.get(f"/v1/settings/modules?property_id={short.id}").json[
        "modules"]["privacy"]["message_retention_days"] == 30

    only_short = make_profile(ctx, short.id)
    both = make_profile(ctx, short.id)
    stays = {}
    for name, hotel, profile in (("s1", short, only_short), ("s2", short, both),
                                 ("d2", default, both)):
        stay = make_reservation(ctx, hotel, guest_profile_id=str(profile.id), guest=None)
        base = f"/v1/properties/{hotel.id}/reservations/{stay.id}"
        sent = api.post(f"{base}/messages", {"direction": "outgoing",
                                             "body": f"Welcome {profile.email}"})
        assert sent.status_code == 201, sent.text
        assert api.post(f"{base}/cancel").status_code == 200
        stays[name] = stay
    with unit_of_work(ctx):
        Reservation.update(registration={"document_number": "X123"}).where(
            Reservation.id.in_([s.id for s in stays.values()])).execute()

    def at(days: int):  # noqa: ANN202
        return system_ctx(ctx.env_id, sub="retention-test").with_(
            now=ctx.now + timedelta(days=days))

    early = retention.purge(at(20), dry_run=True)
    assert early["properties"][short.prop.code]["registrations"] == 10
    assert early["properties"][default.prop.code]["registrations"] == 1000
    assert early["registrations_cleared"] == 2 and early["messages_removed"] == 0

    report = retention.purge(at(200))
    # the short hotel's two stays lose registration and messages; the default hotel's keep them
    assert report["registrations_cleared"] == 2 and report["messages_removed"] == 2
    with read_scope(ctx):
        kept = {name: Reservation.get_by_id(s.id) for name, s in stays.items()}
        assert kept["s1"].registration is None and kept["s2"].registration is None
        assert kept["d2"].registration == {"document_number": "X123"}
        bodies = {name: [m.body for m in s.messages] for name, s in kept.items()}
    assert bodies["s2"] == [retention.REMOVED_BODY]
    assert bodies["s1"] in ([retention.REMOVED_BODY], [erasure.ERASED_BODY])  # its guest was erased too
    assert bodies["d2"] == [f"Welcome {both.email}"]
    # known only to the short hotel: erased; known to both: kept by the default hotel's rule
    erased = api.get(f"/v1/properties/{short.id}/profiles/{only_short.id}").json
    assert erased["email"] is None and erased["last_name"].startswith("erased-")
    assert api.get(f"/v1/properties/{short.id}/profiles/{both.id}").json["email"] == both.email

    again = retention.purge(at(200))
    assert again["messages_removed"] == 0 and again["registrations_cleared"] == 0
    later = retention.purge(at(1100))
    assert later["profiles_erased"] >= 1
    assert api.get(f"/v1/properties/{short.id}/profiles/{both.id}").json["email"] is None


def test_a_rule_out_of_range_is_refused(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    from tests.helpers import RawBody, assert_problem

    path = f"/v1/settings/modules?property_id={hotel.id}"
    etag = api.get(path).headers["etag"]
    for bad in (0, -5, "ten", 10 ** 6):
        resp = api.request("PATCH", path, json=RawBody(
            json={"privacy": {"profile_retention_days": bad}},
            headers={"If-Match": etag, "Content-Type": "application/merge-patch+json"}))
        assert_problem(resp, 422)
