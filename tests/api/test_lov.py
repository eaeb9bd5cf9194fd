"""Lists of values: `GET /v1/lov/{list}`, generated from the transition tables, the
catalog and the env's seeded lists; dependent lists, inactive values, pages, 404 for unknown."""

from __future__ import annotations

import uuid
from datetime import date, timedelta

import pytest

from pms.context import system_ctx
from pms.domain import states
from pms.domain.machine import Machine
from pms.platform.ledger import EmbeddedLedger
from pms.services.catalog import lov
from pms.services.environments import initialize_environment
from tests.api.recipes import World
from tests.helpers import assert_problem, random_ref


def _codes(resp):
    assert resp.status_code == 200, resp.text
    return [i["code"] for i in resp.json["data"]]


def test_reservation_next_statuses_are_the_transition_tables_moves(api):
    resp = api.get("/v1/lov/reservation-next-statuses", params={"parent": "CONFIRMED"})
    assert sorted(_codes(resp)) == ["CANCELLED", "CHECKED_IN", "NO_SHOW"]
    item = next(i for i in resp.json["data"] if i["code"] == "CHECKED_IN")
    assert item == {"code": "CHECKED_IN", "name": "Checked in", "description": "by check_in",
                    "active": True}
    assert _codes(api.get("/v1/lov/reservation-next-statuses",
                          params={"parent": "CANCELLED"})) == []


@pytest.mark.parametrize("stem", sorted(lov.machines()))
def test_every_machines_lists_follow_its_table(api, stem):
    machine = lov.machines()[stem]
    assert _codes(api.get(f"/v1/lov/{stem}-statuses")) == [s.value for s in machine.states]
    for state in machine.states:
        expected = {t.value for (f, _), t in machine.table.items() if f == state and t != state}
        got = _codes(api.get(f"/v1/lov/{stem}-next-statuses", params={"parent": state.value}))
        assert set(got) == expected and len(got) == len(expected), (stem, state)


def test_a_machine_added_to_the_states_module_gets_its_lists(monkeypatch):
    class BlockStatus(states.StrEnum):
        TENTATIVE = "TENTATIVE"
        DEFINITE = "DEFINITE"

    block = Machine(BlockStatus, {(BlockStatus.TENTATIVE, "confirm"): BlockStatus.DEFINITE})
    monkeypatch.setattr(states, "BLOCK_MACHINE", block, raising=False)
    assert {"block-statuses", "block-next-statuses"} <= set(lov.list_names())
    assert [i.code for i in lov.next_statuses(block, "TENTATIVE")] == ["DEFINITE"]


def test_next_statuses_need_a_known_parent_state(api):
    assert_problem(api.get("/v1/lov/reservation-next-statuses"), 422)
    assert_problem(api.get("/v1/lov/reservation-next-statuses", params={"parent": "NOPE"}), 422)


def test_unknown_list_is_404(api):
    assert_problem(api.get("/v1/lov/no-such-list"), 404, "not_found")
    assert_problem(api.get("/v1/lov/no-such-next-statuses", params={"parent": "X"}), 404)


def test_a_machine_added_to_the_states_is_a_list_at_once(api):
    """Blocks arrived with BLOCK_MACHINE: its lists exist without a line in the LOV
    service, and an unknown parent state is a 422 naming it."""
    codes = [v["code"] for v in api.get("/v1/lov/block-statuses").json["data"]]
    assert codes[:2] == ["INQUIRY", "TENTATIVE"] and "DEFINITE" in codes
    nxt = api.get("/v1/lov/block-next-statuses", params={"parent": "TENTATIVE"}).json["data"]
    assert "DEFINITE" in [v["code"] for v in nxt]
    assert_problem(api.get("/v1/lov/block-next-statuses", params={"parent": "X"}), 422)


def test_room_types_are_a_dependent_list_of_one_property(api):
    world = World(api)
    other = World(api)
    got = api.get("/v1/lov/room-types", params={"parent": world.property_id})
    assert len(got.json["data"]) == 1
    assert got.json["data"][0]["name"] == "Double"
    assert set(got.json["data"][0]) == {"code", "name", "description", "active", "id"}
    assert got.json["data"][0]["id"] == world.room_type_id  # what room_type_id takes
    theirs = api.get("/v1/lov/room-types", params={"parent": other.property_id}).json["data"]
    assert theirs[0]["code"] != got.json["data"][0]["code"]
    assert_problem(api.get("/v1/lov/room-types"), 422)
    assert_problem(api.get("/v1/lov/room-types", params={"parent": str(uuid.uuid4())}), 404)
    # another env's property is not found either
    intruder = api.for_env(uuid.uuid4())
    assert_problem(intruder.get("/v1/lov/room-types", params={"parent": world.property_id}), 404)


