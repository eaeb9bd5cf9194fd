"""Channel allotments with a release period, through the HTTP API (both backends): an
allotment with `release_days` holds its plan's unsold rooms (refused to walk-ins and other
plans) until N days before the night, then they return to the house; an allotment without one
only caps its plan, as before."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from pms.services.night_audit.end_of_day import Hooks, run_night_audit
from tests.factories import load_rates, make_booking_hotel, make_rate_plan, reservation_body
from tests.helpers import EOD_OVERRIDE, assert_problem
from tests.services.test_ari_events import Projection, ari_rows

pytestmark = pytest.mark.usefixtures("database")


@pytest.fixture
def hotel(ctx):
    hotel = make_booking_hotel(ctx, rooms=3)
    hotel.ota = make_rate_plan(ctx, hotel.id)
    load_rates(ctx, hotel.id, hotel.ota.id, hotel.room_type.id, amount="90.00")
    return hotel


def _allot(api, hotel, day, allotment, release_days, days=1):
    resp = api.put(f"/v1/properties/{hotel.id}/rate-plans/{hotel.ota.id}/allotments",
                   {"room_type_id": str(hotel.room_type.id), "from_date": day.isoformat(),
                    "to_date": (day + timedelta(days=days - 1)).isoformat(),
                    "allotment": allotment, "release_days": release_days})
    assert resp.status_code == 200, resp.text
    return resp.json


def _book(api, hotel, day, plan=None):
    body = reservation_body(hotel, arrival_date=day.isoformat(),
                            departure_date=(day + timedelta(days=1)).isoformat())
    if plan is not None:
        body["rate_plan_id"] = str(plan.id)
    return api.post(f"/v1/properties/{hotel.id}/reservations", body)


def _search(api, hotel, day):
    resp = api.post(f"/v1/properties/{hotel.id}/availability",
                    {"arrival_date": day.isoformat(),
                     "departure_date": (day + timedelta(days=1)).isoformat(), "adults": 1})
    assert resp.status_code == 200, resp.text
    (rt,) = resp.json["room_types"]
    return rt["available"], {o["rate_plan_id"]: o["available"] for o in rt["offers"]}


def test_held_rooms_are_refused_to_walk_ins_and_sold_on_the_channel(api, hotel):
    day = hotel.today + timedelta(days=20)
    out = _allot(api, hotel, day, 2, 7)
    assert [(n["allotment"], n["left"], n["release_days"], n["held"]) for n in out["data"]] == [
        (2, 2, 7, 2)]
    house, offers = _search(api, hotel, day)
    assert house == 1
    assert offers == {str(hotel.rate_plan.id): 1, str(hotel.ota.id): 2}
    assert _book(api, hotel, day).status_code == 201  # the house's one room
    assert_problem(_book(api, hotel, day), 409, "room_type_unavailable")  # held for the channel
    # the house is full, the channel still sells its allotment
    assert _book(api, hotel, day, hotel.ota).status_code == 201
    assert _book(api, hotel, day, hotel.ota).status_code == 201
    assert _search(api, hotel, day)[0] == 0
    resp = _book(api, hotel, day, hotel.ota)
    assert resp.status_code == 409, resp.text
    got = api.get(f"/v1/properties/{hotel.id}/rate-plans/{hotel.ota.id}/allotments",
                  params={"from_date": day.isoformat(), "to_date": day.isoformat()})
    assert [(n["sold"], n["left"], n["held"]) for n in got.json["data"]] == [(2, 0, 0)]


def test_a_cap_only_allotment_holds_nothing(api, hotel):
    """Control: the same allotment without a release period only caps its plan."""
    day = hotel.today + timedelta(days=20)
    out = _allot(api, hotel, day, 2, None)
    assert [(n["release_days"], n["held"]) for n in out["data"]] == [(None, 0)]
    assert _search(api, hotel, day)[0] == 3
    for _ in range(3):
        assert _book(api, hotel, day).status_code == 201
    assert_problem(_book(api, hotel, day, hotel.ota), 409, "room_type_unavailable")


def _audit(ctx, hotel):
    result = run_night_audit(ctx, hotel.id, hooks=Hooks(), override_reason=EOD_OVERRIDE)
    assert result.status == "DONE"
    return result


def test_the_unsold_hold_returns_to_the_house_at_its_release(api, ctx, hotel):
    """The business date moves by the night audit; the night is released N days before it."""
    day = hotel.today + timedelta(days=5)
    _allot(api, hotel, day, 2, 3)
    assert _search(api, hotel, day)[0] == 1
    assert _book(api, hotel, day).status_code == 201
    assert_problem(_book(api, hotel, day), 409, "room_type_unavailable")
    _audit(ctx, hotel)  # business date today + 1: 4 days before the night, still held
    assert_problem(_book(api, hotel, day), 409, "room_type_unavailable")
    assert _search(api, hotel, day)[0] == 0
    _audit(ctx, hotel)  # today + 2: 3 days before, released
    assert _search(api, hotel, day)[0] == 2
    assert _book(api, hotel, day).status_code == 201
    assert _book(api, hotel, day).status_code == 201
    assert_problem(_book(api, hotel, day, hotel.ota), 409, "room_type_unavailable")


def test_the_release_day_is_judged_against_the_business_date_and_the_audit_tells_ari(
        api, ctx, hotel):
    """The night audit's date roll releases the holds of the nights whose period ends on the new
    date: their ARI events carry the house's sellable again, and what the channel may sell."""
    day = hotel.today + timedelta(days=3)
    _allot(api, hotel, day, 1, 2)
    projection = Projection()
    projection.apply(ari_rows(ctx))
    rt = str(hotel.room_type.id)
    assert projection.sellable[(rt, day.isoformat())] == 2
    nights = [e["data"]["nights"] for e in ari_rows(ctx)]
    held = [n for per in nights for n in per if n["date"] == day.isoformat()][-1]
    assert held["channel_sellable"] == {str(hotel.ota.id): 1}
    assert _audit(ctx, hotel).business_date == hotel.today
    projection.apply(ari_rows(ctx))
    assert projection.sellable[(rt, day.isoformat())] == 3  # released on today + 1
    last = [n for e in ari_rows(ctx) for n in e["data"]["nights"]
            if n["date"] == day.isoformat()][-1]
    assert "channel_sellable" not in last
    assert _search(api, hotel, day)[0] == 3


