"""a room block's master folio (a folio of the block, not of a reservation), opened
with the block, read through the folio routes, and the target of its banquet events' posting;
on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from decimal import Decimal

import peewee
import pytest

from pms.db.database import db
from pms.db.uow import read_scope, unit_of_work
from pms.models import EventPosting, Folio, FolioCharge, RoomBlock
from tests.api.test_banquets import _event, _item, _move, _space
from tests.factories import make_fb_stay
from tests.helpers import assert_problem, outbox_types


@pytest.fixture
def stay(ctx):
    hotel, res, folio = make_fb_stay(ctx)
    return {"hotel": hotel, "res": res, "folio": folio, "base": f"/v1/properties/{hotel.id}"}


def _block(api, stay, code="GALA"):
    resp = api.post(f"{stay['base']}/blocks", {
        "code": code, "name": "Gala group", "arrival_date": "2027-03-01",
        "departure_date": "2027-03-03", "rate_plan_id": str(stay["hotel"].rate_plan.id),
        "allocation": []})
    assert resp.status_code == 201, resp.text
    return resp.json


def _lines(ctx, folio_id):
    """(kind, amount) of the folio's non-tax lines, oldest first."""
    with read_scope(ctx):
        return [(c.kind, Decimal(str(c.amount))) for c in FolioCharge.select().where(
            (FolioCharge.folio == folio_id) & (FolioCharge.kind != "tax"))
            .order_by(FolioCharge.created_at, FolioCharge.id)]


def _actual_event(api, base, space_id, **over):
    ev = _event(api, base, space_id, **over)
    for t in ("definite", "actual"):
        assert _move(api, base, ev["id"], t).status_code == 200
    return ev


def test_a_block_opens_its_master_folio_read_through_the_folio_routes(api, ctx, stay):
    base = stay["base"]
    block = _block(api, stay)
    assert block["folio_id"] is not None
    # one change, one event: the block's `created` carries the folio it opened
    assert outbox_types(ctx)[-1] == "hotel:pms:block:created"
    assert "hotel:pms:folio:created" not in outbox_types(ctx)
    got = api.get(f"{base}/folios/{block['folio_id']}")
    assert got.status_code == 200, got.text
    folio = got.json
    assert (folio["folio_type"], folio["status"], folio["reservation_id"], folio["block_id"]) == (
        "MASTER", "OPEN", None, block["id"])
    assert (folio["charges"], folio["payments"], folio["projected_charges"]) == ([], [], [])
    assert Decimal(folio["balance_due"]) == 0
    assert api.get(f"{base}/blocks/{block['id']}").json["folio_id"] == block["folio_id"]
    # the folio routes' rules hold for it: a charge, then its balance
    charged = api.post(f"{base}/folios/{block['folio_id']}/charges",
                       {"transaction_code": "FB", "amount": "12.50"})
    assert charged.status_code == 201, charged.text
    assert Decimal(charged.json["posted_balance"]) == Decimal("12.50")
    assert charged.json["reservation_id"] is None
    # a stay's folio is unchanged
    own = api.get(f"{base}/folios/{stay['folio'].id}").json
    assert (own["folio_type"], own["reservation_id"], own["block_id"]) == (
        "GUEST", str(stay["res"].id), None)


def test_the_master_folio_is_staff_only_and_scoped(api, ctx, stay):
    from pms.devkeys import mint_token

    base = stay["base"]
    block = _block(api, stay)
    path = f"{base}/folios/{block['folio_id']}"
    # a guest session (even the stay's own guest) never sees a block's folio: it has no stay
    for holder in [h for h in (stay["res"].guest_profile_id, uuid.uuid4()) if h]:
        guest = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                           holder_id=str(holder), scopes=["hotel:pms:folios:read"])
        assert_problem(api.get(path, headers={"Authorization": f"Bearer {guest}"}), 404)
    no_scope = mint_token(api.settings, env_id=api.env_id, scopes=["hotel:pms:events:read"])
    assert_problem(api.get(path, headers={"Authorization": f"Bearer {no_scope}"}), 403)
    reader = mint_token(api.settings, env_id=api.env_id, scopes=["hotel:pms:folios:read"])
    assert api.get(path, headers={"Authorization": f"Bearer {reader}"}).status_code == 200
    # another env: no such folio
    other = uuid.uuid4()
    token = mint_token(api.settings, env_id=other)
    assert_problem(api.get(path, headers={"Authorization": f"Bearer {token}",
                                          "X-Platform-Env-Id": str(other)}), 404)


