"""Room blocks, the rest of issue 33, on SQLite and PostgreSQL: the block's counts when a
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
