"""A group's life end to end through the HTTP API, on SQLite and PostgreSQL: from the inquiry to
a settled master folio, with a sell limit and an out-of-order room in the middle, a date move
that takes its guests along, a resent rooming list, an overpick refused while the house has no
room and allowed once it has, a guest cancelling, guests checking in and out, and the night
audit cutting the block off. After every step the search equals the reference arithmetic
night by night, and the stored held rooms equal their recount from the blocks. Then the
block's billing instruction: members' room and tax on the master folio (the guests pay only
their minibar), against the control where each guest pays their room, and a routing changed
while the guests are in house."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from pms.db.uow import read_scope
from pms.models import Folio
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
    # every event the life wrote carries the aggregate as it is after its change
    assert_event_data_is_after_the_change(ctx)


def assert_event_data_is_after_the_change(ctx):
    """CONTRACT §4: an event's `data` is the aggregate as the API returns it after the change,
    so where it carries a version, that is the event's own aggregate version."""
    from pms.models import OutboxEvent

    with read_scope(ctx):
        rows = [(e.type, e.aggregate_version, e.data) for e in OutboxEvent.select()]
    versioned = [(t, v, d["version"]) for t, v, d in rows
                 if isinstance(d, dict) and isinstance(d.get("version"), int)]
    assert {t.split(":")[2] for t, _, _ in versioned} >= {"block", "reservation"}
    assert [row for row in versioned if row[1] != row[2]] == []


def _routed_to(ctx, folio_id):
    with read_scope(ctx):
        return Folio.select().where(Folio.routing_folio_id == folio_id).count()


def _lines(api, folio_url):
    return [c for c in api.get(folio_url).json["charges"] if not c.get("projected")]


