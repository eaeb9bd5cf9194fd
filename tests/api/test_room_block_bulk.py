"""Room blocks, bulk changes, on SQLite and PostgreSQL: the block's counts when a
picked-up stay ends early or is a no-show, the rooming list's per-row idempotency (a job run
twice, or resumed after it died mid-way), and the bulk cancel and date change jobs."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from pms.db.uow import read_scope
from pms.models.reservations import Reservation
from pms.services.reservations.reservations import business_date
from tests.api.test_room_blocks import _stored_held_matches_recount
from tests.factories import make_hotel, pay_folio
from tests.helpers import assert_problem, audit_actions, outbox_types


@pytest.fixture
def today_hotel(ctx):
    probe = make_hotel(ctx, rooms=1)
    today = business_date(probe.property, ctx.now)
    h = make_hotel(ctx, rooms=4, from_date=today)
    h.base = f"/v1/properties/{h.property.id}"
    h.today = today
    return h


def _block_from(api, h, arrival, nights, rooms, code="GRP", cutoff=None):
    body = {"code": code, "name": code, "arrival_date": str(arrival),
            "departure_date": str(arrival + timedelta(days=nights)),
            "rate_plan_id": str(h.rate_plan.id),
            "allocation": [{"room_type_id": str(h.room_type.id), "date": str(arrival),
                            "to_date": str(arrival + timedelta(days=nights - 1)),
                            "allotted": rooms}]}
    if cutoff is not None:
        body["cutoff_date"] = str(cutoff)
    out = api.post(f"{h.base}/blocks", body)
    assert out.status_code == 201, out.text
    assert api.post(f"{h.base}/blocks/{out.json['id']}/definite").status_code == 200
    return out.json


def _pick_from(api, h, block, arrival, departure, name="Guest"):
    resp = api.post(f"{h.base}/blocks/{block['id']}/reservations", {
        "room_type_id": str(h.room_type.id), "arrival_date": str(arrival),
        "departure_date": str(departure), "guest": {"last_name": name}})
    assert resp.status_code == 201, resp.text
    return resp.json["reservation"]


def _grid(api, h, block):
    out = api.get(f"{h.base}/blocks/{block['id']}").json
    return [(n["picked"], n["held"], n["released"]) for n in out["allocation"]]


def _receipt_consistent(api, ctx, h, block):
    """The receipt's picked rooms are the nights of the block's stays not given up, and the stored held
    rooms equal the recount from the blocks."""
    receipt = api.get(f"{h.base}/blocks/{block['id']}/pickup").json
    with read_scope(ctx):
        live = list(Reservation.select().where(
            (Reservation.block_id == uuid.UUID(block["id"]))
            & Reservation.status.in_(["CONFIRMED", "CHECKED_IN", "CHECKED_OUT"])).order_by(Reservation.id))
    for night in receipt["data"]:
        day = night["date"]
        stays = sum(1 for r in live if str(r.arrival_date) <= day < str(r.departure_date))
        assert night["picked"] == stays, (day, night, [(r.arrival_date, r.departure_date)
                                                       for r in live])
    _stored_held_matches_recount(ctx, h)
    return receipt


def test_early_departure_and_no_show_give_nights_back_by_the_cancel_rule(api, ctx, today_hotel):
    h = today_hotel
    t = h.today
    block = _block_from(api, h, t, 3, rooms=3, cutoff=t)
    a = _pick_from(api, h, block, t, t + timedelta(days=3), "Early")
    b = _pick_from(api, h, block, t, t + timedelta(days=3), "Absent")
    assert _grid(api, h, block) == [(2, 1, 0)] * 3
    # an early departure before the cut-off: the unused nights go back to the block
    url = f"{h.base}/reservations/{a['id']}"
    assert api.post(f"{url}/check-in", {}).status_code == 200
    from pms.services.reservations.reservations import get_reservation

    pay_folio(ctx, get_reservation(ctx, h.property.id, a["id"]), "100.00")
    out = api.post(f"{url}/check-out")
    assert out.status_code == 200, out.text
    assert out.json["departure_date"] == str(t + timedelta(days=1))
    assert _grid(api, h, block) == [(2, 1, 0), (1, 2, 0), (1, 2, 0)]
    _receipt_consistent(api, ctx, h, block)
    # after the cut-off a no-show's nights go to the house, not the block
    cut = api.post(f"{h.base}/blocks/{block['id']}/cut-off")
    assert cut.status_code == 200, cut.text
    assert _grid(api, h, block) == [(2, 0, 1), (1, 0, 2), (1, 0, 2)]
    sold_before = _sold(ctx, h, t)
    resp = api.post(f"{h.base}/reservations/{b['id']}/no-show")
    assert resp.status_code == 200, resp.text
    assert _grid(api, h, block) == [(1, 0, 1), (0, 0, 2), (0, 0, 2)]
    assert _sold(ctx, h, t) == [n - 1 for n in sold_before]
    receipt = _receipt_consistent(api, ctx, h, block)
    assert all(n["held_by_blocks"] == 0 for n in receipt["data"])
    assert audit_actions(ctx)[-1] == "reservation.no_show"


def test_a_no_show_before_the_cut_off_returns_its_nights_to_the_block(api, ctx, today_hotel):
    h = today_hotel
    t = h.today
    block = _block_from(api, h, t, 2, rooms=2, cutoff=t)
    b = _pick_from(api, h, block, t, t + timedelta(days=2))
    assert _grid(api, h, block) == [(1, 1, 0)] * 2
    assert api.post(f"{h.base}/reservations/{b['id']}/no-show").status_code == 200
    assert _grid(api, h, block) == [(0, 2, 0)] * 2
    _receipt_consistent(api, ctx, h, block)


def _sold(ctx, h, start, days=3):
    from pms.models.inventory import InventoryDay

    with read_scope(ctx):
        rows = {r.date: r.sold for r in InventoryDay.select().where(
            (InventoryDay.room_type == h.room_type.id) & (InventoryDay.date >= start)
            & (InventoryDay.date < start + timedelta(days=days)))}
    return [rows.get(start + timedelta(days=i), 0) for i in range(days)]


# -- the rooming list's per-row idempotency ---------------------------------------------------

@pytest.fixture
def hotel(ctx):
    h = make_hotel(ctx, rooms=6)
    h.base = f"/v1/properties/{h.property.id}"
    return h


def _queue_rooming(api, h, block, n, **extra):
    from tests.api.test_room_blocks import _rows

    resp = api.post(f"{h.base}/blocks/{block['id']}/rooming-list", {"rows": _rows(h, n), **extra})
    assert resp.status_code == 202, resp.text
    return uuid.UUID(resp.json["id"])


def _block_reservations(ctx, block):
    with read_scope(ctx):
        return list(Reservation.select().where(Reservation.block_id == uuid.UUID(block["id"]))
                    .order_by(Reservation.confirmation_number))


def test_a_rooming_list_delivered_twice_creates_each_row_once(api, ctx, hotel):
    from pms.models.platform import Job
    from pms.services import jobs
    from pms.services.groups import rooming_lists
    from tests.api.test_room_blocks import _block

    h = hotel
    block = _block(api, h, rooms=4)
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    job_id = _queue_rooming(api, h, block, 4)
    jobs.run_job(ctx, job_id)
    first = [r.id for r in _block_reservations(ctx, block)]
    assert len(first) == 4
    # the job's message delivered again (its work run again on the same job)
    with read_scope(ctx):
        job = Job.get_by_id(job_id)
    again = rooming_lists.run_rooming_list(ctx, job)
    assert [r.id for r in _block_reservations(ctx, block)] == first
    assert [r["outcome"] for r in again["rows"]] == ["created"] * 4
    assert sorted(r["reservation_id"] for r in again["rows"]) == sorted(str(i) for i in first)
    out = api.get(f"{h.base}/blocks/{block['id']}").json
    assert (out["picked"], out["held"]) == (12, 0)
    _stored_held_matches_recount(ctx, h)


class _Died(BaseException):
    """The runner's process dying mid-way (nothing after it runs, the job stays RUNNING)."""


