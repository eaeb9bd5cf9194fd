"""Overpick with permission, through the HTTP API on SQLite and PostgreSQL: a pick-up beyond the
block's allocation is 409 on the pick-up route; the overpick route needs the scope
`hotel:pms:blocks:overpick` (and the env's policies' yes at the property) and the house's room,
counts the room picked above the allotment, and is audited with the nights and who did it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pms.db.uow import read_scope
from pms.devkeys import BLOCK_OVERPICK, all_scopes, mint_token
from pms.models import AuditEntry
from tests.api.test_room_block_bulk import _receipt_consistent
from tests.api.test_room_blocks import ARR, DEP, _available, _block, _book, _pick
from tests.factories import make_hotel
from tests.helpers import assert_problem, counts

DAY = timedelta(days=1)


@pytest.fixture
def hotel(ctx):
    h = make_hotel(ctx, rooms=4)
    h.base = f"/v1/properties/{h.property.id}"
    return h


def _full_block(api, h):
    block = _block(api, h, rooms=1, code="OVER")
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    assert _pick(api, h, block["id"]).status_code == 201
    return block


def _overpick(api, h, block, token=None, **over):
    body = {"room_type_id": str(h.room_type.id), "arrival_date": str(ARR),
            "departure_date": str(DEP), "guest": {"last_name": "Extra"}}
    body.update(over)
    return api.post(f"{h.base}/blocks/{block['id']}/overpicks", body, token=token)


def test_an_overpick_needs_the_permission_and_sells_from_the_house(api, ctx, hotel):
    h = hotel
    block = _full_block(api, h)
    assert_problem(_pick(api, h, block["id"]), 409, "block_allocation_exhausted")
    without = mint_token(api.settings, env_id=api.env_id,
                         scopes=[s for s in all_scopes() if s != BLOCK_OVERPICK])
    before = counts(ctx)
    problem = assert_problem(_overpick(api, h, block, token=without), 403, "missing_scope")
    assert BLOCK_OVERPICK in problem["detail"] or problem.get("scopes")
    assert counts(ctx) == before
    assert _available(api, h) == 3
    resp = _overpick(api, h, block)
    assert resp.status_code == 201, resp.text
    grid = api.get(f"{h.base}/blocks/{block['id']}").json
    assert [(n["allotted"], n["picked"], n["held"]) for n in grid["allocation"]] == [(1, 2, 0)] * 3
    assert _available(api, h) == 2  # the extra room came from the house
    with read_scope(ctx):
        [audit] = [a for a in AuditEntry.select().where(
            AuditEntry.action == "block.pickup_changed").order_by(AuditEntry.id)
            if (a.after or {}).get("overpicked")]
    assert audit.actor_sub == "dev-user"
    assert [n["date"] for n in audit.after["overpicked"]] == [
        str(ARR + i * DAY) for i in range(3)]
    # a cancelled overpicked room goes back to the house, the block keeps its contract
    gone = api.post(f"{h.base}/reservations/{resp.json['reservation']['id']}/cancel")
    assert gone.status_code == 200, gone.text
    assert _available(api, h) == 3
    grid = api.get(f"{h.base}/blocks/{block['id']}").json
    assert [(n["picked"], n["held"]) for n in grid["allocation"]] == [(1, 0)] * 3
    _receipt_consistent(api, ctx, h, block)


def test_an_overpick_inside_the_allocation_is_a_plain_pick_up(api, ctx, hotel):
    h = hotel
    block = _block(api, h, rooms=2, code="ROOMY")
    assert api.post(f"{h.base}/blocks/{block['id']}/definite").status_code == 200
    resp = _overpick(api, h, block)
    assert resp.status_code == 201, resp.text
    with read_scope(ctx):
        assert not [a for a in AuditEntry.select().where(
            AuditEntry.action == "block.pickup_changed") if (a.after or {}).get("overpicked")]
    assert _available(api, h) == 2  # a held room became a sold one
    _receipt_consistent(api, ctx, h, block)


def test_an_overpick_needs_the_house_to_have_the_room(api, ctx, hotel):
    h = hotel
    block = _full_block(api, h)
    for _ in range(3):
        assert _book(api, h).status_code == 201
    assert _available(api, h) == 0
    before = counts(ctx)
    problem = assert_problem(_overpick(api, h, block), 409, "room_type_unavailable")
    assert problem["nights"] == [str(ARR + i * DAY) for i in range(3)]
    assert counts(ctx) == before


def test_a_policy_can_deny_the_overpick_at_a_property(api, ctx, hotel):
    h = hotel
    block = _full_block(api, h)
    made = api.post("/v1/admin/policy-sets", {"name": "no-overpick", "rules": [
        {"effect": "deny", "scopes": [BLOCK_OVERPICK], "property_ids": [str(h.property.id)]}]})
    assert made.status_code == 201, made.text
    assert_problem(_overpick(api, h, block), 403, "policy_denied")
    # control: the plain pick-up route is not governed by the rule (it still answers 409)
    assert_problem(_pick(api, h, block["id"]), 409, "block_allocation_exhausted")
