"""A group's life end to end through the HTTP API, on SQLite and PostgreSQL: from the inquiry to
a settled master folio, with a sell limit and an out-of-order room in the middle, a date move
that takes its guests along, a resent rooming list, an overpick refused while the house has no
room and allowed once it has, a guest cancelling, guests checking in and out, and the night
audit cutting the block off. After every step the search equals the reference arithmetic
night by night, and the stored held rooms equal their recount from the blocks."""

from __future__ import annotations

from datetime import timedelta

from pms.services.night_audit.end_of_day import Hooks, run_night_audit
from pms.services.reservations.reservations import business_date, get_reservation
from tests.api.test_block_lifecycle import _limit, _out_of_order, _sold_by_reservations
from tests.api.test_room_block_bulk import _receipt_consistent
from tests.api.test_room_blocks import _available, _run, _stored_held_matches_recount
from tests.factories import make_hotel, pay_folio
from tests.helpers import EOD_OVERRIDE, assert_problem, outbox_types

DAY = timedelta(days=1)
ROOMS = 6


def _member(h, i, arrival, departure):
    return {"room_type_id": str(h.room_type.id), "arrival_date": str(arrival),
            "departure_date": str(departure), "confirmation_number": f"LIFE-{i}",
            "guest": {"last_name": f"Member{i}"}}


