"""A room block's life at its edges, through the HTTP API on SQLite and PostgreSQL: a block
takes its own picked room back whatever the house's capacity became (cancel, bulk cancel, bulk
date move, no-show, early departure), capacity cuts name the blocks they undercut, a block
cancelled with its pick-ups cancels each stay as a guest's cancel does, a resent rooming list,
the states a block with pick-ups cannot reach, and one group's whole life."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pms.db.uow import read_scope
from pms.models.reservations import Reservation
from pms.services.reservations.reservations import business_date
from tests.api.test_room_block_bulk import (
    _block_from,
    _bulk,
    _grid,
    _pick_from,
    _receipt_consistent,
)
from tests.api.test_room_blocks import (
    ARR,
    DEP,
    START,
    _available,
    _block,
    _book,
    _d,
    _pick,
    _rows,
    _run,
    _stored_held_matches_recount,
)
from tests.factories import make_hotel, pay_folio
from tests.helpers import assert_problem


@pytest.fixture
def hotel(ctx):
    h = make_hotel(ctx, rooms=5)
    h.base = f"/v1/properties/{h.property.id}"
    return h


@pytest.fixture
def today_hotel(ctx):
    probe = make_hotel(ctx, rooms=1)
    today = business_date(probe.property, ctx.now)
    h = make_hotel(ctx, rooms=5, from_date=today)
    h.base = f"/v1/properties/{h.property.id}"
    h.today = today
    return h


def _definite(api, h, rooms=3, code="GRP"):
    block = _block(api, h, rooms=rooms, code=code)
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    return block


def _limit(api, h, first, last, limit):
    resp = api.put(f"{h.base}/inventory", {"room_type_id": str(h.room_type.id),
                                           "from_date": str(first), "to_date": str(last),
                                           "sell_limit": limit})
    assert resp.status_code == 200, resp.text
    return resp.json


def _out_of_order(api, h, room_index, first, last):
    resp = api.post(f"{h.base}/maintenance", {
        "room_id": str(h.rooms[room_index].id), "kind": "OUT_OF_ORDER",
        "from_date": str(first), "to_date": str(last), "reason": "pipe"})
    assert resp.status_code == 201, resp.text
    return resp.json


# -- a block takes its own room back ---------------------------------------------------------

def test_a_sell_limit_below_a_block_names_it_and_its_guest_still_cancels(api, ctx, hotel):
    h = hotel
    block = _definite(api, h)
    res = _pick(api, h, block["id"])
    assert res.status_code == 201, res.text
    assert _available(api, h) == 2
    # 1 sold + 2 held on each night; a limit of 1 undercuts the block: kept, the block named
    out = _limit(api, h, ARR, DEP - timedelta(days=1), 1)
    assert out["affected_blocks"] == [{"block_id": block["id"], "code": "GRP",
                                       "name": "Smith wedding", "status": "DEFINITE",
                                       "nights": [_d(2), _d(3), _d(4)]}]
    assert _available(api, h) == 0
    # a limit that leaves room for the block names nobody
    assert _limit(api, h, ARR, ARR, 4)["affected_blocks"] == []
    cancelled = api.post(f"{h.base}/reservations/{res.json['reservation']['id']}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json["status"] == "CANCELLED"
    got = api.get(f"{h.base}/blocks/{block['id']}").json
    assert (got["picked"], got["held"]) == (0, 9)
    assert _available(api, h) == 0
    _stored_held_matches_recount(ctx, h)


def test_out_of_order_rooms_below_a_block_name_it_and_its_guest_still_cancels(api, ctx, hotel):
    h = hotel
    block = _definite(api, h)
    res = _pick(api, h, block["id"]).json["reservation"]
    for room in (4, 3):  # 3 rooms left for 1 sold + 2 held: nobody undercut
        assert _out_of_order(api, h, room, ARR, ARR + timedelta(days=1))["affected_blocks"] == []
    third = _out_of_order(api, h, 2, ARR, ARR + timedelta(days=1))
    assert [(b["block_id"], b["nights"]) for b in third["affected_blocks"]] == [
        (block["id"], [_d(2), _d(3)])]
    assert api.get(f"{h.base}/maintenance/{third['id']}").json["id"] == third["id"]
    cancelled = api.post(f"{h.base}/reservations/{res['id']}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert api.get(f"{h.base}/blocks/{block['id']}").json["held"] == 9
    _stored_held_matches_recount(ctx, h)


def test_bulk_cancel_and_bulk_date_move_give_rooms_back_under_a_cut(api, ctx, hotel):
    h = hotel
    block = _block_from(api, h, START + timedelta(days=2), 4, rooms=2, code="LONG")
    a = _pick_from(api, h, block, _at(2), _at(4), "Mover")
    b = _pick_from(api, h, block, _at(2), _at(4), "Leaver")
    _limit(api, h, _at(2), _at(5), 0)
    _, moved = _bulk(api, ctx, h, block, "bulk-date-change",
                     {"reservation_ids": [a["id"]], "shift_days": 1})
    assert [r["outcome"] for r in moved["rows"]] == ["moved"], moved
    _, gone = _bulk(api, ctx, h, block, "bulk-cancel", {"reservation_ids": [b["id"]]})
    assert [r["outcome"] for r in gone["rows"]] == ["cancelled"], gone
    assert _grid(api, h, block) == [(0, 2, 0), (1, 1, 0), (1, 1, 0), (0, 2, 0)]
    _receipt_consistent(api, ctx, h, block)


def test_a_no_show_and_an_early_departure_give_rooms_back_under_a_cut(api, ctx, today_hotel):
    h = today_hotel
    t = h.today
    block = _block_from(api, h, t, 3, rooms=3, cutoff=t)
    early = _pick_from(api, h, block, t, t + timedelta(days=3), "Early")
    absent = _pick_from(api, h, block, t, t + timedelta(days=3), "Absent")
    _out_of_order(api, h, 4, t, t + timedelta(days=2))
    _out_of_order(api, h, 3, t, t + timedelta(days=2))
    out = _limit(api, h, t, t + timedelta(days=2), 1)
    assert [b["block_id"] for b in out["affected_blocks"]] == [block["id"]]
    url = f"{h.base}/reservations/{early['id']}"
    assert api.post(f"{url}/check-in", {}).status_code == 200
    from pms.services.reservations.reservations import get_reservation

    pay_folio(ctx, get_reservation(ctx, h.property.id, early["id"]), "100.00")
    left = api.post(f"{url}/check-out")
    assert left.status_code == 200, left.text
    gone = api.post(f"{h.base}/reservations/{absent['id']}/no-show")
    assert gone.status_code == 200, gone.text
    assert _grid(api, h, block) == [(1, 2, 0), (0, 3, 0), (0, 3, 0)]
    _receipt_consistent(api, ctx, h, block)


def _at(i):
    return START + timedelta(days=i)


# -- a block cancelled with its pick-ups -------------------------------------------------------

def test_a_block_cancelled_with_its_pick_ups_cancels_each_stay_as_a_guest_would(api, ctx):
    probe = make_hotel(ctx, rooms=1)
    today = business_date(probe.property, ctx.now)
    h = make_hotel(ctx, rooms=4, from_date=today, cancellation_policy={
        "fee_type": "FIXED", "fee_value": "25.00", "deadline_hours": 48})
    h.base = f"/v1/properties/{h.property.id}"
    block = _block_from(api, h, today, 2, rooms=2, cutoff=today)
    res = _pick_from(api, h, block, today, today + timedelta(days=2))
    room = h.rooms[0]
    assigned = api.put(f"{h.base}/reservations/{res['id']}/room", {"room_id": str(room.id)})
    assert assigned.status_code == 200, assigned.text
    out = api.post(f"{h.base}/blocks/{block['id']}/cancel", params={"cancel_picked": "true"})
    assert out.status_code == 200, out.text
    assert out.json["block"]["status"] == "CANCELLED" and out.json["block"]["held"] == 0
    got = api.get(f"{h.base}/reservations/{res['id']}").json
    assert got["status"] == "CANCELLED"
    assert got["cancellation_fee"] == "25.00"
    # the room is free for anyone on those nights
    other = api.post(f"{h.base}/reservations", {
        "room_type_id": str(h.room_type.id), "rate_plan_id": str(h.rate_plan.id),
        "arrival_date": str(today), "departure_date": str(today + timedelta(days=2)),
        "guest": {"last_name": "Next"}})
    assert other.status_code == 201, other.text
    again = api.put(f"{h.base}/reservations/{other.json['id']}/room", {"room_id": str(room.id)})
    assert again.status_code == 200, again.text
    _stored_held_matches_recount(ctx, h)


# -- what a block with pick-ups, and its reservations, cannot do --------------------------------

def test_a_block_with_pick_ups_cannot_be_lost(api, ctx, hotel):
    h = hotel
    block = _block(api, h, rooms=2)
    assert api.post(f"{h.base}/blocks/{block['id']}/tentative").status_code == 200
    assert _pick(api, h, block["id"]).status_code == 201
    assert_problem(api.post(f"{h.base}/blocks/{block['id']}/lose"), 409, "block_has_pickup")
    assert api.get(f"{h.base}/blocks/{block['id']}").json["status"] == "TENTATIVE"
    empty = _block(api, h, rooms=1, code="EMPTY")
    assert api.post(f"{h.base}/blocks/{empty['id']}/tentative").status_code == 200
    assert api.post(f"{h.base}/blocks/{empty['id']}/lose").status_code == 200


def test_a_block_reservation_keeps_the_block_rate_plan(api, ctx, hotel):
    from tests.factories import make_rate_plan, make_rates

    h = hotel
    bar = make_rate_plan(ctx, h.property.id)
    make_rates(ctx, h.property.id, bar.id, h.room_type.id, START, START + timedelta(days=20),
               "150.00")
    block = _definite(api, h)
    res = _pick(api, h, block["id"]).json["reservation"]
    url = f"{h.base}/reservations/{res['id']}"
    assert_problem(api.put(url, {"rate_plan_id": str(bar.id)}), 409, "block_reservation")
    assert api.get(url).json["rate_plan_id"] == str(h.rate_plan.id)
    assert api.put(url, {"notes": "late arrival"}).status_code == 200
    assert api.put(url, {"rate_plan_id": str(h.rate_plan.id)}).status_code == 200


def test_a_pick_up_naming_a_house_confirmation_number_is_refused(api, ctx, hotel):
    h = hotel
    block = _definite(api, h)
    house = api.post(f"{h.base}/reservations", {
        "room_type_id": str(h.room_type.id), "rate_plan_id": str(h.rate_plan.id),
        "arrival_date": str(ARR), "departure_date": str(DEP), "guest": {"last_name": "Chan"},
        "confirmation_number": "CHAN-123"})
    assert house.status_code == 201, house.text
    assert_problem(_pick(api, h, block["id"], confirmation_number="CHAN-123"), 409,
                   "confirmation_number_taken")
    assert api.get(f"{h.base}/blocks/{block['id']}").json["picked"] == 0
    first = _pick(api, h, block["id"], confirmation_number="GRP-1")
    assert first.status_code == 201, first.text
    again = _pick(api, h, block["id"], confirmation_number="GRP-1")
    assert again.status_code == 200, again.text
    assert again.json["reservation"]["id"] == first.json["reservation"]["id"]
    assert api.get(f"{h.base}/blocks/{block['id']}").json["picked"] == 3


# -- a rooming list sent again -------------------------------------------------------------------

def _numbered(h, n, prefix="GRP"):
    rows = _rows(h, n)
    for i, row in enumerate(rows):
        row["confirmation_number"] = f"{prefix}-{i}"
    return rows


def test_a_resent_rooming_list_leaves_the_earlier_lists_reservations_alone(api, ctx, hotel):
    h = hotel
    block = _definite(api, h, rooms=5)
    url = f"{h.base}/blocks/{block['id']}/rooming-list"
    first = _run(api, ctx, api.post(url, {"rows": _numbered(h, 3), "mode": "per_row"}))
    assert [r["outcome"] for r in first["rows"]] == ["created"] * 3
    made = [r["reservation_id"] for r in first["rows"]]
    # the same three rows again, and a fourth refused: all or nothing applies nothing and
    # leaves the three bookings of the first list as they are
    rows = _numbered(h, 3) + [{**_rows(h, 1)[0], "departure_date": str(ARR)}]
    dry = api.post(url, {"rows": rows, "dry_run": True})
    assert [r["outcome"] for r in dry.json["rows"]] == ["existing"] * 3 + ["refused"]
    again = _run(api, ctx, api.post(url, {"rows": rows}))
    assert [r["outcome"] for r in again["rows"]] == ["existing"] * 3 + ["refused"]
    assert [r["reservation_id"] for r in again["rows"][:3]] == made
    assert again["applied"] is False and again["created"] == 0
    for rid in made:
        assert api.get(f"{h.base}/reservations/{rid}").json["status"] == "CONFIRMED"
    # a row refused while applying rolls back only the row this list created
    rows = _numbered(h, 3) + _numbered(h, 2, prefix="NEW")
    rows[4]["adults"] = 9
    third = _run(api, ctx, api.post(url, {"rows": rows}))
    assert [r["outcome"] for r in third["rows"]] == ["existing"] * 3 + ["rolled_back",
                                                                        "refused"]
    for rid in made:
        assert api.get(f"{h.base}/reservations/{rid}").json["status"] == "CONFIRMED"
    out = api.get(f"{h.base}/blocks/{block['id']}").json
    assert (out["picked"], out["held"]) == (9, 6)
    _stored_held_matches_recount(ctx, h)


def test_a_rooming_list_naming_one_number_twice_is_refused_in_the_pre_check(api, ctx, hotel):
    h = hotel
    block = _definite(api, h, rooms=3)
    url = f"{h.base}/blocks/{block['id']}/rooming-list"
    rows = _numbered(h, 2)
    rows[1]["confirmation_number"] = "GRP-0"
    dry = api.post(url, {"rows": rows, "dry_run": True})
    assert [r["outcome"] for r in dry.json["rows"]] == ["valid", "refused"]
    assert dry.json["rows"][1]["code"] == "duplicate_confirmation_number"
    result = _run(api, ctx, api.post(url, {"rows": rows}))
    assert [r["outcome"] for r in result["rows"]] == ["not_applied", "refused"]
    per_row = _run(api, ctx, api.post(url, {"rows": rows, "mode": "per_row"}))
    assert [r["outcome"] for r in per_row["rows"]] == ["created", "refused"]
    assert per_row["created"] == 1
    assert api.get(f"{h.base}/blocks/{block['id']}").json["picked"] == 3


# -- the block's own rules only ---------------------------------------------------------------------

def test_pick_ups_ignore_house_stop_sells_and_the_plans_allotment(api, ctx, hotel):
    h = hotel
    block = _definite(api, h)
    closed = api.put(f"{h.base}/restrictions", {"from_date": str(ARR), "to_date": _d(4),
                                                 "closed": True, "min_los": 4})
    assert closed.status_code == 200, closed.text
    allot = api.put(f"{h.base}/rate-plans/{h.rate_plan.id}/allotments", {
        "room_type_id": str(h.room_type.id), "from_date": str(ARR), "to_date": _d(4),
        "allotment": 0})
    assert allot.status_code == 200, allot.text
    # the house sells nothing on the plan these nights
    assert_problem(_book(api, h), 422, "stay_not_bookable")
    # the block's guests are picked up from the rooms it holds, for any stay inside it
    first = _pick(api, h, block["id"])
    assert first.status_code == 201, first.text
    short = _pick(api, h, block["id"], departure=ARR + timedelta(days=1))
    assert short.status_code == 201, short.text
    # an edit of a block's reservation honours only the block's rules too
    edited = api.put(f"{h.base}/reservations/{short.json['reservation']['id']}",
                    {"adults": 2})
    assert edited.status_code == 200, edited.text
    # with the restrictions lifted, the plan's allotment of 0 still stops the house only
    assert api.put(f"{h.base}/restrictions", {"from_date": str(ARR),
                                              "to_date": _d(4)}).status_code == 200
    assert_problem(_book(api, h), 409, "allotment_exhausted")
    third = _pick(api, h, block["id"])
    assert third.status_code == 201, third.text
    out = api.get(f"{h.base}/blocks/{block['id']}").json
    assert out["picked"] == 7



def test_a_pick_up_counts_against_the_plans_allotment_in_the_api_and_in_ari(api, ctx, hotel):
    """The plan's allotment never refuses a pick-up, but a pick-up is a sale on the plan: the
    nights have one room fewer left, and a channel mirroring ARI sees what the API answers."""
    from tests.services.test_ari_events import Projection, ari_rows

    h = hotel
    block = _definite(api, h)
    base = f"{h.base}/rate-plans/{h.rate_plan.id}/allotments"
    span = {"from_date": str(ARR), "to_date": str(DEP - timedelta(days=1))}
    resp = api.put(base, {"room_type_id": str(h.room_type.id), **span, "allotment": 3})
    assert resp.status_code == 200, resp.text
    picked = _pick(api, h, block["id"])
    assert picked.status_code == 201, picked.text
    left = {n["date"]: n["left"] for n in api.get(base, params=span).json["data"]}
    assert set(left.values()) == {2}, left
    consumer = Projection()
    consumer.apply(ari_rows(ctx))
    plan, rt = str(h.rate_plan.id), str(h.room_type.id)
    assert {night: consumer.allotments[(rt, night)][plan] for night in left} == left


# -- deleting and releasing ------------------------------------------------------------------------

def test_a_block_that_banquet_events_link_to_is_not_deleted(api, ctx, hotel):
    h = hotel
    block = _block(api, h, rooms=1)
    space = api.post(f"{h.base}/function-spaces", {"name": "Salon",
                                                   "capacities": {"BANQUET": 60}})
    assert space.status_code == 201, space.text
    ev = api.post(f"{h.base}/events", {
        "name": "Welcome dinner", "space_id": space.json["id"], "setup_style": "BANQUET",
        "start_at": f"{ARR}T19:00:00+00:00", "end_at": f"{ARR}T22:00:00+00:00",
        "attendees_forecast": 40, "block_id": block["id"]})
    assert ev.status_code == 201, ev.text
    resp = api.delete(f"{h.base}/blocks/{block['id']}")
    assert_problem(resp, 409, "block_has_events")
    assert [e["id"] for e in resp.json["events"]] == [ev.json["id"]]
    assert api.get(f"{h.base}/blocks/{block['id']}").status_code == 200
    unlinked = api.put(f"{h.base}/events/{ev.json['id']}", {"block_id": None})
    assert unlinked.status_code == 200, unlinked.text
    assert api.delete(f"{h.base}/blocks/{block['id']}").status_code == 204


def test_release_keeps_holding_where_tentative_deducts(api, ctx, hotel):
    h = hotel
    path = "/v1/settings/modules"
    got = api.get(path, params={"property_id": str(h.property.id)})
    patched = api.request("PATCH", path, json={"blocks": {"tentative_deducts_inventory": True}},
                          params={"property_id": str(h.property.id)},
                          headers={"If-Match": got.headers["etag"]})
    assert patched.status_code == 200, patched.text
    block = _definite(api, h, rooms=2)
    assert _available(api, h) == 3
    released = api.post(f"{h.base}/blocks/{block['id']}/release")
    assert released.status_code == 200, released.text
    assert released.json["block"]["status"] == "TENTATIVE"
    assert released.json["block"]["deducts"] is True and released.json["block"]["held"] == 6
    assert _available(api, h) == 3
    _stored_held_matches_recount(ctx, h)


# -- a group's whole life ----------------------------------------------------------------------------

def _sold_by_reservations(ctx, h, day):
    """Rooms sold on `day`, counted from the live reservations themselves."""
    with read_scope(ctx):
        return Reservation.select().where(
            (Reservation.room_type == h.room_type.id)
            & Reservation.status.in_(["CONFIRMED", "CHECKED_IN"])
            & (Reservation.arrival_date <= day) & (Reservation.departure_date > day)).count()


def test_a_groups_whole_life_keeps_the_search_equal_to_the_arithmetic(api, ctx):
    h = make_hotel(ctx, rooms=6)
    h.base = f"/v1/properties/{h.property.id}"
    nights = [ARR, ARR + timedelta(days=1)]
    state = {"ooo": {d: 0 for d in nights}, "limit": None}

    def check(block_id):
        grid = {n["date"]: n["held"] for n in api.get(
            f"{h.base}/blocks/{block_id}").json["allocation"]}
        for day in nights:
            cap = 6 - state["ooo"][day]
            if state["limit"] is not None:
                cap = min(cap, state["limit"])
            want = max(cap - _sold_by_reservations(ctx, h, day) - grid[str(day)], 0)
            got = _available(api, h, day, day + timedelta(days=1))
            assert got == want, (day, got, want, grid)

    block = api.post(f"{h.base}/blocks", {
        "code": "CONF", "name": "Conference", "arrival_date": str(ARR),
        "departure_date": str(ARR + timedelta(days=2)), "rate_plan_id": str(h.rate_plan.id),
        "allocation": [{"room_type_id": str(h.room_type.id), "date": str(ARR),
                        "to_date": str(ARR + timedelta(days=1)), "allotted": 4}]}).json
    bid, url = block["id"], f"{h.base}/blocks/{block['id']}"
    check(bid)  # inquiry: holds nothing
    assert api.post(f"{url}/tentative").status_code == 200
    check(bid)
    assert api.post(f"{url}/definite").json["block"]["held"] == 8
    check(bid)
    rows = [{**r, "departure_date": str(ARR + timedelta(days=2))} for r in _numbered(h, 2)]
    listed = _run(api, ctx, api.post(f"{url}/rooming-list", {"rows": rows}))
    assert listed["created"] == 2
    check(bid)
    house = api.post(f"{h.base}/reservations", {
        "room_type_id": str(h.room_type.id), "rate_plan_id": str(h.rate_plan.id),
        "arrival_date": str(ARR), "departure_date": str(ARR + timedelta(days=2)),
        "guest": {"last_name": "Walkin"}})
    assert house.status_code == 201, house.text
    check(bid)
    # revenue cuts the house to 4 rooms: 3 sold + 2 held, the block named
    state["limit"] = 4
    cut = _limit(api, h, ARR, ARR + timedelta(days=1), 4)
    assert [b["code"] for b in cut["affected_blocks"]] == ["CONF"]
    check(bid)
    # a room breaks on the first night
    _out_of_order(api, h, 5, ARR, ARR)
    state["ooo"][ARR] = 1
    check(bid)
    # the coordinator resends the list with one more guest: the first two stay as they are
    resent = _run(api, ctx, api.post(f"{url}/rooming-list", {
        "rows": rows + [{**_numbered(h, 3)[2], "departure_date": str(ARR + timedelta(days=2))}]}))
    assert [r["outcome"] for r in resent["rows"]] == ["existing", "existing", "created"]
    check(bid)
    # a picked-up guest cancels, whatever the cut did to the house
    gone = api.post(f"{h.base}/reservations/{listed['rows'][0]['reservation_id']}/cancel")
    assert gone.status_code == 200, gone.text
    check(bid)
    # the cut-off gives the unpicked rooms to the house
    assert api.post(f"{url}/cut-off").status_code == 200
    check(bid)
    # the group cancels with its pick-ups
    done = api.post(f"{url}/cancel", params={"cancel_picked": "true"})
    assert done.status_code == 200, done.text
    assert done.json["block"]["status"] == "CANCELLED" and done.json["block"]["picked"] == 0
    check(bid)
    _stored_held_matches_recount(ctx, h)


# -- the grid's changes are the block's events -------------------------------------------------------

def test_pick_ups_and_give_backs_are_block_events(api, ctx, hotel):
    from pms.models.platform import OutboxEvent

    def block_events():
        with read_scope(ctx):
            return [(e.type, e.aggregate_version, e.data) for e in OutboxEvent.select().where(
                OutboxEvent.subject == block["id"]).order_by(OutboxEvent.aggregate_version)]

    h = hotel
    block = _definite(api, h)
    version = api.get(f"{h.base}/blocks/{block['id']}").json["version"]
    res = _pick(api, h, block["id"], departure=ARR + timedelta(days=1)).json["reservation"]
    got = api.get(f"{h.base}/blocks/{block['id']}").json
    assert got["version"] == version + 1 and got["picked"] == 1
    kind, v, data = block_events()[-1]
    assert (kind, v) == ("hotel:pms:block:pickup_changed", version + 1)
    assert data["changed"] == [{"room_type_id": str(h.room_type.id), "date": str(ARR)}]
    assert data["picked"] == 1 and data["held"] == 8
    assert api.post(f"{h.base}/reservations/{res['id']}/cancel").status_code == 200
    kind, v, data = block_events()[-1]
    assert (kind, v, data["picked"], data["held"]) == (
        "hotel:pms:block:pickup_changed", version + 2, 0, 9)
    assert api.get(f"{h.base}/blocks/{block['id']}").json["version"] == version + 2
    # a cancel with its pick-ups: the block's own event carries the grid
    _pick(api, h, block["id"])
    before = len(block_events())
    assert api.post(f"{h.base}/blocks/{block['id']}/cancel",
                    params={"cancel_picked": "true"}).status_code == 200
    assert [k for k, _, _ in block_events()[before:]] == ["hotel:pms:block:cancelled"]


def test_a_room_type_outside_the_blocks_grid_is_an_unknown_reference(api, ctx, hotel):
    from tests.factories import make_room_type

    h = hotel
    block = _definite(api, h)
    other = make_room_type(ctx, h.property.id)
    assert_problem(_pick(api, h, block["id"], room_type_id=str(other.id)), 422,
                   "unknown_reference")
    rows = [{**_rows(h, 1)[0], "room_type_id": str(other.id)}]
    dry = api.post(f"{h.base}/blocks/{block['id']}/rooming-list", {"rows": rows,
                                                                    "dry_run": True})
    assert dry.json["rows"][0]["code"] == "unknown_reference"
