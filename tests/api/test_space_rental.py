"""A function space's rental charge, through the HTTP API on SQLite and PostgreSQL: set with
the space (price and transaction code together), posted once per ACTUAL event with its
resources, a later price change posting only the difference; a space without a rental posts
its resources alone (the control)."""

from __future__ import annotations

from decimal import Decimal

from tests.api.test_banquets import (
    _charges,
    _event,
    _item,
    _move,
    _space,
    stay,  # noqa: F401 - the fixture
)
from tests.helpers import assert_problem


def test_an_event_posts_its_spaces_rental_once(api, ctx, stay):  # noqa: F811
    base, folio = stay["base"], stay["folio"]
    hall = _space(api, base, "Hall", rental_price="800.00", rental_transaction_code="FB")
    assert (hall["rental_price"], hall["rental_transaction_code"]) == ("800.00", "FB")
    assert api.get(f"{base}/function-spaces/{hall['id']}").json["rental_price"] == "800.00"
    proj = _item(api, base, stock=3, price="50.00")
    ev = _event(api, base, hall["id"], folio_id=str(folio.id), attendees_guaranteed=10)
    assert api.post(f"{base}/events/{ev['id']}/resources",
                    {"item_id": proj["id"], "quantity": 1}).status_code == 201
    for t in ("definite", "actual"):
        assert _move(api, base, ev["id"], t).status_code == 200
    first = api.post(f"{base}/events/{ev['id']}/post", None)
    assert first.status_code == 200, first.text
    rental = [p for p in first.json["postings"] if p["resource_id"] == hall["id"]]
    assert [(p["posted_quantity"], p["posted_now"]) for p in rental] == [(1, "800.00")]
    assert sorted(a for _, a in _charges(ctx, folio.id)) == [Decimal("50"), Decimal("800")]
    # a repeat posts nothing; a new price posts the difference only
    again = api.post(f"{base}/events/{ev['id']}/post", None)
    assert all(Decimal(p["posted_now"]) == 0 for p in again.json["postings"])
    assert api.put(f"{base}/function-spaces/{hall['id']}",
                   {"rental_price": "900.00"}).status_code == 200
    api.post(f"{base}/events/{ev['id']}/post", None)
    assert _charges(ctx, folio.id)[-1] == ("charge", Decimal("100"))
    assert len(_charges(ctx, folio.id)) == 3


def test_control_a_space_without_a_rental_posts_its_resources_alone(api, ctx, stay):  # noqa: F811
    base, folio = stay["base"], stay["folio"]
    plain = _space(api, base, "Plain")
    assert plain["rental_price"] is None
    proj = _item(api, base, stock=3, price="50.00")
    ev = _event(api, base, plain["id"], folio_id=str(folio.id), attendees_guaranteed=10)
    assert api.post(f"{base}/events/{ev['id']}/resources",
                    {"item_id": proj["id"], "quantity": 1}).status_code == 201
    for t in ("definite", "actual"):
        assert _move(api, base, ev["id"], t).status_code == 200
    assert api.post(f"{base}/events/{ev['id']}/post", None).status_code == 200
    assert [a for _, a in _charges(ctx, folio.id)] == [Decimal("50")]


def test_a_rental_needs_a_price_and_an_active_code(api, stay):  # noqa: F811
    base = stay["base"]
    body = {"name": "X", "capacities": {"THEATRE": 10}}
    for extra, field in (({"rental_price": "10.00"}, "rental_transaction_code"),
                         ({"rental_transaction_code": "FB"}, "rental_price"),
                         ({"rental_price": "10.00", "rental_transaction_code": "NOPE"},
                          "rental_transaction_code"),
                         ({"rental_price": "-1.00", "rental_transaction_code": "FB"}, None)):
        resp = api.post(f"{base}/function-spaces", {**body, **extra})
        assert_problem(resp, 422)
        if field is not None:
            assert field in resp.text, resp.text
    space = _space(api, base, "Y")
    assert_problem(api.put(f"{base}/function-spaces/{space['id']}",
                           {"rental_price": "10.00"}), 422)
    set_ = api.put(f"{base}/function-spaces/{space['id']}",
                   {"rental_price": "10.00", "rental_transaction_code": "FB"})
    assert set_.status_code == 200, set_.text
    cleared = api.put(f"{base}/function-spaces/{space['id']}",
                      {"rental_price": None, "rental_transaction_code": None})
    assert (cleared.json["rental_price"], cleared.json["rental_transaction_code"]) == (None, None)