def test_a_block_event_posts_to_the_master_folio_once_and_then_differences(api, ctx, stay):
    base = stay["base"]
    block = _block(api, stay)
    master = block["folio_id"]
    space = _space(api, base)
    ev = _actual_event(api, base, space["id"], block_id=block["id"], attendees_guaranteed=50)
    proj = _item(api, base, stock=5, price="50.00")
    menu = _item(api, base, code="MENU1", stock=1000, price="30.00", per_attendee=True,
                 kind="MENU")
    for item, qty in ((proj, 2), (menu, 1)):
        assert api.post(f"{base}/events/{ev['id']}/resources",
                        {"item_id": item["id"], "quantity": qty}).status_code == 201
    first = api.post(f"{base}/events/{ev['id']}/post", None)
    assert first.status_code == 200, first.text
    assert first.json["folio_id"] == master
    assert sorted(_lines(ctx, master)) == [("charge", Decimal("100")),
                                           ("charge", Decimal("1500"))]
    # a retried post posts nothing
    again = api.post(f"{base}/events/{ev['id']}/post", None)
    assert again.status_code == 200 and again.json["folio_id"] == master
    assert all(Decimal(p["posted_now"]) == 0 for p in again.json["postings"])
    assert len(_lines(ctx, master)) == 2
    # more actual attendees: the difference; a quantity change: the difference
    assert api.put(f"{base}/events/{ev['id']}", {"attendees_actual": 52}).status_code == 200
    assert api.post(f"{base}/events/{ev['id']}/resources",
                    {"item_id": proj["id"], "quantity": 3}).status_code == 201
    api.post(f"{base}/events/{ev['id']}/post", None)
    assert sorted(_lines(ctx, master)[2:]) == [("charge", Decimal("50")),
                                               ("charge", Decimal("60"))]
    # fewer: a correcting (allowance) line, never a second full charge
    assert api.put(f"{base}/events/{ev['id']}", {"attendees_actual": 40}).status_code == 200
    api.post(f"{base}/events/{ev['id']}/post", None)
    assert _lines(ctx, master)[-1] == ("allowance", Decimal("-360"))
    folio = api.get(f"{base}/folios/{master}").json
    net = sum((Decimal(c["amount"]) for c in folio["charges"] if c["kind"] != "tax"),
              Decimal(0))
    assert net == Decimal("150") + Decimal("1200")  # 3 x 50 + 40 x 30
    # a released resource: its whole posting comes back as an allowance, once
    assert api.delete(f"{base}/events/{ev['id']}/resources",
                      params={"item_id": menu["id"]}).status_code == 204
    api.post(f"{base}/events/{ev['id']}/post", None)
    api.post(f"{base}/events/{ev['id']}/post", None)
    assert _lines(ctx, master)[-1] == ("allowance", Decimal("-1200"))
    assert len(_lines(ctx, master)) == 6
    with read_scope(ctx):
        assert EventPosting.select().where(EventPosting.event == ev["id"]).count() == 2
    # nothing went to the stay's folio
    assert _lines(ctx, stay["folio"].id) == []


def test_a_folio_named_on_the_event_wins_over_the_master_folio(api, ctx, stay):
    base = stay["base"]
    block = _block(api, stay)
    space = _space(api, base)
    ev = _actual_event(api, base, space["id"], block_id=block["id"],
                       folio_id=str(stay["folio"].id))
    proj = _item(api, base, stock=5, price="20.00")
    api.post(f"{base}/events/{ev['id']}/resources", {"item_id": proj["id"], "quantity": 1})
    out = api.post(f"{base}/events/{ev['id']}/post", None)
    assert out.status_code == 200, out.text
    assert out.json["folio_id"] == str(stay["folio"].id)
    assert _lines(ctx, block["folio_id"]) == []
    # neither a folio nor a block: 422 problem naming folio_id
    lone = _actual_event(api, base, _space(api, base, "Salon Z")["id"])
    problem = assert_problem(api.post(f"{base}/events/{lone['id']}/post", None), 422)
    assert [e["field"] for e in problem["errors"]] == ["folio_id"]


def test_a_block_without_a_master_folio_gets_one_on_first_posting_once(api, ctx, stay):
    """A block made before migration 042 has no master folio: the first posting opens it,
    a second posting uses it, and the unique index keeps one master folio per block."""
    base = stay["base"]
    block = _block(api, stay)
    with unit_of_work(ctx):  # as before 042
        RoomBlock.update(folio_id=None).where(RoomBlock.id == block["id"]).execute()
        Folio.delete().where(Folio.id == block["folio_id"]).execute()
    space = _space(api, base)
    ev = _actual_event(api, base, space["id"], block_id=block["id"])
    proj = _item(api, base, stock=5, price="20.00")
    api.post(f"{base}/events/{ev['id']}/resources", {"item_id": proj["id"], "quantity": 1})
    first = api.post(f"{base}/events/{ev['id']}/post", None)
    assert first.status_code == 200, first.text
    opened = first.json["folio_id"]
    assert api.get(f"{base}/blocks/{block['id']}").json["folio_id"] == opened
    api.post(f"{base}/events/{ev['id']}/resources", {"item_id": proj["id"], "quantity": 2})
    assert api.post(f"{base}/events/{ev['id']}/post", None).json["folio_id"] == opened
    assert _lines(ctx, opened) == [("charge", Decimal("20")), ("charge", Decimal("20"))]
    with read_scope(ctx):
        assert Folio.select().where(Folio.block_id == block["id"]).count() == 1
    with pytest.raises(peewee.IntegrityError), unit_of_work(ctx):
        Folio.create(reservation=None, block_id=block["id"], property=stay["hotel"].id,
                     status="OPEN", folio_type="MASTER", currency="EUR")