@pytest.mark.parametrize("routing", ["ROOM_AND_TAX", "NONE"])
def test_a_members_room_and_tax_go_to_the_master_folio_and_the_guest_pays_the_minibar(
        api, ctx, routing):
    """The block's routing sends every room night of its members (the room line and its tax)
    to the master folio: posted by the night audit, and by a check-out for a night the audit
    has not closed; each guest leaves paying only the minibar. The control (NONE): the guests
    pay their rooms, the master folio holds nothing."""
    probe = make_hotel(ctx, rooms=1)
    t = business_date(probe.property, ctx.now)
    h = make_hotel(ctx, rooms=3, from_date=t)
    base = f"/v1/properties/{h.property.id}"
    for code in ({"code": "ROOM", "name": "Room", "category": "room", "tax_rules": [
                     {"code": "VAT", "kind": "percentage", "rate": "10", "inclusive": True,
                      "name": "VAT"}]},
                 {"code": "MINI", "name": "Minibar", "category": "mini bar", "tax_rules": [
                     {"code": "VAT", "kind": "percentage", "rate": "19", "inclusive": False,
                      "name": "VAT"}]}):
        assert api.post(f"{base}/transaction-codes", code).status_code == 201
    made = api.post(f"{base}/blocks", {
        "code": "ROUTE", "name": "Board meeting", "arrival_date": str(t),
        "departure_date": str(t + 2 * DAY), "rate_plan_id": str(h.rate_plan.id),
        "master_folio_routing": routing,
        "allocation": [{"room_type_id": str(h.room_type.id), "date": str(t),
                        "to_date": str(t + DAY), "allotted": 2}]})
    assert made.status_code == 201, made.text
    assert made.json["master_folio_routing"] == routing
    url, master = f"{base}/blocks/{made.json['id']}", f"{base}/folios/{made.json['folio_id']}"
    assert api.post(f"{url}/definite").status_code == 200
    guests = []
    for i in range(2):
        picked = api.post(f"{url}/reservations", _member(h, i, t, t + 2 * DAY))
        assert picked.status_code == 201, picked.text
        rid = picked.json["reservation"]["id"]
        assert api.post(f"{base}/reservations/{rid}/check-in", {}).status_code == 200
        bill = api.get(f"{base}/reservations/{rid}/folio").json
        mini = api.post(f"{base}/folios/{bill['id']}/charges",
                        {"transaction_code": "MINI", "amount": "10.00"})
        assert mini.status_code == 201, mini.text
        guests.append((rid, bill["id"]))
    room_night = {"ROOM_AND_TAX": Decimal("0"), "NONE": Decimal("100.00")}[routing]

    def leave(rid, folio_id, nights):
        """The guest's bill is the minibar (10.00 + 19 % VAT) and, unrouted, the room nights;
        paying it lets them check out."""
        bill = api.get(f"{base}/reservations/{rid}/folio").json
        assert Decimal(bill["balance_due"]) == Decimal("11.90") + nights * room_night, bill
        paid = api.post(f"{base}/folios/{folio_id}/payments",
                         {"amount": bill["balance_due"], "method": "CASH"})
        assert paid.status_code in (200, 201), paid.text
        left = api.post(f"{base}/reservations/{rid}/check-out")
        assert left.status_code == 200, left.text

    # the second guest leaves on the first day: the check-out posts that night itself
    leave(*guests[1], nights=1)
    # two night audits post the first guest's nights; then they leave
    for _ in range(2):
        run_night_audit(ctx, h.property.id, hooks=Hooks(), override_reason=EOD_OVERRIDE)
    leave(*guests[0], nights=2)

    lines = _lines(api, master)
    if routing == "NONE":
        assert lines == []
        for _rid, folio_id in guests:
            kinds = sorted(c["kind"] for c in _lines(api, f"{base}/folios/{folio_id}"))
            assert "room" in kinds and "tax" in kinds
    else:
        rooms = sorted((c["description"], c["amount"]) for c in lines if c["kind"] == "room")
        numbers = {}
        for rid, _ in guests:
            res = api.get(f"{base}/reservations/{rid}").json
            numbers[res["confirmation_number"]] = res.get("room_number") or res["room"]
        assert len(rooms) == 3 and {a for _, a in rooms} == {"90.91"}
        assert [c for c in lines if c["kind"] == "tax"] and all(
            c["amount"] == "9.09" for c in lines if c["kind"] == "tax")
        for description, _ in rooms:  # each line names its stay and its room
            assert any(n in description and f"room {r}" in description
                       for n, r in numbers.items()), description
        assert Decimal(api.get(master).json["balance_due"]) == Decimal("300.00")
        for _rid, folio_id in guests:  # the guest folio holds the minibar and its payment only
            kinds = sorted(c["kind"] for c in _lines(api, f"{base}/folios/{folio_id}"))
            assert "room" not in kinds and kinds.count("tax") == 1, kinds
        paid = api.post(f"{master}/payments", {"amount": "300.00", "method": "CASH"})
        assert paid.status_code in (200, 201), paid.text
    assert _routed_to(ctx, made.json["folio_id"]) == (2 if routing != "NONE" else 0)
    settled = api.post(f"{url}/master-folio/settle")
    assert settled.status_code == 200, settled.text
    # settled: no folio routes to it any more (a stay reopened later pays its own)
    assert _routed_to(ctx, made.json["folio_id"]) == 0