def test_a_groups_life_from_inquiry_to_a_settled_master_folio(api, ctx):
    probe = make_hotel(ctx, rooms=1)
    t = business_date(probe.property, ctx.now)
    h = make_hotel(ctx, rooms=ROOMS, from_date=t)
    h.base = f"/v1/properties/{h.property.id}"
    state = {"ooo": {}, "limit": {}, "today": t}
    window = [t + i * DAY for i in range(4)]

    def check(block_id):
        """The search equals max(min(physical - OOO, limit) - sold - held, 0) every night not
        past (the search answers from the business date on)."""
        held = {n["date"]: n["held"] for n in api.get(
            f"{h.base}/blocks/{block_id}").json["allocation"]}
        for day in (d for d in window if d >= state["today"]):
            cap = ROOMS - state["ooo"].get(day, 0)
            if state["limit"].get(day) is not None:
                cap = min(cap, state["limit"][day])
            want = max(cap - _sold_by_reservations(ctx, h, day) - held.get(str(day), 0), 0)
            got = _available(api, h, day, day + DAY)
            assert got == want, (day, got, want, held)
        _stored_held_matches_recount(ctx, h)

    # the inquiry: two nights from tomorrow, three rooms a night
    made = api.post(f"{h.base}/blocks", {
        "code": "LIFE", "name": "Annual meeting", "arrival_date": str(t + DAY),
        "departure_date": str(t + 3 * DAY), "rate_plan_id": str(h.rate_plan.id),
        "cutoff_date": str(t + DAY), "market_segment": "CORP", "owner": "sales-anna",
        "allocation": [{"room_type_id": str(h.room_type.id), "date": str(t + DAY),
                        "to_date": str(t + 2 * DAY), "allotted": 3}]})
    assert made.status_code == 201, made.text
    block = made.json
    bid, url = block["id"], f"{h.base}/blocks/{block['id']}"
    assert block["folio_id"] is not None  # the master folio, opened with the block
    check(bid)
    assert api.post(f"{url}/tentative").status_code == 200
    assert api.post(f"{url}/definite").json["block"]["held"] == 6
    check(bid)

    # the coordinator's rooming list: two guests for both nights
    rows = [_member(h, i, t + DAY, t + 3 * DAY) for i in range(2)]
    listed = _run(api, ctx, api.post(f"{url}/rooming-list", {"rows": rows}))
    assert listed["created"] == 2
    check(bid)
    walkin = api.post(f"{h.base}/reservations", {
        "room_type_id": str(h.room_type.id), "rate_plan_id": str(h.rate_plan.id),
        "arrival_date": str(t + DAY), "departure_date": str(t + 3 * DAY),
        "guest": {"last_name": "Walkin"}})
    assert walkin.status_code == 201, walkin.text
    check(bid)

    # revenue caps the house at 3 rooms on the group's nights: the block is named
    cut = _limit(api, h, t + DAY, t + 2 * DAY, 3)
    state["limit"].update({t + DAY: 3, t + 2 * DAY: 3})
    assert [b["code"] for b in cut["affected_blocks"]] == ["LIFE"]
    check(bid)
    # a room breaks on the first night
    _out_of_order(api, h, ROOMS - 1, t + DAY, t + DAY)
    state["ooo"][t + DAY] = 1
    check(bid)

    # the group moves a day earlier, its guests with it
    moved = api.post(f"{url}/dates", {"arrival_date": str(t), "departure_date": str(t + 2 * DAY),
                                      "move_pickups": True})
    assert moved.status_code == 200, moved.text
    assert (moved.json["block"]["arrival_date"], moved.json["block"]["cutoff_date"]) == (
        str(t), str(t))
    for row in listed["rows"]:
        res = api.get(f"{h.base}/reservations/{row['reservation_id']}").json
        assert (res["arrival_date"], res["departure_date"]) == (str(t), str(t + 2 * DAY))
    assert outbox_types(ctx)[-1] == "hotel:pms:block:dates_changed"
    check(bid)

    # the list comes again with one more guest: the first two are left as they are
    rows = [_member(h, i, t, t + 2 * DAY) for i in range(3)]
    resent = _run(api, ctx, api.post(f"{url}/rooming-list", {"rows": rows}))
    assert [r["outcome"] for r in resent["rows"]] == ["existing", "existing", "created"]
    assert api.get(url).json["held"] == 0  # three of three picked on both nights
    check(bid)

    # a fourth guest: past the allocation, so only an overpick, and only where the house has
    # the room (the sell limit leaves none on the second night)
    extra = {"room_type_id": str(h.room_type.id), "arrival_date": str(t),
             "departure_date": str(t + 2 * DAY), "guest": {"last_name": "Extra"}}
    assert_problem(api.post(f"{url}/reservations", extra), 409, "block_allocation_exhausted")
    refused = assert_problem(api.post(f"{url}/overpicks", extra), 409, "room_type_unavailable")
    assert refused["nights"] == [str(t + DAY)]
    _limit(api, h, t + DAY, t + 2 * DAY, None)
    state["limit"].clear()
    over = api.post(f"{url}/overpicks", extra)
    assert over.status_code == 201, over.text
    assert [n["picked"] for n in api.get(url).json["allocation"]] == [4, 4]
    check(bid)

    # a guest cancels: the room goes back to the block (before its cut-off)
    gone = api.post(f"{h.base}/reservations/{resent['rows'][2]['reservation_id']}/cancel")
    assert gone.status_code == 200, gone.text
    assert [n["held"] for n in api.get(url).json["allocation"]] == [0, 0]  # 3 of 3 picked
    check(bid)

    # the guests arrive; the master folio takes the meeting room and cannot be settled yet
    guests = [listed["rows"][0]["reservation_id"], listed["rows"][1]["reservation_id"],
              over.json["reservation"]["id"]]
    for rid in guests:
        arrived = api.post(f"{h.base}/reservations/{rid}/check-in", {})
        assert arrived.status_code == 200, arrived.text
    assert api.post(f"{h.base}/transaction-codes", {
        "code": "MTG", "name": "Meeting room", "category": "other"}).status_code == 201
    folio = f"{h.base}/folios/{block['folio_id']}"
    charged = api.post(f"{folio}/charges", {"transaction_code": "MTG", "amount": "250.00"})
    assert charged.status_code == 201, charged.text
    assert_problem(api.post(f"{url}/master-folio/settle"), 409, "block_in_progress")
    check(bid)

    # two night audits: the first cuts the block off (its cut-off date has passed), the walk-in
    # who never came is a no-show on the second
    for _ in range(2):
        run_night_audit(ctx, h.property.id, hooks=Hooks(), override_reason=EOD_OVERRIDE)
    state["today"] = t + 2 * DAY
    assert api.get(url).json["cut_off_at"] is not None
    assert api.get(f"{h.base}/reservations/{walkin.json['id']}").json["status"] == "NO_SHOW"
    check(bid)

    # the guests leave, each paying their own folio
    for rid in guests:
        bill = api.get(f"{h.base}/reservations/{rid}/folio").json
        pay_folio(ctx, get_reservation(ctx, h.property.id, rid), bill["balance_due"])
        left = api.post(f"{h.base}/reservations/{rid}/check-out")
        assert left.status_code == 200, left.text
    check(bid)

    # the block has ended: its master folio is paid and settled, once
    assert_problem(api.post(f"{url}/master-folio/settle"), 409, "folio_not_closable")
    balance = api.get(folio).json["balance_due"]
    paid = api.post(f"{folio}/payments", {"amount": balance, "method": "CASH"})
    assert paid.status_code in (200, 201), paid.text
    settled = api.post(f"{url}/master-folio/settle")
    assert settled.status_code == 200, settled.text
    assert settled.json["folio_status"] == "CLOSED"
    assert api.get(folio).json["status"] == "CLOSED"
    assert outbox_types(ctx)[-1] == "hotel:pms:block:master_folio_settled"
    assert_problem(api.post(f"{url}/master-folio/settle"), 409, "folio_closed")
    _receipt_consistent(api, ctx, h, block)
    check(bid)
