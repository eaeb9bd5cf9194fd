"""Function spaces, banquet events, resources and posting through the HTTP API, on
SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from pms.db.uow import read_scope
from pms.models import FolioCharge, SpaceBooking
from tests.factories import make_fb_stay
from tests.helpers import assert_problem, audit_actions, outbox_types

T0 = "2027-03-01T09:00:00+00:00"
T1 = "2027-03-01T12:00:00+00:00"


@pytest.fixture
def stay(ctx):
    hotel, res, folio = make_fb_stay(ctx)
    return {"hotel": hotel, "res": res, "folio": folio, "base": f"/v1/properties/{hotel.id}"}


def _space(api, base, name="Salon A", **over):
    body = {"name": name, "capacities": {"THEATRE": 100, "BANQUET": 60}}
    body.update(over)
    resp = api.post(f"{base}/function-spaces", body)
    assert resp.status_code == 201, resp.text
    return resp.json


def _event(api, base, space_id, start=T0, end=T1, **over):
    body = {"name": "Gala", "space_id": space_id, "setup_style": "BANQUET", "start_at": start,
            "end_at": end, "attendees_forecast": 40}
    body.update(over)
    resp = api.post(f"{base}/events", body)
    assert resp.status_code == 201, resp.text
    return resp.json


def _move(api, base, event_id, trigger):
    return api.post(f"{base}/events/{event_id}/{trigger}", None)


def test_function_space_crud_with_combination_and_audit(api, ctx, stay):
    base = stay["base"]
    a = _space(api, base, "A")
    b = _space(api, base, "B")
    ab = _space(api, base, "A+B", element_ids=[a["id"], b["id"]],
                capacities={"THEATRE": 220})
    assert ab["element_ids"] == [a["id"], b["id"]]
    assert outbox_types(ctx)[-1] == "hotel:pms:function_space:created"
    assert audit_actions(ctx)[-1] == "function_space.created"
    got = api.get(f"{base}/function-spaces/{ab['id']}")
    assert got.status_code == 200 and got.json["capacities"] == {"THEATRE": 220}
    assert len(api.get(f"{base}/function-spaces").json["data"]) == 3
    patched = api.put(f"{base}/function-spaces/{a['id']}", {"capacities": {"BOARDROOM": 12}})
    assert patched.status_code == 200 and patched.json["capacities"] == {"BOARDROOM": 12}
    # a combination of a combination, one element, an unknown element, a duplicate name
    assert_problem(api.post(f"{base}/function-spaces", {
        "name": "X", "capacities": {"THEATRE": 1}, "element_ids": [ab["id"], a["id"]]}), 422)
    assert_problem(api.post(f"{base}/function-spaces", {
        "name": "X", "capacities": {"THEATRE": 1}, "element_ids": [a["id"]]}), 422)
    assert_problem(api.post(f"{base}/function-spaces", {
        "name": "X", "capacities": {"THEATRE": 1},
        "element_ids": [stay["res"].id.hex, a["id"]]}), 422)
    assert_problem(api.post(f"{base}/function-spaces", {
        "name": "A", "capacities": {"THEATRE": 1}}), 409, "already_exists")
    assert_problem(api.post(f"{base}/function-spaces", {
        "name": "Y", "capacities": {"DISCO": 1}}), 422)
    assert_problem(api.post(f"{base}/function-spaces", {
        "name": "Y", "capacities": {"THEATRE": 1},
        "out_of_order": [{"start": T1, "end": T0}]}), 422)
    # an element of a combination is not deletable; the combination is
    assert_problem(api.delete(f"{base}/function-spaces/{a['id']}"), 409, "space_in_use")
    assert api.delete(f"{base}/function-spaces/{ab['id']}").status_code == 204
    assert api.delete(f"{base}/function-spaces/{a['id']}").status_code == 204
    assert api.get(f"{base}/function-spaces/{a['id']}").status_code == 404


def test_event_lifecycle_through_the_transition_table_with_events(api, ctx, stay):
    base = stay["base"]
    space = _space(api, base)
    ev = _event(api, base, space["id"], setup_minutes=30, teardown_minutes=15)
    assert ev["status"] == "INQUIRY" and ev["block_id"] is None
    assert outbox_types(ctx)[-1] == "hotel:pms:event:created"
    for trigger, status in (("tentative", "TENTATIVE"), ("definite", "DEFINITE"),
                            ("actual", "ACTUAL"), ("close", "CLOSED")):
        resp = _move(api, base, ev["id"], trigger)
        assert resp.status_code == 200, resp.text
        assert resp.json["status"] == status
        assert outbox_types(ctx)[-1] == f"hotel:pms:event:{status.lower()}"
        assert audit_actions(ctx)[-1] == f"event.{status.lower()}"
    assert resp.json["attendees_actual"] == 40  # actual defaults to guaranteed, else forecast
    assert_problem(_move(api, base, ev["id"], "cancel"), 409, "invalid_transition")
    assert_problem(api.put(f"{base}/events/{ev['id']}", {"name": "late"}), 409,
                   "invalid_transition")
    other = _event(api, base, space["id"])
    assert_problem(_move(api, base, other["id"], "close"), 409, "invalid_transition")
    assert _move(api, base, other["id"], "lose").json["status"] == "LOST"
    third = _event(api, base, space["id"])
    assert _move(api, base, third["id"], "cancel").json["status"] == "CANCELLED"
    listed = api.get(f"{base}/events?status=LOST")
    assert [e["id"] for e in listed.json["data"]] == [other["id"]]
    assert api.get(f"{base}/events/{third['id']}").json["status"] == "CANCELLED"
    assert api.delete(f"{base}/events/{third['id']}").status_code == 204
    assert api.get(f"{base}/events/{third['id']}").status_code == 404
    assert outbox_types(ctx)[-1] == "hotel:pms:event:deleted"


def test_attendees_must_fit_the_setup_capacity(api, ctx, stay):
    base = stay["base"]
    space = _space(api, base)  # BANQUET 60, THEATRE 100
    assert_problem(api.post(f"{base}/events", {
        "name": "Big", "space_id": space["id"], "setup_style": "BANQUET", "start_at": T0,
        "end_at": T1, "attendees_forecast": 61}), 422)
    assert_problem(api.post(f"{base}/events", {
        "name": "Odd", "space_id": space["id"], "setup_style": "CLASSROOM", "start_at": T0,
        "end_at": T1, "attendees_forecast": 1}), 422)
    assert_problem(api.post(f"{base}/events", {
        "name": "Back", "space_id": space["id"], "setup_style": "BANQUET", "start_at": T1,
        "end_at": T0, "attendees_forecast": 1}), 422)
    assert_problem(api.post(f"{base}/events", {
        "name": "Naive", "space_id": space["id"], "setup_style": "BANQUET",
        "start_at": "2027-03-01T09:00:00", "end_at": T1, "attendees_forecast": 1}), 422)
    ev = _event(api, base, space["id"], attendees_guaranteed=60)
    assert_problem(api.put(f"{base}/events/{ev['id']}", {"attendees_actual": 61}), 422)
    ok = api.put(f"{base}/events/{ev['id']}", {"setup_style": "THEATRE",
                                                 "attendees_actual": 90})
    assert ok.status_code == 200 and ok.json["attendees_actual"] == 90
    assert outbox_types(ctx)[-1] == "hotel:pms:event:updated"


def test_no_double_booking_of_a_space_including_setup_and_combinations(api, ctx, stay):
    base = stay["base"]
    a, b = _space(api, base, "A"), _space(api, base, "B")
    ab = _space(api, base, "AB", element_ids=[a["id"], b["id"]])
    first = _event(api, base, a["id"], teardown_minutes=60)  # holds A until 13:00
    assert _move(api, base, first["id"], "definite").status_code == 200
    # an INQUIRY overlapping holds nothing; moving it to TENTATIVE meets the first
    second = _event(api, base, a["id"], start="2027-03-01T12:30:00+00:00",
                    end="2027-03-01T14:00:00+00:00")
    problem = assert_problem(_move(api, base, second["id"], "tentative"), 409, "space_taken")
    assert problem["conflicting_event_id"] == first["id"]
    # the combination books its elements: A is taken
    combo = _event(api, base, ab["id"], start="2027-03-01T11:00:00+00:00",
                   end="2027-03-01T15:00:00+00:00")
    problem = assert_problem(_move(api, base, combo["id"], "tentative"), 409, "space_taken")
    assert problem["conflicting_event_id"] == first["id"]
    # touching intervals do not overlap: the second starts when the first's tear-down ends
    assert api.put(f"{base}/events/{second['id']}",
                     {"start_at": "2027-03-01T13:00:00+00:00"}).status_code == 200
    assert _move(api, base, second["id"], "tentative").status_code == 200
    # B alone is free; cancelling the first frees A for the combination at another time
    b_event = _event(api, base, b["id"])
    assert _move(api, base, b_event["id"], "tentative").status_code == 200
    with read_scope(ctx):
        assert SpaceBooking.select().count() == 3
    assert _move(api, base, first["id"], "cancel").status_code == 200
    with read_scope(ctx):
        assert SpaceBooking.select().where(
            SpaceBooking.event == first["id"]).count() == 0
    # moving an event onto a taken time answers 409 and changes nothing
    assert_problem(api.put(f"{base}/events/{b_event['id']}",
                             {"start_at": "2027-03-01T13:30:00+00:00",
                              "end_at": "2027-03-01T16:00:00+00:00", "space_id": ab["id"]}),
                   409, "space_taken")
    assert api.get(f"{base}/events/{b_event['id']}").json["start_at"].startswith(
        "2027-03-01T09:00")


def test_out_of_order_period_refuses_a_deducting_event(api, ctx, stay):
    base = stay["base"]
    a = _space(api, base, "A", out_of_order=[{"start": "2027-03-01T11:00:00+00:00",
                                              "end": "2027-03-02T00:00:00+00:00",
                                              "reason": "carpet"}])
    b = _space(api, base, "B")
    ab = _space(api, base, "AB", element_ids=[a["id"], b["id"]])
    ev = _event(api, base, ab["id"])
    assert_problem(_move(api, base, ev["id"], "tentative"), 409, "space_out_of_order")
    fine = _event(api, base, a["id"], start="2027-03-02T09:00:00+00:00",
                  end="2027-03-02T10:00:00+00:00")
    assert _move(api, base, fine["id"], "definite").status_code == 200


def _item(api, base, code="PROJ", stock=2, price="50.00", per_attendee=False, kind="EQUIPMENT"):
    resp = api.post(f"{base}/event-resource-items", {
        "code": code, "name": code.title(), "kind": kind, "stock": stock, "unit_price": price,
        "transaction_code": "FB", "per_attendee": per_attendee})
    assert resp.status_code == 201, resp.text
    return resp.json


def test_resource_stock_per_time_slot(api, ctx, stay):
    base = stay["base"]
    a, b = _space(api, base, "A"), _space(api, base, "B")
    proj = _item(api, base, stock=2)
    assert_problem(api.post(f"{base}/event-resource-items", {
        "code": "X", "name": "X", "kind": "EQUIPMENT", "stock": 1, "unit_price": "1.00",
        "transaction_code": "NOPE"}), 422)
    e1 = _event(api, base, a["id"])
    e2 = _event(api, base, b["id"])
    e3 = _event(api, base, a["id"], start="2027-03-01T12:00:00+00:00",
                end="2027-03-01T15:00:00+00:00")
    for e in (e1, e2, e3):
        assert _move(api, base, e["id"], "tentative").status_code == 200
    ok = api.post(f"{base}/events/{e1['id']}/resources", {"item_id": proj["id"], "quantity": 2})
    assert ok.status_code == 201, ok.text
    assert outbox_types(ctx)[-1] == "hotel:pms:event:resource_booked"
    # e2 overlaps e1: no projector left; e3 starts when e1 ends: both free again
    problem = assert_problem(api.post(f"{base}/events/{e2['id']}/resources",
                                      {"item_id": proj["id"], "quantity": 1}),
                             409, "stock_exhausted")
    assert problem["available"] == 0
    assert api.post(f"{base}/events/{e3['id']}/resources",
                    {"item_id": proj["id"], "quantity": 2}).status_code == 201
    # lowering e1's booking frees one for e2
    assert api.post(f"{base}/events/{e1['id']}/resources",
                    {"item_id": proj["id"], "quantity": 1}).status_code == 201
    assert api.post(f"{base}/events/{e2['id']}/resources",
                    {"item_id": proj["id"], "quantity": 1}).status_code == 201
    assert [r["quantity"] for r in api.get(f"{base}/events/{e1['id']}/resources").json["data"]] \
        == [1]
    # stock cannot drop below the booked peak (2 at once)
    assert_problem(api.put(f"{base}/event-resource-items/{proj['id']}", {"stock": 1}), 409,
                   "stock_exhausted")
    # an INQUIRY books without deducting; moving it to TENTATIVE checks stock
    e4 = _event(api, base, b["id"], start="2027-03-01T12:00:00+00:00",
                end="2027-03-01T13:00:00+00:00")
    assert api.post(f"{base}/events/{e4['id']}/resources",
                    {"item_id": proj["id"], "quantity": 1}).status_code == 201
    assert_problem(_move(api, base, e4["id"], "tentative"), 409, "stock_exhausted")
    assert api.delete(f"{base}/events/{e3['id']}/resources?item_id={proj['id']}"
                      ).status_code == 204
    assert outbox_types(ctx)[-1] == "hotel:pms:event:resource_released"
    assert _move(api, base, e4["id"], "tentative").status_code == 200
    assert_problem(api.post(f"{base}/events/{e1['id']}/resources",
                            {"item_id": a["id"], "quantity": 1}), 422)


def _charges(ctx, folio_id):
    with read_scope(ctx):
        return [(c.kind, Decimal(str(c.amount))) for c in FolioCharge.select().where(
            (FolioCharge.folio == folio_id) & (FolioCharge.kind != "tax")
            & (FolioCharge.reason.is_null(False))).order_by(FolioCharge.created_at)]


def test_posting_is_idempotent_and_posts_attendee_differences(api, ctx, stay):
    base, folio = stay["base"], stay["folio"]
    space = _space(api, base)
    ev = _event(api, base, space["id"], folio_id=str(folio.id), attendees_guaranteed=50)
    proj = _item(api, base, stock=3, price="50.00")
    menu = _item(api, base, code="MENU1", stock=1000, price="30.00", per_attendee=True,
                 kind="MENU")
    for item, qty in ((proj, 2), (menu, 1)):
        assert api.post(f"{base}/events/{ev['id']}/resources",
                        {"item_id": item["id"], "quantity": qty}).status_code == 201
    assert_problem(api.post(f"{base}/events/{ev['id']}/post", None), 409, "event_not_actual")
    for t in ("definite", "actual"):
        assert _move(api, base, ev["id"], t).status_code == 200
    first = api.post(f"{base}/events/{ev['id']}/post", None)
    assert first.status_code == 200, first.text
    assert outbox_types(ctx)[-1] == "hotel:pms:event:posted"
    assert sorted(Decimal(p["posted_now"]) for p in first.json["postings"]) == [
        Decimal("100.00"), Decimal("1500.00")]  # 2 x 50; 50 attendees x 30
    assert sorted(a for _, a in _charges(ctx, folio.id)) == [Decimal("100"), Decimal("1500")]
    again = api.post(f"{base}/events/{ev['id']}/post", None)
    assert again.status_code == 200
    assert all(Decimal(p["posted_now"]) == 0 for p in again.json["postings"])
    # the folio's change has its own event, only when lines were posted
    assert outbox_types(ctx).count("hotel:pms:folio:charge_posted") == 1
    assert len(_charges(ctx, folio.id)) == 2
    # 55 came, then 48: +150, then -210 (an allowance line)
    assert api.put(f"{base}/events/{ev['id']}", {"attendees_actual": 55}).status_code == 200
    api.post(f"{base}/events/{ev['id']}/post", None)
    assert _charges(ctx, folio.id)[-1] == ("charge", Decimal("150"))
    assert api.put(f"{base}/events/{ev['id']}", {"attendees_actual": 48}).status_code == 200
    last = api.post(f"{base}/events/{ev['id']}/post", None)
    assert _charges(ctx, folio.id)[-1] == ("allowance", Decimal("-210"))
    assert {Decimal(p["posted_amount"]) for p in last.json["postings"]} == {
        Decimal("100.00"), Decimal("1440.00")}
    # a posted event cannot be deleted
    assert_problem(api.delete(f"{base}/events/{ev['id']}"), 409, "event_posted")


def test_posting_needs_a_folio_on_the_event(api, ctx, stay):
    base = stay["base"]
    space = _space(api, base)
    ev = _event(api, base, space["id"])
    for t in ("definite", "actual"):
        assert _move(api, base, ev["id"], t).status_code == 200
    assert_problem(api.post(f"{base}/events/{ev['id']}/post", None), 422)
    assert_problem(api.post(f"{base}/events", {
        "name": "G", "space_id": space["id"], "setup_style": "BANQUET", "start_at": T0,
        "end_at": T1, "attendees_forecast": 1, "folio_id": space["id"]}), 422)


def test_event_states_are_a_list_of_values_from_the_machine(api):
    resp = api.get("/v1/lov/event-statuses")
    assert resp.status_code == 200, resp.text
    assert {v["code"] for v in resp.json["data"]} == {
        "INQUIRY", "TENTATIVE", "DEFINITE", "ACTUAL", "CLOSED", "CANCELLED", "LOST"}
    nxt = api.get("/v1/lov/event-next-statuses?parent=DEFINITE")
    assert {v["code"] for v in nxt.json["data"]} >= {"ACTUAL", "CANCELLED"}
    assert "LOST" not in {v["code"] for v in nxt.json["data"]}


def test_staff_only_and_scoped(api, stay):
    from pms.devkeys import mint_token

    base = stay["base"]
    guest = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                       holder_id=str(uuid.uuid4()))
    assert api.get(f"{base}/events", headers={"Authorization": f"Bearer {guest}"}
                   ).status_code in (403, 404)
    reader = mint_token(api.settings, env_id=api.env_id, scopes=["hotel:pms:events:read"])
    assert api.get(f"{base}/events", headers={"Authorization": f"Bearer {reader}"}
                   ).status_code == 200
    assert_problem(api.post(f"{base}/function-spaces", {"name": "Z", "capacities": {
        "THEATRE": 1}}, headers={"Authorization": f"Bearer {reader}"}), 403)
