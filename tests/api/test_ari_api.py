"""Issue 35: ARI that heals without full pushes: the digest per room type and month (a consumer
computes the same hashes from what it holds, by the README's canonical form), a re-push of only
the months that differ as a job, and the full 365-day push (both backends)."""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta

import pytest

from pms.services import jobs
from pms.services.distribution.ari_events import ARI_UPDATED
from tests.factories import make_booking_hotel, make_reservation
from tests.helpers import assert_problem
from tests.services.test_ari_events import Projection, ari_rows

pytestmark = pytest.mark.usefixtures("database")


def consumer_hash(projection: Projection, room_type_id: str, month: str) -> str:
    """The README's canonical form, computed from a consumer's own state."""
    first = f"{month}-01"
    year, mon = (int(x) for x in month.split("-"))
    import calendar

    lines = []
    for day in range(1, calendar.monthrange(year, mon)[1] + 1):
        date = f"{month}-{day:02d}"
        key = (room_type_id, date)
        rates = ",".join(f"{p}={a}" for p, a in sorted(projection.rates.get(key, {}).items()))
        line = f"{date}|{projection.sellable.get(key, '?')}|{rates}"
        if projection.allotments.get(key):
            line += "|" + ",".join(f"{p}={n}" for p, n in sorted(projection.allotments[key].items()))
        lines.append(line)
    assert lines[0].startswith(first)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@pytest.fixture
def hotel(ctx):
    return make_booking_hotel(ctx, rooms=2)


def _months(hotel, n=3):
    out, day = [], hotel.today.replace(day=1)
    for _ in range(n):
        out.append(day.strftime("%Y-%m"))
        day = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
    return out


def _digest(api, hotel, first, last):
    resp = api.get(f"/v1/properties/{hotel.id}/ari/digest", params={"from": first, "to": last})
    assert resp.status_code == 200, resp.text
    return {(d["room_type_id"], d["month"]): d["hash"] for d in resp.json["data"]}


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
    months = _months(hotel)
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
    # the first month starts at the business date: a consumer without earlier nights differs
    digests = _digest(api, hotel, months[1], months[2])
    rt = str(hotel.room_type.id)
    for month in months[1:]:
        assert digests[(rt, month)] == consumer_hash(consumer, rt, month)


def test_drift_in_one_month_is_found_by_the_digest_and_healed_by_a_push_of_that_month(
        api, ctx, hotel):
    consumer = Projection()
    consumer.apply(ari_rows(ctx))
    months = _months(hotel)
    rt = str(hotel.room_type.id)
    _push(api, ctx, hotel, {"months": months})  # a first full sync of three months
    consumer.apply(ari_rows(ctx))
    digests = _digest(api, hotel, months[0], months[-1])
    assert all(digests[(rt, m)] == consumer_hash(consumer, rt, m) for m in months)
    # drift: the consumer misses an event of the second month
    day = f"{months[1]}-15"
    consumer.sellable[(rt, day)] += 1
    digests = _digest(api, hotel, months[0], months[-1])
    differ = [m for m in months if digests[(rt, m)] != consumer_hash(consumer, rt, m)]
    assert differ == [months[1]]
    before = {e["id"] for e in ari_rows(ctx)}
    _push(api, ctx, hotel, {"months": differ})
    repushed = [e for e in ari_rows(ctx) if e["id"] not in before]
    assert {n["date"][:7] for e in repushed for n in e["data"]["nights"]} == {months[1]}
    consumer.apply(repushed)
    assert all(digests[(rt, m)] == consumer_hash(consumer, rt, m) for m in months)


def test_digest_defaults_to_the_business_months_twelve(api, hotel):
    resp = api.get(f"/v1/properties/{hotel.id}/ari/digest")
    assert resp.status_code == 200, resp.text
    months = _months(hotel, 12)
    assert (resp.json["from"], resp.json["to"]) == (months[0], months[-1])
    assert [d["month"] for d in resp.json["data"]] == months


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
    """Issue 35: PUT/GET .../rate-plans/{id}/allotments; a booking past it is a 409 naming the
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