def test_inactive_values_only_with_include_inactive(api):
    world = World(api)
    base = f"/v1/properties/{world.property_id}"
    retired = api.post(f"{base}/rate-plans", {"code": random_ref("OLD"), "name": "Old"}).json
    assert api.put(f"{base}/rate-plans/{retired['id']}", {"active": False}).status_code == 200
    params = {"parent": world.property_id}
    assert retired["code"] not in _codes(api.get("/v1/lov/rate-plans", params=params))
    every = api.get("/v1/lov/rate-plans", params={**params, "include_inactive": "true"})
    item = next(i for i in every.json["data"] if i["code"] == retired["code"])
    assert item["active"] is False


def test_seeded_lists_after_environment_initialization_page_by_limit(api):
    assert api.get("/v1/lov/cancellation-reasons").json["data"] == []  # nothing seeded yet
    initialize_environment(api.env_id, ledger=EmbeddedLedger())
    first = api.get("/v1/lov/cancellation-reasons", params={"limit": 3})
    assert _codes(first) == ["GUEST_REQUEST", "NO_PAYMENT", "DUPLICATE"]
    assert first.json["next_cursor"]
    rest = api.get("/v1/lov/cancellation-reasons",
                   params={"limit": 3, "cursor": first.json["next_cursor"]})
    assert _codes(rest) == ["OTHER"] and rest.json["next_cursor"] is None
    categories = api.get("/v1/lov/folio-item-categories").json["data"]
    assert {"code": "F&B", "name": "F&B", "description": None, "active": True} in categories
    approvals = _codes(api.get("/v1/lov/company-payment-method-approvals"))
    assert approvals == ["PENDING", "POSTPAY", "BILL_TO_COMPANY", "REJECTED"]
    # a cursor of another list is refused
    assert_problem(api.get("/v1/lov/reservation-sources",
                           params={"cursor": first.json["next_cursor"]}), 422, "invalid_cursor")


def test_lov_needs_the_lov_read_scope(api):
    from pms.devkeys import mint_token

    token = mint_token(api.settings, env_id=api.env_id, scopes=["hotel:pms:settings:read"])
    assert_problem(api.get("/v1/lov/kiosk-modes", token=token), 403, "missing_scope")


def test_environment_seed_is_idempotent(database, env_id):
    from pms.db.uow import read_scope
    from pms.models.settings import LovEntry, SettingsDocument

    ctx = system_ctx(env_id)

    def rows():
        with read_scope(ctx):
            return (sorted((str(r.id), r.list_name, r.code) for r in LovEntry.select()),
                    sorted((str(r.id), r.kind, r.scope_key, r.version)
                           for r in SettingsDocument.select()))

    initialize_environment(env_id, ledger=EmbeddedLedger(), source_event_id="e1")
    first = rows()
    initialize_environment(env_id, ledger=EmbeddedLedger(), source_event_id="e2")
    assert rows() == first
    lists, docs = first
    assert len(lists) == sum(len(v) for v in lov.SEEDED_LISTS.values())
    assert [(kind, scope) for _, kind, scope, _ in docs] == [("modules", "env")]


@pytest.mark.parametrize("name", sorted(lov.SCHEMA_LISTS))
def test_a_schema_backed_list_is_what_the_api_accepts(api, name):
    """Read from the request schema, in a new env too: nothing the API refuses, nothing it
    accepts left out."""
    from typing import get_args

    assert _codes(api.get(f"/v1/lov/{name}", params={"limit": 50})) == list(
        get_args(lov.SCHEMA_LISTS[name]))


def test_every_channel_the_list_offers_books_and_none_is_refused(api):
    from tests.api.recipes import _new_reservation

    channels = _codes(api.get("/v1/lov/reservation-channels", params={"limit": 50}))
    assert {"PHONE", "APP", "EMAIL", "GDS"} <= set(channels) and "CALL_CENTER" not in channels
    world = World(api)
    for i, channel in enumerate([*channels, "CALL_CENTER"]):
        url, body = _new_reservation(world)  # a bookable hotel's stay, a night of its own
        nights = {k: (date.fromisoformat(body[k]) + timedelta(days=i)).isoformat()
                  for k in ("arrival_date", "departure_date")}
        resp = api.post(url, {**body, **nights, "channel": channel})
        if channel == "CALL_CENTER":
            assert_problem(resp, 422)
        else:
            assert resp.status_code == 201, (channel, resp.text)