def test_release_days_bad_input(api, hotel):
    base = f"/v1/properties/{hotel.id}/rate-plans/{hotel.ota.id}/allotments"
    body = {"room_type_id": str(hotel.room_type.id), "from_date": hotel.today.isoformat(),
            "to_date": hotel.today.isoformat(), "allotment": 1}
    assert_problem(api.put(base, {**body, "release_days": -1}), 422)
    assert_problem(api.put(base, {**body, "release_days": "soon"}), 422)


def _last_night(ctx, day):
    return [n for e in ari_rows(ctx) for n in e["data"]["nights"]
            if n["date"] == day.isoformat()][-1]


def test_a_sell_limit_under_the_holds_tells_the_channel_what_it_may_still_sell(api, ctx, hotel):
    """A sell limit (or rooms out of order) that leaves the house fewer rooms than the channels
    hold changes what each channel may sell: the change's ARI event says so, and lifting it
    says so again (a channel mirroring `channel_sellable` never oversells)."""
    day = hotel.today + timedelta(days=10)
    _allot(api, hotel, day, 2, 3)  # 3 rooms: the channel holds 2, the house sells 1
    ota = str(hotel.ota.id)
    assert _last_night(ctx, day)["channel_sellable"] == {ota: 2}
    limit = {"room_type_id": str(hotel.room_type.id), "from_date": day.isoformat(),
             "to_date": day.isoformat()}
    resp = api.put(f"/v1/properties/{hotel.id}/inventory", {**limit, "sell_limit": 1})
    assert resp.status_code == 200, resp.text
    night = _last_night(ctx, day)
    assert (night["sellable"], night["channel_sellable"]) == (0, {ota: 1})
    assert _search(api, hotel, day)[1][ota] == 1  # the search agrees
    resp = api.put(f"/v1/properties/{hotel.id}/inventory", {**limit, "sell_limit": None})
    assert resp.status_code == 200, resp.text
    night = _last_night(ctx, day)
    assert (night["sellable"], night["channel_sellable"]) == (1, {ota: 2})


