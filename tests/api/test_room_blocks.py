"""Room blocks through the HTTP API, on SQLite and PostgreSQL: the grid, the state
machine with dry runs, events and audit, held rooms out of house availability, pick-up, cancel
before and after the cut-off, cut-off, wash, allocation changes and the pick-up receipt."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from pms.db.uow import read_scope
from pms.models.inventory import InventoryDay
from pms.queries.inventory_counts import night_counts
from pms.services.groups import room_block_inventory
from tests.factories import make_hotel
from tests.helpers import EOD_OVERRIDE, assert_problem, audit_actions, outbox_types

START = date(2030, 1, 1)
ARR, DEP = START + timedelta(days=2), START + timedelta(days=5)  # 3 nights


def _d(i: int) -> str:
    return (START + timedelta(days=i)).isoformat()


@pytest.fixture
def hotel(ctx):
    h = make_hotel(ctx, rooms=5)
    h.base = f"/v1/properties/{h.property.id}"
    return h


def _block(api, h, rooms=3, code="WED", **over):
    body = {"code": code, "name": "Smith wedding", "arrival_date": str(ARR),
            "departure_date": str(DEP), "rate_plan_id": str(h.rate_plan.id),
            "allocation": [{"room_type_id": str(h.room_type.id), "date": str(ARR),
                            "to_date": _d(4), "allotted": rooms}]}
    body.update(over)
    resp = api.post(f"{h.base}/blocks", body)
    assert resp.status_code == 201, resp.text
    return resp.json


def _available(api, h, arrival=ARR, departure=DEP):
    resp = api.post(f"{h.base}/availability", {"arrival_date": str(arrival),
                                               "departure_date": str(departure), "adults": 1})
    assert resp.status_code == 200, resp.text
    return resp.json["room_types"][0]["available"]


def _pick(api, h, block_id, arrival=ARR, departure=DEP, **over):
    body = {"room_type_id": str(h.room_type.id), "arrival_date": str(arrival),
            "departure_date": str(departure), "guest": {"last_name": "Guest"}}
    body.update(over)
    return api.post(f"{h.base}/blocks/{block_id}/reservations", body)


def _book(api, h, arrival=ARR, departure=DEP):
    return api.post(f"{h.base}/reservations", {
        "room_type_id": str(h.room_type.id), "rate_plan_id": str(h.rate_plan.id),
        "arrival_date": str(arrival), "departure_date": str(departure),
        "guest": {"last_name": "Walkin"}})


def _stored_held_matches_recount(ctx, h):
    """The stored InventoryDay.held equals the reference recount from the blocks."""
    with read_scope(ctx):
        stored = {r.date: r.held for r in InventoryDay.select().where(
            (InventoryDay.room_type == h.room_type.id) & (InventoryDay.date >= START)
            & (InventoryDay.date < START + timedelta(days=10)))}
        ref = room_block_inventory.held_counts(h.property.id, [h.room_type.id], START,
                                      START + timedelta(days=10))
    for day, held in stored.items():
        assert held == ref.get((h.room_type.id, day), 0), (day, held, dict(ref))


def test_block_lifecycle_holds_rooms_and_records_every_change(api, ctx, hotel):
    h = hotel
    block = _block(api, h)
    assert block["status"] == "INQUIRY" and block["allotted"] == 9 and block["held"] == 0
    assert block["cutoff_date"] == str(ARR)
    assert outbox_types(ctx)[-1] == "hotel:pms:block:created"
    assert audit_actions(ctx)[-1] == "block.created"
    assert _available(api, h) == 5
    # a dry run tells what DEFINITE would hold, and changes nothing
    dry = api.post(f"{h.base}/blocks/{block['id']}/definite", params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    assert dry.json["dry_run"] is True and dry.json["block"]["status"] == "DEFINITE"
    assert [c["held_after"] for c in dry.json["held_changes"]] == [3, 3, 3]
    assert api.get(f"{h.base}/blocks/{block['id']}").json["status"] == "INQUIRY"
    assert _available(api, h) == 5
    assert outbox_types(ctx)[-1] == "hotel:pms:block:created"
    moved = api.post(f"{h.base}/blocks/{block['id']}/definite")
    assert moved.status_code == 200 and moved.json["block"]["held"] == 9
    assert outbox_types(ctx)[-1] == "hotel:pms:block:definite"
    assert audit_actions(ctx)[-1] == "block.definite"
    assert _available(api, h) == 2
    _stored_held_matches_recount(ctx, h)
    # the house sells only what the block does not hold
    assert _book(api, h).status_code == 201
    assert _book(api, h).status_code == 201
    assert_problem(_book(api, h), 409, "room_type_unavailable")
    # release back to TENTATIVE (nothing picked up): the setting is off, nothing held
    released = api.post(f"{h.base}/blocks/{block['id']}/release")
    assert released.status_code == 200 and released.json["block"]["status"] == "TENTATIVE"
    assert released.json["block"]["held"] == 0
    assert _available(api, h) == 3
    # DEFINITE again: only 3 left, 3 allotted: fits; a 4th room would not
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    more = api.put(f"{h.base}/blocks/{block['id']}/allocation", {"allocation": [
        {"room_type_id": str(h.room_type.id), "date": _d(3), "allotted": 4}]})
    problem = assert_problem(more, 409, "room_type_unavailable")
    assert problem["nights"] == [_d(3)]
    # invalid moves are 409 from the transition table
    assert_problem(api.post(f"{h.base}/blocks/{block['id']}/lose"), 409, "invalid_transition")
    _stored_held_matches_recount(ctx, h)


def test_definite_is_refused_naming_the_short_nights(api, ctx, hotel):
    h = hotel
    block = _block(api, h, rooms=4)
    for _ in range(2):  # the middle night keeps only 3 rooms for sale
        assert _book(api, h, ARR + timedelta(days=1), ARR + timedelta(days=2)).status_code == 201
    problem = assert_problem(api.post(f"{h.base}/blocks/{block['id']}/definite"), 409,
                             "room_type_unavailable")
    assert problem["nights"] == [_d(3)]
    dry = api.post(f"{h.base}/blocks/{block['id']}/definite", params={"dry_run": "true"})
    assert_problem(dry, 409, "room_type_unavailable")
    assert api.get(f"{h.base}/blocks/{block['id']}").json["status"] == "INQUIRY"


def test_pick_up_converts_held_rooms_and_never_exceeds_the_allocation(api, ctx, hotel):
    h = hotel
    block = _block(api, h, rooms=2)
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    assert _available(api, h) == 3
    first = _pick(api, h, block["id"])
    assert first.status_code == 201, first.text
    assert first.json["reservation"]["block_id"] == block["id"]
    assert first.json["reservation"]["rate_plan_id"] == str(h.rate_plan.id)
    assert _available(api, h) == 3  # a held room became a sold one
    got = api.get(f"{h.base}/reservations/{first.json['reservation']['id']}")
    assert got.json["block_id"] == block["id"]
    assert _pick(api, h, block["id"]).status_code == 201
    problem = assert_problem(_pick(api, h, block["id"]), 409, "block_allocation_exhausted")
    assert problem["nights"] == [_d(2), _d(3), _d(4)]
    assert_problem(_pick(api, h, block["id"], rate_plan_id=str(h.property.id)), 422)
    assert_problem(_pick(api, h, block["id"], departure=DEP + timedelta(days=1)), 422)
    # the allocation cannot go below the pick-up
    low = api.put(f"{h.base}/blocks/{block['id']}/allocation", {"allocation": [
        {"room_type_id": str(h.room_type.id), "date": str(ARR), "allotted": 1}]})
    assert_problem(low, 409, "allocation_below_pickup")
    receipt = api.get(f"{h.base}/blocks/{block['id']}/pickup").json
    night = receipt["data"][0]
    assert (night["allotted"], night["picked"], night["held"], night["sold"],
            night["held_by_blocks"], night["sellable"]) == (2, 2, 0, 2, 0, 3)
    assert "sold" in night["arithmetic"] and receipt["formula"].startswith("sellable")
    # release with pick-up: refused
    assert_problem(api.post(f"{h.base}/blocks/{block['id']}/release"), 409, "block_has_pickup")
    # dates of a picked-up reservation stay with the block
    res_id = first.json["reservation"]["id"]
    moved = api.put(f"{h.base}/reservations/{res_id}", {"departure_date": _d(4)})
    assert_problem(moved, 409, "block_reservation")
    _stored_held_matches_recount(ctx, h)


def test_cancel_before_cut_off_returns_to_block_after_to_house(api, ctx, hotel):
    h = hotel
    block = _block(api, h, rooms=2)
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    a = _pick(api, h, block["id"]).json["reservation"]["id"]
    b = _pick(api, h, block["id"]).json["reservation"]["id"]
    assert _available(api, h) == 3
    assert api.post(f"{h.base}/reservations/{a}/cancel").status_code == 200
    out = api.get(f"{h.base}/blocks/{block['id']}").json
    assert (out["picked"], out["held"]) == (3, 3)  # the room went back to the block
    assert _available(api, h) == 3
    # cut-off: dry run first, then the real one; the unpicked rooms go to the house
    dry = api.post(f"{h.base}/blocks/{block['id']}/cut-off", params={"dry_run": "true"})
    assert dry.status_code == 200 and dry.json["block"]["held"] == 0
    assert api.get(f"{h.base}/blocks/{block['id']}").json["held"] == 3
    cut = api.post(f"{h.base}/blocks/{block['id']}/cut-off")
    assert cut.status_code == 200 and cut.json["block"]["cut_off_at"] is not None
    assert [n["released"] for n in cut.json["block"]["allocation"]] == [1, 1, 1]
    assert outbox_types(ctx)[-1] == "hotel:pms:block:cut_off"
    assert _available(api, h) == 4
    assert_problem(api.post(f"{h.base}/blocks/{block['id']}/cut-off"), 409, "block_cut_off")
    # after the cut-off a cancelled pick-up goes to the house
    assert api.post(f"{h.base}/reservations/{b}/cancel").status_code == 200
    assert _available(api, h) == 5
    out = api.get(f"{h.base}/blocks/{block['id']}").json
    assert (out["picked"], out["held"]) == (0, 0)
    _stored_held_matches_recount(ctx, h)


def test_wash_by_rooms_and_percent_and_cancel_with_consent(api, ctx, hotel):
    h = hotel
    block = _block(api, h, rooms=4)
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    assert _pick(api, h, block["id"]).status_code == 201
    washed = api.post(f"{h.base}/blocks/{block['id']}/wash", {"rooms": 1})
    assert washed.status_code == 200, washed.text
    assert [n["allotted"] for n in washed.json["block"]["allocation"]] == [3, 3, 3]
    assert [n["washed"] for n in washed.json["block"]["allocation"]] == [1, 1, 1]
    assert _available(api, h) == 2
    washed = api.post(f"{h.base}/blocks/{block['id']}/wash", {"percent": 50})
    assert [n["allotted"] for n in washed.json["block"]["allocation"]] == [2, 2, 2]
    washed = api.post(f"{h.base}/blocks/{block['id']}/wash", {"percent": 100})
    assert [n["allotted"] for n in washed.json["block"]["allocation"]] == [1, 1, 1]  # picked
    assert_problem(api.post(f"{h.base}/blocks/{block['id']}/wash", {}), 422)
    assert outbox_types(ctx)[-1] == "hotel:pms:block:washed"
    assert _available(api, h) == 4
    assert_problem(api.post(f"{h.base}/blocks/{block['id']}/cancel"), 409, "block_has_pickup")
    done = api.post(f"{h.base}/blocks/{block['id']}/cancel", params={"cancel_picked": "true"})
    assert done.status_code == 200 and done.json["block"]["status"] == "CANCELLED"
    assert done.json["block"]["picked"] == 0
    assert _available(api, h) == 5
    assert "hotel:pms:reservation:cancelled" in outbox_types(ctx)
    _stored_held_matches_recount(ctx, h)


def test_tentative_deducts_with_the_property_setting(api, ctx, hotel):
    h = hotel
    plain = _block(api, h, code="PLAIN")
    assert api.post(f"{h.base}/blocks/{plain['id']}/tentative").json["block"]["held"] == 0
    path = "/v1/settings/modules"
    got = api.get(path, params={"property_id": str(h.property.id)})
    assert got.status_code == 200, got.text
    patched = api.request("PATCH", path,
                          json={"blocks": {"tentative_deducts_inventory": True}},
                          params={"property_id": str(h.property.id)},
                          headers={"If-Match": got.headers["etag"]})
    assert patched.status_code == 200, patched.text
    held = _block(api, h, code="HELD", rooms=2)
    moved = api.post(f"{h.base}/blocks/{held['id']}/tentative")
    assert moved.json["block"]["deducts"] is True and moved.json["block"]["held"] == 6
    assert _available(api, h) == 3
    with read_scope(ctx):
        counts = night_counts(h.property.id, [h.room_type.id], ARR, DEP)
    assert {c.held for c in counts.values()} == {2}


def test_bad_input_is_problem_json(api, ctx, hotel):
    h = hotel
    assert_problem(api.post(f"{h.base}/blocks", {"code": "X"}), 422)
    bad = {"code": "BAD", "name": "n", "arrival_date": str(DEP), "departure_date": str(ARR),
           "rate_plan_id": str(h.rate_plan.id)}
    assert_problem(api.post(f"{h.base}/blocks", bad), 422)
    outside = {**bad, "arrival_date": str(ARR), "departure_date": str(DEP), "allocation": [
        {"room_type_id": str(h.room_type.id), "date": str(DEP), "allotted": 1}]}
    assert_problem(api.post(f"{h.base}/blocks", outside), 422)
    _block(api, h, code="DUP")
    assert_problem(api.post(f"{h.base}/blocks", {**outside, "code": "DUP", "allocation": []}),
                   409, "already_exists")
    listed = api.get(f"{h.base}/blocks")
    assert listed.status_code == 200, listed.text
    assert listed.json["data"][0]["code"] == "DUP"
    assert api.get(f"{h.base}/blocks", params={"status": "DEFINITE"}).json["data"] == []


def test_the_night_audit_cuts_off_blocks_whose_date_has_come(api, ctx):
    from pms.services.night_audit.end_of_day import Hooks, run_night_audit
    from pms.services.reservations.reservations import business_date

    probe = make_hotel(ctx, rooms=1)
    today = business_date(probe.property, ctx.now)
    h = make_hotel(ctx, rooms=4, from_date=today)
    h.base = f"/v1/properties/{h.property.id}"
    tomorrow, later = today + timedelta(days=1), today + timedelta(days=3)

    def block(code, cutoff):
        out = api.post(f"{h.base}/blocks", {
            "code": code, "name": code, "arrival_date": str(later),
            "departure_date": str(later + timedelta(days=1)),
            "rate_plan_id": str(h.rate_plan.id), "cutoff_date": str(cutoff),
            "allocation": [{"room_type_id": str(h.room_type.id), "date": str(later),
                            "allotted": 1}]}).json
        assert api.post(f"{h.base}/blocks/{out['id']}/definite").status_code == 200
        return out

    due, not_yet = block("DUE", tomorrow), block("LATER", later)
    assert _available(api, h, later, later + timedelta(days=1)) == 2
    result = run_night_audit(ctx, h.property.id, hooks=Hooks(), override_reason=EOD_OVERRIDE)
    step = {s.name: s for s in result.steps}["block_cut_offs"]
    assert step.count == 1 and step.detail == {"blocks": ["DUE"]}
    assert api.get(f"{h.base}/blocks/{due['id']}").json["cut_off_at"] is not None
    assert api.get(f"{h.base}/blocks/{not_yet['id']}").json["cut_off_at"] is None
    assert _available(api, h, later, later + timedelta(days=1)) == 3
    assert "hotel:pms:block:cut_off" in outbox_types(ctx)


def _rows(h, n, arrival=ARR, departure=DEP):
    return [{"room_type_id": str(h.room_type.id), "arrival_date": str(arrival),
             "departure_date": str(departure), "guest": {"last_name": f"Member{i}"}}
            for i in range(n)]


def _run(api, ctx, resp):
    from pms.services import jobs

    assert resp.status_code == 202, resp.text
    job = resp.json
    assert job["kind"] == "rooming_list" and job["progress"] == {"done": 0, "total": job[
        "progress"]["total"]}
    jobs.run_job(ctx, __import__("uuid").UUID(job["id"]))
    got = api.get(f"/v1/jobs/{job['id']}")
    assert got.json["status"] == "SUCCEEDED", got.text
    assert got.json["progress"]["done"] == got.json["progress"]["total"]
    return api.get(f"/v1/jobs/{job['id']}/result").json["result"]


def test_rooming_list_dry_run_all_or_nothing_and_per_row(api, ctx, hotel):
    h = hotel
    block = _block(api, h, rooms=3)
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    url = f"{h.base}/blocks/{block['id']}/rooming-list"
    rows = _rows(h, 4) + [{"room_type_id": str(h.room_type.id)}]  # one too many, one bad
    dry = api.post(url, {"rows": rows, "dry_run": True})
    assert dry.status_code == 200, dry.text
    assert [r["outcome"] for r in dry.json["rows"]] == ["valid"] * 3 + ["refused"] * 2
    assert dry.json["rows"][3]["code"] == "block_allocation_exhausted"
    assert dry.json["rows"][3]["nights"] == [_d(2), _d(3), _d(4)]
    assert dry.json["rows"][4]["code"] == "validation_failed"
    # all or nothing: one refused row, nothing applied, every row echoed
    result = _run(api, ctx, api.post(url, {"rows": rows}))
    assert result["applied"] is False and result["created"] == 0
    assert [r["outcome"] for r in result["rows"]] == ["not_applied"] * 3 + ["refused"] * 2
    assert api.get(f"{h.base}/blocks/{block['id']}").json["picked"] == 0
    assert "hotel:pms:job:queued" in outbox_types(ctx)
    # per row: what can be applied is
    result = _run(api, ctx, api.post(url, {"rows": rows, "mode": "per_row"}))
    assert [r["outcome"] for r in result["rows"]] == ["created"] * 3 + ["refused"] * 2
    assert result["applied"] is True and result["created"] == 3
    out = api.get(f"{h.base}/blocks/{block['id']}").json
    assert (out["picked"], out["held"]) == (9, 0)
    assert _available(api, h) == 2
    _stored_held_matches_recount(ctx, h)


def test_rooming_list_all_or_nothing_applies_every_row(api, ctx, hotel):
    h = hotel
    block = _block(api, h, rooms=3)
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    result = _run(api, ctx, api.post(f"{h.base}/blocks/{block['id']}/rooming-list",
                                     {"rows": _rows(h, 3)}))
    assert result["applied"] is True and result["created"] == 3
    assert all(r["reservation_id"] for r in result["rows"])
    assert api.get(f"{h.base}/blocks/{block['id']}").json["picked"] == 9


def test_rooming_list_all_or_nothing_rolls_back_a_row_refused_while_applying(api, ctx, hotel):
    """A row that passes the block's checks but is refused by the booking (too many guests
    for the room type): the rows this list already picked up are cancelled, back to the
    block."""
    h = hotel
    block = _block(api, h, rooms=3)
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    rows = _rows(h, 3)
    rows[2]["adults"] = 9
    result = _run(api, ctx, api.post(f"{h.base}/blocks/{block['id']}/rooming-list",
                                     {"rows": rows}))
    assert [r["outcome"] for r in result["rows"]] == ["rolled_back", "rolled_back", "refused"]
    assert result["applied"] is False and result["rows"][2]["code"] == "occupancy_exceeded"
    out = api.get(f"{h.base}/blocks/{block['id']}").json
    assert (out["picked"], out["held"]) == (0, 9)
    assert _available(api, h) == 2
    _stored_held_matches_recount(ctx, h)


def test_a_banquet_event_links_to_a_block_within_its_shoulder_days(api, ctx, hotel):
    h = hotel
    block = _block(api, h)
    space = api.post(f"{h.base}/function-spaces", {"name": "Ballroom",
                                                   "capacities": {"BANQUET": 100}}).json

    def event(day, **over):
        body = {"name": "Dinner", "space_id": space["id"], "setup_style": "BANQUET",
                "start_at": f"{day}T18:00:00+00:00", "end_at": f"{day}T22:00:00+00:00",
                "attendees_forecast": 40, "block_id": block["id"]}
        body.update(over)
        return api.post(f"{h.base}/events", body)

    welcome = event(_d(0))  # two days before arrival: a shoulder day
    assert welcome.status_code == 201, welcome.text
    assert welcome.json["block_id"] == block["id"]
    assert event(_d(7)).status_code == 201  # two days after departure
    problem = assert_problem(event(_d(8)), 422)
    assert [e["field"] for e in problem["errors"]] == ["block_id"]
    unknown = assert_problem(event(_d(3), block_id=str(h.property.id)), 422, "unknown_reference")
    assert [e["field"] for e in unknown["errors"]] == ["block_id"]
    moved = api.put(f"{h.base}/events/{welcome.json['id']}",
                    {"start_at": f"{_d(9)}T18:00:00+00:00", "end_at": f"{_d(9)}T20:00:00+00:00"})
    assert_problem(moved, 422)
    unlinked = api.put(f"{h.base}/events/{welcome.json['id']}", {
        "block_id": None, "start_at": f"{_d(9)}T18:00:00+00:00",
        "end_at": f"{_d(9)}T20:00:00+00:00"})
    assert unlinked.status_code == 200 and unlinked.json["block_id"] is None