def test_a_rooming_list_resumed_after_its_runner_died_mid_way(api, ctx, hotel, monkeypatch):
    from pms.models.platform import Job
    from pms.services import jobs
    from pms.services.groups import rooming_lists
    from tests.api.test_room_blocks import _block

    monkeypatch.setattr(rooming_lists, "ROOMING_BATCH", 2)
    h = hotel
    block = _block(api, h, rooms=5)
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    job_id = _queue_rooming(api, h, block, 5)
    # the first delivery takes the job and dies after its first batch of two rows
    assert jobs._take(ctx, job_id, resume=False)

    def die(done, total):
        raise _Died

    with read_scope(ctx):
        job = Job.get_by_id(job_id)
    with pytest.raises(_Died):
        rooming_lists.run_rooming_list(ctx, job, progress=die)
    assert len(_block_reservations(ctx, block)) == 2
    assert api.get(f"/v1/jobs/{job_id}").json["status"] == "RUNNING"
    # the broker redelivers: the job resumes and books only the rows not booked yet
    jobs.run_job(ctx, job_id, resume=True)
    got = api.get(f"/v1/jobs/{job_id}")
    assert got.json["status"] == "SUCCEEDED", got.text
    made = _block_reservations(ctx, block)
    assert len(made) == 5 and len({r.guest_last_name for r in made}) == 5
    result = api.get(f"/v1/jobs/{job_id}/result").json["result"]
    assert [r["outcome"] for r in result["rows"]] == ["created"] * 5
    assert {r["reservation_id"] for r in result["rows"]} == {str(r.id) for r in made}
    out = api.get(f"{h.base}/blocks/{block['id']}").json
    assert (out["picked"], out["held"]) == (15, 0)
    assert outbox_types(ctx).count("hotel:pms:reservation:created") == 5
    _stored_held_matches_recount(ctx, h)