def test_a_release_the_clock_makes_is_announced_once_by_the_schedule(api, ctx, hotel):
    """A property without a night audit: its day is its local date, so a hold goes back to the
    house at local midnight. The `allotments.releases` tick announces the night that day
    (the house's sellable again, no channel_sellable), once; a tick before the release day
    announces nothing."""
    from pms.db.uow import read_scope
    from pms.models.property import Property
    from pms.scheduling import BY_NAME
    from pms.services.distribution.hold_releases import announce_clock_releases

    with read_scope(ctx):
        assert Property.get_by_id(hotel.id).business_date is None  # the clock's day
    day = hotel.today + timedelta(days=6)
    _allot(api, hotel, day, 2, 2)  # held until 2 days before the night
    assert BY_NAME["allotments.releases"].every == timedelta(minutes=5)
    rt = str(hotel.room_type.id)

    def tick(days_before):  # the schedule's tick at noon, property time, that many days before
        local_noon = datetime.combine(day - timedelta(days=days_before), time(12),
                                      ZoneInfo(hotel.prop.timezone))
        at = ctx.with_(now=local_noon.astimezone(UTC))
        before = len(ari_rows(ctx))
        counts = announce_clock_releases(at)
        return counts, ari_rows(ctx)[before:]

    counts, events = tick(3)  # still held: nothing to say
    assert counts["nights_released"] == 0 and events == []
    counts, events = tick(2)  # the release day
    assert counts == {"properties": 1, "nights_released": 1}
    (event,) = events
    assert event["data"]["room_type_id"] == rt
    (night,) = [n for n in event["data"]["nights"] if n["date"] == day.isoformat()]
    assert night["sellable"] == 3 and "channel_sellable" not in night
    counts, events = tick(2)  # the same day again: once only
    assert counts["nights_released"] == 0 and events == []
    counts, events = tick(1)
    assert counts["nights_released"] == 0 and events == []


def test_a_tick_after_the_days_announcement_takes_no_streams_lock(api, ctx, hotel):
    """Once a day's releases are announced, the schedule's later ticks that day (every five
    minutes) answer from an unlocked read: a stream row locked elsewhere does not hold them.
    The control: the next day's tick has something to announce, so it needs the lock and
    waits for it."""
    import psycopg2

    from pms.db.database import db, is_postgres
    from pms.services.distribution.hold_releases import announce_releases

    if not is_postgres():
        pytest.skip("row locks are PostgreSQL's (SQLite runs one writer at a time)")
    day = hotel.today + timedelta(days=6)
    _allot(api, hotel, day, 2, 2)
    _allot(api, hotel, day + timedelta(days=1), 2, 2)
    release_day = day - timedelta(days=2)
    assert announce_releases(ctx, hotel.id, release_day) == 1
    database = db.obj
    holder = psycopg2.connect(database=database.database, **database.connect_params)
    try:
        with holder.cursor() as cur:
            cur.execute("SELECT set_config('app.env_id', %s, true)", (str(ctx.env_id),))
            cur.execute("SELECT id FROM ari_stream WHERE id = %s FOR UPDATE",
                        (str(hotel.room_type.id),))
            assert cur.fetchone() is not None
        assert announce_releases(ctx, hotel.id, release_day) == 0  # answered, no wait
        with pytest.raises(Exception) as caught:  # the control: the next day needs the lock
            announce_releases(ctx, hotel.id, release_day + timedelta(days=1))
        assert "lock" in f"{type(caught.value).__name__} {caught.value}".lower()
    finally:
        holder.rollback()
        holder.close()
