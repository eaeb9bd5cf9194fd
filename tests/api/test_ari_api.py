"""ARI that heals without full pushes: the digest per room type and month (a consumer
computes the same hashes from what it holds, by the README's canonical form), a re-push of only
the months that differ as a job, and the full 365-day push (both backends)."""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta

import pytest

from pms.services import jobs
from pms.services.distribution.ari_events import ARI_UPDATED
from tests.factories import make_booking_hotel, make_reservation, reservation_body
from tests.helpers import assert_problem
from tests.services.test_ari_events import Projection, ari_rows

pytestmark = pytest.mark.usefixtures("database")


OPEN = {"closed": False, "closed_to_arrival": False, "closed_to_departure": False,
        "min_stay_arrival": None, "max_stay_arrival": None, "min_stay_through": None,
        "max_stay_through": None}


def _rule_text(rule: dict) -> str:
    return ":".join(("1" if rule[k] else "0") if isinstance(OPEN[k], bool)
                    else ("" if rule[k] is None else str(rule[k])) for k in OPEN)


def consumer_hash(projection: Projection, room_type_id: str, month: str,
                  nights: tuple[str, str] | None = None) -> str:
    """The README's canonical form, computed from a consumer's own state: the nights of
    `month` (or of its `nights` range, from_date..to_date, as the digest names them)."""
    import calendar
    from datetime import date

    year, mon = (int(x) for x in month.split("-"))
    days = [date(year, mon, d).isoformat() for d in range(1, calendar.monthrange(year, mon)[1] + 1)]
    if nights:
        days = [d for d in days if nights[0] <= d <= nights[1]]
    lines = []
    for day in days:
        key = (room_type_id, day)
        parts = [day, str(projection.sellable.get(key, "?")),
                 ",".join(f"{p}={a}" for p, a in sorted(projection.rates.get(key, {}).items())),
                 ",".join(f"{p}={n}" for p, n in sorted(projection.allotments.get(key, {}).items())),
                 ",".join(f"{p}={_rule_text(r)}" for p, r in
                          sorted(projection.restrictions.get(key, {}).items()) if r != OPEN)]
        while len(parts) > 3 and not parts[-1]:
            parts.pop()
        lines.append("|".join(parts))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def consumer_digest(projection: Projection, entries: list[dict]) -> dict:
    """The consumer's hash of every (room type, month) the digest answered, over its nights."""
    return {(d["room_type_id"], d["month"]): consumer_hash(
        projection, d["room_type_id"], d["month"], (d["from_date"], d["to_date"]))
        for d in entries}


@pytest.fixture
def hotel(ctx):
    return make_booking_hotel(ctx, rooms=2)


def _months(hotel, n=3):
    out, day = [], hotel.today.replace(day=1)
    for _ in range(n):
        out.append(day.strftime("%Y-%m"))
        day = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
    return out


