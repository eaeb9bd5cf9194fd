"""Banquet events at the edges of their life, through the HTTP API on SQLite and PostgreSQL:
an out-of-order period on a booked function space, edits that do not move an event, deleting
an event that holds its space, and a block that banquet events link to."""

from __future__ import annotations

from tests.api.test_banquets import (
    _event,
    _move,
    _space,
    stay,  # noqa: F401 - the fixture
)
from tests.helpers import assert_problem

T0 = "2027-03-01T09:00:00+00:00"
T1 = "2027-03-01T12:00:00+00:00"
LATER = [{"start": "2027-03-01T11:00:00+00:00", "end": "2027-03-01T15:00:00+00:00"}]


def test_an_out_of_order_period_on_a_booked_space_names_the_events(api, ctx, stay):  # noqa: F811
    base = stay["base"]
    a = _space(api, base, "A")
    b = _space(api, base, "B")
    ab = _space(api, base, "A+B", element_ids=[a["id"], b["id"]], capacities={"BANQUET": 80})
    ev = _event(api, base, a["id"])
    assert _move(api, base, ev["id"], "definite").status_code == 200
    combo = _event(api, base, ab["id"], start="2027-03-01T13:00:00+00:00",
                   end="2027-03-01T14:00:00+00:00")
    assert _move(api, base, combo["id"], "tentative").status_code == 200
    resp = api.put(f"{base}/function-spaces/{a['id']}", {"out_of_order": LATER})
    assert_problem(resp, 409, "space_booked")
    assert [e["id"] for e in resp.json["events"]] == [ev["id"], combo["id"]]
    assert api.get(f"{base}/function-spaces/{a['id']}").json["out_of_order"] == []
    # the event can still be edited and posted as it was
    assert api.put(f"{base}/events/{ev['id']}", {"attendees_guaranteed": 12}).status_code == 200
    assert _move(api, base, ev["id"], "actual").status_code == 200
    # a period that misses every booking is set; space B's own period ignores A's event
    free = [{"start": "2027-03-02T09:00:00+00:00", "end": "2027-03-02T12:00:00+00:00"}]
    assert api.put(f"{base}/function-spaces/{a['id']}", {"out_of_order": free}).status_code == 200
    assert_problem(api.put(f"{base}/function-spaces/{b['id']}", {"out_of_order": LATER}),
                   409, "space_booked")


def test_an_edit_that_does_not_move_an_event_does_not_rejudge_its_space(api, ctx, stay):  # noqa: F811
    base = stay["base"]
    a = _space(api, base, "A")
    ev = _event(api, base, a["id"])
    assert _move(api, base, ev["id"], "tentative").status_code == 200
    # a space already out of order over the event (set before the rule, or at the venue)
    from pms.db.uow import read_scope
    from pms.models.banquets import FunctionSpace

    with read_scope(ctx):
        FunctionSpace.update(out_of_order=LATER).where(FunctionSpace.id == a["id"]).execute()
    assert api.put(f"{base}/events/{ev['id']}", {"attendees_guaranteed": 12}).status_code == 200
    assert _move(api, base, ev["id"], "definite").status_code == 200
    assert _move(api, base, ev["id"], "actual").status_code == 200
    # a move into the period is judged
    assert_problem(api.put(f"{base}/events/{ev['id']}", {"end_at": T1, "teardown_minutes": 120}),
                   409, "space_out_of_order")


def test_a_definite_or_actual_event_cannot_be_deleted(api, ctx, stay):  # noqa: F811
    base = stay["base"]
    a = _space(api, base, "A")
    ev = _event(api, base, a["id"])
    assert _move(api, base, ev["id"], "definite").status_code == 200
    assert_problem(api.delete(f"{base}/events/{ev['id']}"), 409, "event_in_use")
    assert _move(api, base, ev["id"], "actual").status_code == 200
    assert_problem(api.delete(f"{base}/events/{ev['id']}"), 409, "event_in_use")
    assert api.get(f"{base}/events/{ev['id']}").status_code == 200
    tentative = _event(api, base, a["id"], start="2027-03-02T09:00:00+00:00",
                       end="2027-03-02T10:00:00+00:00")
    assert _move(api, base, tentative["id"], "tentative").status_code == 200
    assert api.delete(f"{base}/events/{tentative['id']}").status_code == 204


def test_a_posted_event_keeps_its_folio(api, ctx, stay):  # noqa: F811
    from tests.api.test_banquets import _item

    base, folio = stay["base"], stay["folio"]
    a = _space(api, base, "A")
    ev = _event(api, base, a["id"], folio_id=str(folio.id), attendees_guaranteed=10)
    proj = _item(api, base, stock=3, price="50.00")
    assert api.post(f"{base}/events/{ev['id']}/resources",
                    {"item_id": proj["id"], "quantity": 1}).status_code == 201
    assert api.put(f"{base}/events/{ev['id']}", {"folio_id": None}).status_code == 200
    assert api.put(f"{base}/events/{ev['id']}",
                   {"folio_id": str(folio.id)}).status_code == 200
    for t in ("definite", "actual"):
        assert _move(api, base, ev["id"], t).status_code == 200
    assert api.post(f"{base}/events/{ev['id']}/post", None).status_code == 200
    assert_problem(api.put(f"{base}/events/{ev['id']}", {"folio_id": None}), 409,
                   "event_posted")
    assert api.get(f"{base}/events/{ev['id']}").json["folio_id"] == str(folio.id)
    assert api.put(f"{base}/events/{ev['id']}", {"attendees_actual": 12}).status_code == 200


def test_a_menus_stock_counts_covers_as_posting_does(api, ctx, stay):  # noqa: F811
    """A per-attendee item (a menu) takes its quantity per cover of the stock, the unit its
    posting counts: 100 covers of a menu stocked for 150 leave 50, not 149."""
    from tests.api.test_banquets import _item

    base = stay["base"]
    big = {"capacities": {"BANQUET": 200}}
    a, b = _space(api, base, "A", **big), _space(api, base, "B", **big)
    menu = _item(api, base, code="GALA", stock=150, price="30.00", per_attendee=True,
                 kind="MENU")
    first = _event(api, base, a["id"], attendees_forecast=100)
    assert _move(api, base, first["id"], "definite").status_code == 200
    assert api.post(f"{base}/events/{first['id']}/resources",
                    {"item_id": menu["id"], "quantity": 1}).status_code == 201
    # the same time, another room: 60 covers no longer fit, 50 do
    second = _event(api, base, b["id"], attendees_forecast=60)
    assert _move(api, base, second["id"], "definite").status_code == 200
    resp = api.post(f"{base}/events/{second['id']}/resources",
                    {"item_id": menu["id"], "quantity": 1})
    assert_problem(resp, 409, "stock_exhausted")
    assert resp.json["available"] == 50
    assert api.put(f"{base}/events/{second['id']}", {"attendees_guaranteed": 50}
                   ).status_code == 200
    assert api.post(f"{base}/events/{second['id']}/resources",
                    {"item_id": menu["id"], "quantity": 1}).status_code == 201