def test_deleting_a_block_deletes_its_empty_master_folio_only(api, ctx, stay):
    base = stay["base"]
    empty = _block(api, stay, code="E1")
    assert api.delete(f"{base}/blocks/{empty['id']}").status_code == 204
    assert_problem(api.get(f"{base}/folios/{empty['folio_id']}"), 404)
    used = _block(api, stay, code="U1")
    assert api.post(f"{base}/folios/{used['folio_id']}/charges",
                    {"transaction_code": "FB", "amount": "5.00"}).status_code == 201
    assert_problem(api.delete(f"{base}/blocks/{used['id']}"), 409, "block_folio_in_use")
    assert api.get(f"{base}/blocks/{used['id']}").status_code == 200


def test_reports_and_the_stays_folio_rules_ignore_the_master_folio(api, ctx, stay):
    base = stay["base"]
    block = _block(api, stay)
    api.post(f"{base}/folios/{block['folio_id']}/charges",
             {"transaction_code": "FB", "amount": "7.00"})
    report = api.get(f"{base}/reports/open-folios")
    assert report.status_code == 200, report.text
    rows = {r["folio_id"]: r for r in report.json["rows"]} if "rows" in report.json else {
        r["folio_id"]: r for r in report.json["data"]}
    assert rows[block["folio_id"]]["reservation_id"] is None
    assert rows[block["folio_id"]]["block_id"] == block["id"]
    assert rows[str(stay["folio"].id)]["reservation_id"] == str(stay["res"].id)
    # a stay's folios list and a charge move stay within the stay
    stay_folios = api.get(f"{base}/reservations/{stay['res'].id}/folios").json
    listed = stay_folios["data"] if isinstance(stay_folios, dict) else stay_folios
    assert block["folio_id"] not in {f["id"] for f in listed}
    charge = api.get(f"{base}/folios/{block['folio_id']}").json["charges"][0]
    moved = api.post(f"{base}/folios/{block['folio_id']}/charges/{charge['id']}/move",
                     {"target_folio_id": str(stay["folio"].id)})
    assert_problem(moved, 422)


@pytest.mark.postgres
def test_postgres_says_a_folio_has_exactly_one_owner(ctx, pg_db):
    from tests.factories import make_property

    prop = make_property(ctx)
    for owner in ({}, {"reservation": uuid.uuid4(), "block_id": uuid.uuid4()}):
        with pytest.raises(peewee.IntegrityError), unit_of_work(ctx):
            with db.atomic():
                Folio.create(property=prop.id, status="OPEN", folio_type="MASTER",
                             currency="EUR", **owner)


def test_parallel_posts_of_one_event_post_each_resource_once(api, ctx, stay):
    """Eight `POST .../post` of one ACTUAL event at once (threads through the app, on SQLite
    and PostgreSQL): the event row's lock (PostgreSQL) or the write lock (SQLite) serializes
    them, so the first posts and the others post nothing; the control with the lock and the
    unique key removed is tests/concurrency/test_banquet_post_race.py."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    base = stay["base"]
    block = _block(api, stay)
    ev = _actual_event(api, base, _space(api, base)["id"], block_id=block["id"])
    proj = _item(api, base, stock=5, price="40.00")
    api.post(f"{base}/events/{ev['id']}/resources", {"item_id": proj["id"], "quantity": 2})
    barrier = threading.Barrier(8, timeout=120)

    def post(_: int) -> tuple[int, str]:
        try:
            barrier.wait(timeout=30)
            resp = api.post(f"{base}/events/{ev['id']}/post", None)
            return resp.status_code, (resp.json or {}).get("code", "")
        finally:
            db.close()

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(post, range(8)))
    # 503 lock_timeout is the answer to a lock wait over the timeout on a loaded machine
    assert {s for s, _ in results} <= {200, 503}, results
    assert any(s == 200 for s, _ in results), results
    assert _lines(ctx, block["folio_id"]) == [("charge", Decimal("80"))]
    with read_scope(ctx):
        assert EventPosting.select().where(EventPosting.event == ev["id"]).count() == 1