# -- bulk cancel and date change ----------------------------------------------------------------

def _bulk(api, ctx, h, block, action, body):
    """Queue a bulk job, run it as the worker does; its result (progress at its end)."""
    from pms.services import jobs

    resp = api.post(f"{h.base}/blocks/{block['id']}/reservations/{action}", body)
    assert resp.status_code == 202, resp.text
    assert resp.json["kind"] == {"bulk-cancel": "block_bulk_cancel",
                                 "bulk-date-change": "block_bulk_date_change"}[action]
    assert resp.json["progress"]["done"] == 0
    job_id = uuid.UUID(resp.json["id"])
    jobs.run_job(ctx, job_id)
    got = api.get(f"/v1/jobs/{job_id}")
    assert got.json["status"] == "SUCCEEDED", got.text
    assert got.json["progress"]["done"] == got.json["progress"]["total"]
    return job_id, api.get(f"/v1/jobs/{job_id}/result").json["result"]


def _long_block(api, h, rooms=2, nights=5):
    from tests.api.test_room_blocks import START

    return _block_from(api, h, START + timedelta(days=2), nights, rooms, code="LONG")


def _at(i):
    from tests.api.test_room_blocks import START

    return START + timedelta(days=i)


def test_bulk_cancel_dry_run_all_or_nothing_per_row_and_the_cut_off_rule(api, ctx, hotel):
    h = hotel
    block = _long_block(api, h, rooms=3, nights=2)
    a, b, c = (_pick_from(api, h, block, _at(2), _at(4), f"G{i}") for i in range(3))
    assert _grid(api, h, block) == [(3, 0, 0)] * 2
    stranger = str(uuid.uuid4())
    body = {"reservation_ids": [a["id"], b["id"], stranger]}
    dry = api.post(f"{h.base}/blocks/{block['id']}/reservations/bulk-cancel",
                   {**body, "dry_run": True})
    assert dry.status_code == 200, dry.text
    assert [r["outcome"] for r in dry.json["rows"]] == ["valid", "valid", "refused"]
    assert dry.json["rows"][2]["code"] == "not_found"
    # all or nothing: nothing cancelled, every row echoed
    _, result = _bulk(api, ctx, h, block, "bulk-cancel", body)
    assert [r["outcome"] for r in result["rows"]] == ["not_applied", "not_applied", "refused"]
    assert result["applied"] is False and _grid(api, h, block) == [(3, 0, 0)] * 2
    # per row: before the cut-off the rooms go back to the block
    events = outbox_types(ctx).count("hotel:pms:reservation:cancelled")
    job_id, result = _bulk(api, ctx, h, block, "bulk-cancel", {**body, "mode": "per_row"})
    assert [r["outcome"] for r in result["rows"]] == ["cancelled", "cancelled", "refused"]
    assert result["changed"] == 2 and result["rows"][0]["reservation_id"] == a["id"]
    assert _grid(api, h, block) == [(1, 2, 0)] * 2
    assert outbox_types(ctx).count("hotel:pms:reservation:cancelled") == events + 2
    assert audit_actions(ctx).count("reservation.cancelled") == 2
    _stored_held_matches_recount(ctx, h)
    # the job delivered again changes nothing more
    from pms.models.platform import Job
    from pms.services.groups import block_bulk

    with read_scope(ctx):
        job = Job.get_by_id(job_id)
    again = block_bulk.run_bulk(ctx, job)
    assert [r["outcome"] for r in again["rows"]] == ["cancelled", "cancelled", "refused"]
    assert outbox_types(ctx).count("hotel:pms:reservation:cancelled") == events + 2
    # after the cut-off (every CONFIRMED one, ids left out) the room goes to the house
    assert api.post(f"{h.base}/blocks/{block['id']}/cut-off").status_code == 200
    _, result = _bulk(api, ctx, h, block, "bulk-cancel", {})
    assert [(r["outcome"], r["reservation_id"]) for r in result["rows"]] == [
        ("cancelled", c["id"])]
    assert _grid(api, h, block) == [(0, 0, 2)] * 2
    assert _sold(ctx, h, _at(2), 2) == [0, 0]
    _stored_held_matches_recount(ctx, h)