def test_changing_a_blocks_routing_moves_the_next_room_nights_of_its_guests_in_house(api, ctx):
    """The routing set on a block whose guests are in house applies to their next room nights:
    ROOM_AND_TAX sends the next night to the master folio, NONE back to the guest. A cancelled
    block's routing is not edited (409), an unknown routing is 422."""
    probe = make_hotel(ctx, rooms=1)
    t = business_date(probe.property, ctx.now)
    h = make_hotel(ctx, rooms=2, from_date=t)
    base = f"/v1/properties/{h.property.id}"
    made = api.post(f"{base}/blocks", {
        "code": "SWITCH", "name": "Retreat", "arrival_date": str(t),
        "departure_date": str(t + 3 * DAY), "rate_plan_id": str(h.rate_plan.id),
        "allocation": [{"room_type_id": str(h.room_type.id), "date": str(t),
                        "to_date": str(t + 2 * DAY), "allotted": 1}]})
    assert made.status_code == 201, made.text
    assert made.json["master_folio_routing"] == "NONE"
    url, master = f"{base}/blocks/{made.json['id']}", f"{base}/folios/{made.json['folio_id']}"
    assert api.post(f"{url}/definite").status_code == 200
    picked = api.post(f"{url}/reservations", _member(h, 0, t, t + 3 * DAY))
    rid = picked.json["reservation"]["id"]
    assert api.post(f"{base}/reservations/{rid}/check-in", {}).status_code == 200
    guest = f"{base}/folios/{api.get(f'{base}/reservations/{rid}/folio').json['id']}"

    def audit_night(night):
        run_night_audit(ctx, h.property.id, hooks=Hooks(), override_reason=EOD_OVERRIDE)
        return ([c["night"] for c in _lines(api, guest) if c["kind"] == "room"],
                [c["night"] for c in _lines(api, master) if c["kind"] == "room"])

    assert audit_night(t) == ([str(t)], [])
    changed = api.request("PATCH", url, json={"master_folio_routing": "ROOM_AND_TAX"})
    assert changed.status_code == 200, changed.text
    assert changed.json["master_folio_routing"] == "ROOM_AND_TAX"
    assert audit_night(t + DAY) == ([str(t)], [str(t + DAY)])
    assert api.request("PATCH", url, json={"master_folio_routing": "NONE"}).status_code == 200
    assert audit_night(t + 2 * DAY) == ([str(t), str(t + 2 * DAY)], [str(t + DAY)])
    assert_problem(api.request("PATCH", url, json={"master_folio_routing": "EVERYTHING"}), 422)
    other = api.post(f"{base}/blocks", {
        "code": "GONE", "name": "Cancelled", "arrival_date": str(t + DAY),
        "departure_date": str(t + 2 * DAY), "rate_plan_id": str(h.rate_plan.id)}).json
    assert api.post(f"{base}/blocks/{other['id']}/cancel").status_code == 200
    assert_problem(api.request("PATCH", f"{base}/blocks/{other['id']}",
                               json={"master_folio_routing": "ROOM_AND_TAX"}), 409,
                   "invalid_transition")


def test_nothing_routes_to_a_settled_master_folio(api, ctx):
    """A block settled before a guest arrives: the guest's folio opens unrouted, a routing set
    afterwards routes nothing, and the night audit posts the room night to the guest."""
    probe = make_hotel(ctx, rooms=1)
    t = business_date(probe.property, ctx.now)
    h = make_hotel(ctx, rooms=2, from_date=t)
    base = f"/v1/properties/{h.property.id}"
    made = api.post(f"{base}/blocks", {
        "code": "LATE", "name": "Late group", "arrival_date": str(t),
        "departure_date": str(t + 2 * DAY), "rate_plan_id": str(h.rate_plan.id),
        "master_folio_routing": "ROOM_AND_TAX",
        "allocation": [{"room_type_id": str(h.room_type.id), "date": str(t),
                        "to_date": str(t + DAY), "allotted": 1}]}).json
    url, master = f"{base}/blocks/{made['id']}", f"{base}/folios/{made['folio_id']}"
    assert api.post(f"{url}/definite").status_code == 200
    assert api.post(f"{url}/master-folio/settle").status_code == 200  # nothing to pay yet
    rid = api.post(f"{url}/reservations", _member(h, 0, t, t + 2 * DAY)).json["reservation"]["id"]
    assert api.post(f"{base}/reservations/{rid}/check-in", {}).status_code == 200
    assert _routed_to(ctx, made["folio_id"]) == 0
    again = api.request("PATCH", url, json={"master_folio_routing": "ROOM_TAX_AND_PACKAGES"})
    assert again.status_code == 200, again.text
    guest = f"{base}/folios/{api.get(f'{base}/reservations/{rid}/folio').json['id']}"
    assert _routed_to(ctx, made["folio_id"]) == 0
    run_night_audit(ctx, h.property.id, hooks=Hooks(), override_reason=EOD_OVERRIDE)
    assert [c["night"] for c in _lines(api, guest) if c["kind"] == "room"] == [str(t)]
    assert _lines(api, master) == []