def _entries(api, hotel, first=None, last=None):
    params = {k: v for k, v in (("from", first), ("to", last)) if v}
    resp = api.get(f"/v1/properties/{hotel.id}/ari/digest", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json["data"]


def _hashes(entries):
    return {(d["room_type_id"], d["month"]): d["hash"] for d in entries}


def _digest(api, hotel, first, last):
    return _hashes(_entries(api, hotel, first, last))


def _push(api, ctx, hotel, body):
    resp = api.post(f"/v1/properties/{hotel.id}/ari/push", body)
    assert resp.status_code == 202, resp.text
    assert resp.json["kind"] == "ari_push" and resp.headers["location"].startswith("/v1/jobs/")
    jobs.run_job(ctx, uuid.UUID(resp.json["id"]))  # (a worker runs it from job:queued)
    job = api.get(f"/v1/jobs/{resp.json['id']}").json
    assert job["status"] == "SUCCEEDED", job
    return job


def test_full_push_then_digest_equals_the_consumers_own_hashes(api, ctx, hotel):
    make_reservation(ctx, hotel)
    before = {e["id"] for e in ari_rows(ctx)}
    _push(api, ctx, hotel, {})
    pushed = [e for e in ari_rows(ctx) if e["id"] not in before]
    assert all(e["data"].get("full") for e in pushed)
    nights = [n for e in pushed for n in e["data"]["nights"]]
    assert len(nights) == 365  # one room type, 365 days from the business date
    assert nights[0]["date"] == hotel.today.isoformat()
    assert str(hotel.rate_plan.id) in nights[0]["rates"] and "restrictions" in nights[0]
    consumer = Projection(gaps_ok=True)
    consumer.apply(pushed)  # a channel that only ever got the full push
    # the digest's window is the push's: every month equal, the partial first and last too
    entries = _entries(api, hotel)
    assert entries[0]["from_date"] == hotel.today.isoformat()
    assert entries[-1]["to_date"] == (hotel.today + timedelta(days=364)).isoformat()
    assert sum(d["nights"] for d in entries) == 365
    assert _hashes(entries) == consumer_digest(consumer, entries)


def test_drift_in_one_month_is_found_by_the_digest_and_healed_by_a_push_of_that_month(
        api, ctx, hotel):
    consumer = Projection()
    consumer.apply(ari_rows(ctx))
    months = _months(hotel)
    rt = str(hotel.room_type.id)
    _push(api, ctx, hotel, {"months": months})  # a first full sync of three months
    consumer.apply(ari_rows(ctx))
    entries = _entries(api, hotel, months[0], months[-1])
    assert _hashes(entries) == consumer_digest(consumer, entries)
    # drift: the consumer misses an event of the second month
    day = f"{months[1]}-15"
    consumer.sellable[(rt, day)] += 1
    theirs = consumer_digest(consumer, entries)
    differ = [k[1] for k in theirs if _hashes(entries)[k] != theirs[k]]
    assert differ == [months[1]]
    before = {e["id"] for e in ari_rows(ctx)}
    _push(api, ctx, hotel, {"months": differ})
    repushed = [e for e in ari_rows(ctx) if e["id"] not in before]
    assert {n["date"][:7] for e in repushed for n in e["data"]["nights"]} == {months[1]}
    consumer.apply(repushed)
    assert _hashes(entries) == consumer_digest(consumer, entries)


def test_digest_defaults_to_the_full_pushs_365_nights(api, hotel):
    resp = api.get(f"/v1/properties/{hotel.id}/ari/digest")
    assert resp.status_code == 200, resp.text
    last = hotel.today + timedelta(days=364)
    months = _months(hotel, 13)
    months = months[:months.index(last.strftime("%Y-%m")) + 1]
    assert (resp.json["from"], resp.json["to"]) == (months[0], months[-1])
    assert [d["month"] for d in resp.json["data"]] == months
    assert resp.json["data"][0]["from_date"] == hotel.today.isoformat()
    assert resp.json["data"][-1]["to_date"] == last.isoformat()
    # only `from`: twelve whole months, still never a night before the business date
    resp = api.get(f"/v1/properties/{hotel.id}/ari/digest", params={"from": months[0]})
    assert [d["month"] for d in resp.json["data"]] == _months(hotel, 12)
    assert resp.json["data"][0]["from_date"] == hotel.today.isoformat()


def test_digest_and_push_refuse_bad_months(api, hotel):
    base = f"/v1/properties/{hotel.id}/ari"
    assert_problem(api.get(base + "/digest", params={"from": "2030-13", "to": "2030-12"}), 422)
    assert_problem(api.get(base + "/digest", params={"from": "2030-05", "to": "2030-01"}), 422)
    assert_problem(api.get(base + "/digest", params={"from": "2030-01", "to": "2032-01"}), 422)
    assert_problem(api.get(base + "/digest", params={"from": "2030-1", "to": "2030-02"}), 422)
    assert_problem(api.post(base + "/push", {"months": ["2030-00"]}), 422)
    assert_problem(api.post(base + "/push", {"months": []}), 422)
    assert_problem(api.get(f"/v1/properties/{uuid.uuid4()}/ari/digest",
                           params={"from": "2030-01", "to": "2030-01"}), 404)
    assert_problem(api.post(f"/v1/properties/{uuid.uuid4()}/ari/push", {}), 404)


def test_a_push_is_a_job_queued_with_its_event(api, ctx, hotel):
    from tests.helpers import outbox_types

    resp = api.post(f"/v1/properties/{hotel.id}/ari/push", {"months": _months(hotel, 1)})
    assert resp.status_code == 202
    assert outbox_types(ctx)[-1] == "hotel:pms:job:queued"
    assert not [t for t in outbox_types(ctx, ari=True)[-1:] if t == ARI_UPDATED]


def test_allotments_over_http_travel_in_the_events_and_the_digest(api, ctx, hotel):
    """PUT/GET .../rate-plans/{id}/allotments; a booking past it is a 409 naming the
    nights; the nights' rooms left reach the consumer and its hashes equal the digest."""
    from tests.factories import reservation_body

    base = f"/v1/properties/{hotel.id}/rate-plans/{hotel.rate_plan.id}/allotments"
    day = hotel.today + timedelta(days=40)
    _push(api, ctx, hotel, {"months": [day.strftime("%Y-%m")]})  # a first sync, before
    body = {"room_type_id": str(hotel.room_type.id), "from_date": day.isoformat(),
            "to_date": (day + timedelta(days=1)).isoformat(), "allotment": 1}
    resp = api.put(base, body)
    assert resp.status_code == 200, resp.text
    assert [(n["date"], n["allotment"], n["sold"], n["left"]) for n in resp.json["data"]] == [
        (day.isoformat(), 1, 0, 1), ((day + timedelta(days=1)).isoformat(), 1, 0, 1)]
    stay = {"arrival_date": day.isoformat(),
            "departure_date": (day + timedelta(days=1)).isoformat()}
    resp = api.post(f"/v1/properties/{hotel.id}/reservations", reservation_body(hotel, **stay))
    assert resp.status_code == 201, resp.text
    resp = api.post(f"/v1/properties/{hotel.id}/reservations", reservation_body(hotel, **stay))
    assert_problem(resp, 409, "allotment_exhausted")
    assert resp.json["nights"] == [day.isoformat()]
    got = api.get(base, params={"from_date": day.isoformat(),
                                "to_date": (day + timedelta(days=1)).isoformat()})
    assert [n["left"] for n in got.json["data"]] == [0, 1]
    consumer = Projection()
    consumer.apply(ari_rows(ctx))
    rt, plan, month = str(hotel.room_type.id), str(hotel.rate_plan.id), day.strftime("%Y-%m")
    assert consumer.allotments[(rt, day.isoformat())] == {plan: 0}
    assert _digest(api, hotel, month, month)[(rt, month)] == consumer_hash(consumer, rt, month)
    # bad input: 404 for another property's plan, 422 for a bad range
    other = make_booking_hotel(ctx, rooms=1)
    assert_problem(api.put(f"/v1/properties/{hotel.id}/rate-plans/{other.rate_plan.id}"
                           "/allotments", body), 404)
    assert api.put(base, {**body, "to_date": (day - timedelta(days=1)).isoformat()}
                   ).status_code == 422
    assert api.put(base, {**body, "allotment": -1}).status_code == 422


def test_a_missed_stop_sell_shows_in_the_digest_and_a_push_of_its_month_heals_it(
        api, ctx, hotel):
    """Restrictions are in the digest: a channel that missed a stop-sell, a closed-to-arrival
    or a minimum stay finds its month different."""
    day = hotel.today + timedelta(days=40)
    month = day.strftime("%Y-%m")
    _push(api, ctx, hotel, {"months": [month]})  # a first sync of the month
    consumer = Projection()
    consumer.apply(ari_rows(ctx))
    seen = {e["id"] for e in ari_rows(ctx)}
    base = f"/v1/properties/{hotel.id}"
    entries = _entries(api, hotel, month, month)
    assert _hashes(entries) == consumer_digest(consumer, entries)
    for body in ({"closed": True}, {"closed_to_arrival": True, "min_stay_arrival": 2},
                 {"min_stay_through": 3}):
        resp = api.put(f"{base}/rate-plans/{hotel.rate_plan.id}/restrictions",
                       {"from_date": day.isoformat(), "to_date": day.isoformat(), **body})
        assert resp.status_code == 200, resp.text
        entries = _entries(api, hotel, month, month)
        assert _hashes(entries) != consumer_digest(consumer, entries), body  # missed
        new = [e for e in ari_rows(ctx) if e["id"] not in seen]
        seen.update(e["id"] for e in new)
        consumer.apply(new)  # the event of the change: the digest agrees again
        assert _hashes(entries) == consumer_digest(consumer, entries), body
    # the house-wide stop-sell (no rate plan) closes every plan of the night
    resp = api.put(f"{base}/restrictions", {"from_date": day.isoformat(),
                                             "to_date": day.isoformat(), "closed": True})
    assert resp.status_code == 200, resp.text
    entries = _entries(api, hotel, month, month)
    assert _hashes(entries) != consumer_digest(consumer, entries)
    _push(api, ctx, hotel, {"months": [month]})
    consumer.apply([e for e in ari_rows(ctx) if e["id"] not in seen])
    assert _hashes(entries) == consumer_digest(consumer, entries)
    rt = str(hotel.room_type.id)
    assert consumer.restrictions[(rt, day.isoformat())][str(hotel.rate_plan.id)]["closed"]


def test_ari_events_name_codes_currency_and_the_negotiated_and_active_flags(api, ctx, hotel):
    """A rate plan id never travels without its code, currency and flags: a negotiated
    (company) rate reaches no public channel unmarked; the room type's code travels too."""
    base = f"/v1/properties/{hotel.id}"
    resp = api.post(f"{base}/rate-plans", {"code": "ACME", "name": "Acme negotiated",
                                           "negotiated": True, "currency": "EUR"})
    assert resp.status_code == 201, resp.text
    plan = resp.json["id"]
    day = hotel.today + timedelta(days=3)
    seen = {e["id"] for e in ari_rows(ctx)}
    resp = api.put(f"{base}/rate-plans/{plan}/rates", {"rates": [{
        "room_type_id": str(hotel.room_type.id), "from_date": day.isoformat(),
        "to_date": day.isoformat(), "amount": "80.00"}]})
    assert resp.status_code == 200, resp.text
    (event,) = [e for e in ari_rows(ctx) if e["id"] not in seen]
    seen.add(event["id"])
    assert event["data"]["room_type_code"] == hotel.room_type.code
    assert event["data"]["nights"][0]["rates"] == {plan: "80"}
    guests = [str(n) for n in range(1, hotel.room_type.max_occupancy + 1)]
    assert event["data"]["rate_plans"] == {
        plan: {"code": "ACME", "currency": "EUR", "negotiated": True, "active": True,
               "packages": [], "per_stay": dict.fromkeys(guests, "0")}}
    assert event["data"]["nights"][0]["prices"] == {plan: dict.fromkeys(guests, "80")}
    # a booking's event (sellable only: the in-commit statement on PostgreSQL) names no plan
    resp = api.post(f"{base}/reservations", reservation_body(hotel))
    assert resp.status_code == 201, resp.text
    (event,) = [e for e in ari_rows(ctx) if e["id"] not in seen]
    seen.add(event["id"])
    assert event["data"]["room_type_code"] == hotel.room_type.code
    assert event["data"]["rate_plans"] == {}
    # a full push names every plan with its flags; an inactive plan says so
    assert api.put(f"{base}/rate-plans/{plan}", {"active": False}).status_code == 200
    _push(api, ctx, hotel, {"months": [day.strftime("%Y-%m")]})
    pushed = [e for e in ari_rows(ctx) if e["id"] not in seen]
    flags = {p: (m["negotiated"], m["active"]) for e in pushed
             for p, m in e["data"]["rate_plans"].items()}
    assert flags == {plan: (True, False), str(hotel.rate_plan.id): (False, True)}


def test_a_month_of_a_small_year_is_named_in_four_digits(api, hotel):
    """Months are "YYYY-MM" in the answer as in the query, whatever the year (the C library's
    %Y would write year 1 as "1")."""
    resp = api.get(f"/v1/properties/{hotel.id}/ari/digest",
                   params={"from": "0001-01", "to": "0001-02"})
    assert resp.status_code == 200, resp.text
    assert (resp.json["from"], resp.json["to"]) == ("0001-01", "0001-02")
    assert resp.json["data"] == []  # every night of them is before the business date