def test_bulk_date_change_shifts_re_checks_the_allocation_and_echoes_each_row(
        api, ctx, hotel):
    h = hotel
    block = _long_block(api, h, rooms=2, nights=5)  # nights 2..6
    a = _pick_from(api, h, block, _at(2), _at(4), "A")
    b = _pick_from(api, h, block, _at(2), _at(4), "B")
    c = _pick_from(api, h, block, _at(5), _at(7), "C")
    assert _grid(api, h, block) == [(2, 0, 0), (2, 0, 0), (0, 2, 0), (1, 1, 0), (1, 1, 0)]
    body = {"reservation_ids": [a["id"], b["id"]], "shift_days": 2}
    dry = api.post(f"{h.base}/blocks/{block['id']}/reservations/bulk-date-change",
                   {**body, "dry_run": True})
    assert dry.status_code == 200, dry.text
    assert [r["outcome"] for r in dry.json["rows"]] == ["valid", "refused"]
    assert dry.json["rows"][0]["arrival_date"] == str(_at(4))
    assert dry.json["rows"][1]["code"] == "block_allocation_exhausted"
    assert dry.json["rows"][1]["nights"] == [str(_at(5))]
    _, result = _bulk(api, ctx, h, block, "bulk-date-change", body)
    assert [r["outcome"] for r in result["rows"]] == ["not_applied", "refused"]
    assert _grid(api, h, block)[0] == (2, 0, 0)
    # by one day, every row fits: moved, re-priced, each with its event
    events = outbox_types(ctx).count("hotel:pms:reservation:updated")
    _, result = _bulk(api, ctx, h, block, "bulk-date-change",
                      {"reservation_ids": [a["id"], b["id"]], "shift_days": 1})
    assert [r["outcome"] for r in result["rows"]] == ["moved", "moved"], result
    assert result["rows"][1]["departure_date"] == str(_at(5)) and result["applied"] is True
    assert _grid(api, h, block) == [(0, 2, 0), (2, 0, 0), (2, 0, 0), (1, 1, 0), (1, 1, 0)]
    assert outbox_types(ctx).count("hotel:pms:reservation:updated") == events + 2
    moved = api.get(f"{h.base}/reservations/{a['id']}").json
    assert (moved["arrival_date"], moved["departure_date"]) == (str(_at(3)), str(_at(5)))
    _stored_held_matches_recount(ctx, h)
    _receipt_consistent(api, ctx, h, block)
    # to dates outside the block, and bad bodies
    _, result = _bulk(api, ctx, h, block, "bulk-date-change",
                      {"reservation_ids": [c["id"]], "arrival_date": str(_at(6)),
                       "departure_date": str(_at(8))})
    assert result["rows"][0]["code"] == "validation_failed"
    url = f"{h.base}/blocks/{block['id']}/reservations/bulk-date-change"
    assert_problem(api.post(url, {"shift_days": 1, "arrival_date": str(_at(3))}), 422)
    assert_problem(api.post(url, {}), 422)
    assert_problem(api.post(url, {"shift_days": 1, "reservation_ids": []}), 422)
    assert_problem(api.post(url, {"shift_days": 1, "mode": "some"}), 422)


def test_bulk_date_change_all_or_nothing_moves_back_on_a_row_refused_while_applying(
        api, ctx, hotel):
    """After the cut-off a move sells from the house: the second row finds the house full on
    its new night (the dry run cannot know) and the first row is moved back."""
    from tests.api.test_room_blocks import _book

    h = hotel  # 6 rooms
    block = _long_block(api, h, rooms=2, nights=3)  # nights 2..4
    a = _pick_from(api, h, block, _at(2), _at(4), "A")
    b = _pick_from(api, h, block, _at(2), _at(4), "B")
    assert api.post(f"{h.base}/blocks/{block['id']}/cut-off").status_code == 200
    for _ in range(5):  # night 4: one room left in the house
        assert _book(api, h, _at(4), _at(5)).status_code == 201
    _, result = _bulk(api, ctx, h, block, "bulk-date-change",
                      {"reservation_ids": [a["id"], b["id"]], "shift_days": 1})
    assert [r["outcome"] for r in result["rows"]] == ["rolled_back", "refused"], result
    assert result["rows"][1]["code"] == "room_type_unavailable"
    assert result["applied"] is False
    for res in (a, b):
        got = api.get(f"{h.base}/reservations/{res['id']}").json
        assert (got["arrival_date"], got["departure_date"]) == (str(_at(2)), str(_at(4)))
    assert _sold(ctx, h, _at(2), 3) == [2, 2, 5]
    _receipt_consistent(api, ctx, h, block)
