"""Housekeeping over HTTP: room board, PUT hk_status, tasks; scopes and bad input."""

from __future__ import annotations

import uuid

import pytest

from pms.devkeys import mint_token
from tests.helpers import assert_problem


@pytest.fixture
def hotel(api):
    prop = api.post("/v1/properties", {"propertyCode": f"H{uuid.uuid4().hex[:6]}",
                                       "timezone": "Europe/Berlin", "currencyCode": "EUR"}).json
    rt = api.post(f"/v1/properties/{prop['id']}/room-types", {"code": "DBL", "name": "Double"}).json
    for n in ("201", "202"):
        resp = api.post(f"/v1/properties/{prop['id']}/rooms",
                        {"room_number": n, "room_type_id": rt["id"], "floor": "2"})
        assert resp.status_code == 201, resp.text
    return f"/v1/properties/{prop['id']}/housekeeping"


def test_room_board_lists_rooms_with_hk_status(api, hotel):
    resp = api.get(hotel)
    assert resp.status_code == 200, resp.text
    assert [r["room_number"] for r in resp.json["data"]] == ["201", "202"]
    assert {r["hk_status"] for r in resp.json["data"]} == {"CLEAN"}


def test_put_room_changes_hk_status_and_board_filters(api, hotel):
    resp = api.put(f"{hotel}/201", {"hk_status": "DIRTY"})
    assert resp.status_code == 200, resp.text
    assert resp.json["hk_status"] == "DIRTY"
    board = api.get(hotel, params={"hk_status": "DIRTY"}).json["data"]
    assert [r["room_number"] for r in board] == ["201"]


def test_illegal_hk_move_is_409(api, hotel):
    api.put(f"{hotel}/201", {"hk_status": "OUT_OF_SERVICE"})
    assert_problem(api.put(f"{hotel}/201", {"hk_status": "INSPECTED"}), 409, "invalid_transition")


def test_bad_hk_status_and_unknown_fields_are_422(api, hotel):
    assert_problem(api.put(f"{hotel}/201", {"hk_status": "SPARKLING"}), 422)
    assert_problem(api.put(f"{hotel}/201", {"hk_status": "DIRTY", "env_id": str(uuid.uuid4())}),
                   422)


def test_unknown_room_is_404(api, hotel):
    assert_problem(api.put(f"{hotel}/nope", {"hk_status": "DIRTY"}), 404)


def test_tasks_create_list_update(api, hotel):
    created = api.post(f"{hotel}/tasks", {"room_number": "202", "kind": "INSPECTION"})
    assert created.status_code == 201, created.text
    task_id = created.json["id"]
    assert created.headers["location"].endswith(task_id)
    listed = api.get(f"{hotel}/tasks", params={"status": "OPEN"}).json["data"]
    assert [t["id"] for t in listed] == [task_id]
    updated = api.put(f"{hotel}/tasks/{task_id}", {"status": "IN_PROGRESS", "assignee": "li"})
    assert updated.status_code == 200, updated.text
    assert updated.json["status"] == "IN_PROGRESS"
    assert api.get(f"{hotel}/tasks/{task_id}").json["assignee"] == "li"
    board = api.get(hotel).json["data"]
    assert {r["room_number"]: r["open_tasks"] for r in board} == {"201": 0, "202": 1}
    assert_problem(api.get(f"{hotel}/tasks/{uuid.uuid4()}"), 404)


def test_other_env_sees_no_task(api, hotel):
    task_id = api.post(f"{hotel}/tasks", {"room_number": "202", "kind": "TURNDOWN"}).json["id"]
    other = api.for_env(uuid.uuid4())
    assert_problem(other.get(f"{hotel}/tasks/{task_id}"), 404)


def test_housekeeping_needs_its_scopes(api, hotel):
    token = mint_token(api.settings, env_id=api.env_id, scopes=["hotel:pms:housekeeping:read"])
    assert api.get(hotel, token=token).status_code == 200
    assert_problem(api.put(f"{hotel}/201", {"hk_status": "DIRTY"}, token=token), 403)
