"""Admin page actions take their path parameters from the map each action declares (the row's
column, the property, or what the user enters), as the console does; a registry that does not
resolve refuses to start; a list answers only its own filters."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest

from pms.api import admin, admin_pages, admin_ui
from pms.models import Room
from pms.routes import all_routes
from pms.services.admin.admin_lists import ListSource, Lookup
from tests.api.recipes import World
from tests.helpers import assert_problem, owned_method, random_ref

P = "/v1/properties/{property_id}"


def _definition(api: Any, page: str) -> dict[str, Any]:
    resp = api.get(f"/v1/admin/ui/{page}")
    assert resp.status_code == 200, resp.text
    return resp.json


def _action(definition: dict[str, Any], name: str) -> dict[str, Any]:
    return next(a for a in definition["actions"] if a["name"] == name)


def follow(action: dict[str, Any], row: dict[str, Any] | None, picked: str,
           entered: dict[str, str] | None = None) -> str:
    """The alias URL the console builds: each parameter from where the action's map says."""
    url = action["path"]
    for name, source in action["params"].items():
        if source == "property_id":
            value = (row or {}).get("property_id") or picked
        elif source == "":
            value = (entered or {})[name]
        else:
            assert row is not None, (action["name"], name)
            value = row[source]
        assert value, (action["name"], name, source)
        url = url.replace("{" + name + "}", str(value))
    assert "{" not in url, url
    return url


def _rows(api: Any, page: str, **params: Any) -> list[dict[str, Any]]:
    resp = api.get(f"/v1/admin/{page}", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json["data"]


def _company(world: World) -> str:
    return world._post(world.fill(f"{P}/profiles"),
                       {"kind": "COMPANY", "company_name": "Acme " + random_ref("c")})["id"]


def test_set_room_status_from_a_housekeeping_row_reaches_its_room(api):
    world = World(api)
    number = api.get(world.fill(f"{P}/rooms/{{id}}", {"id": world.room_id})).json["room_number"]
    task = world._post(world.fill(f"{P}/housekeeping/tasks"),
                       {"room_number": number, "kind": "INSPECTION"})["id"]
    definition = _definition(api, "housekeeping")
    assert "room_number" in definition["list_columns"]
    row = next(r for r in _rows(api, "housekeeping", property_id=world.property_id)
               if r["id"] == task)
    assert row["room_number"] == number  # the room's number, read by the page's lookup
    action = _action(definition, "set_room_status")
    assert action["params"] == {"property_id": "property_id", "room_number": "room_number"}
    assert action["on_row"] is True
    resp = api.put(follow(action, row, world.property_id), {"hk_status": "DIRTY"})
    assert resp.status_code == 200, resp.text
    room = api.get(world.fill(f"{P}/rooms/{{id}}", {"id": world.room_id})).json
    assert room["hk_status"] == "DIRTY"


def test_link_companies_from_a_negotiated_rate_row_takes_the_company_entered(api):
    world = World(api)
    plan = world._post(world.fill(f"{P}/rate-plans"), {"code": random_ref("NG"),
                                                       "name": "Corp", "negotiated": True})["id"]
    company = _company(world)
    definition = _definition(api, "negotiated_rates")
    action = _action(definition, "link_companies")
    assert action["params"] == {"property_id": "property_id", "profile_id": ""}
    row = next(r for r in _rows(api, "negotiated_rates", property_id=world.property_id)
               if r["id"] == plan)
    resp = api.put(follow(action, row, world.property_id, {"profile_id": company}),
                   {"rate_plan_ids": [plan]})
    assert resp.status_code == 200, resp.text
    assert resp.json["rate_plan_ids"] == [plan]


def test_corporate_accounts_list_payment_methods_that_can_be_approved(api):
    world = World(api)
    company = _company(world)
    definition = _definition(api, "corporate-accounts")
    submit = _action(definition, "submit_payment_method")
    assert submit["on_row"] is False and submit["params"]["profile_id"] == ""
    method = api.post(follow(submit, None, world.property_id, {"profile_id": company}),
                      {"payment_method_id": owned_method(company),
                       "label": "Amex"})
    assert method.status_code == 201, method.text
    rows = _rows(api, "corporate-accounts", company_profile_id=company)
    assert [(r["id"], r["status"], r["label"]) for r in rows] == [
        (method.json["id"], "PENDING", "Amex")]
    approve = _action(definition, "approve_payment_method")
    assert "PENDING" in approve["allowed_from"]  # the console enables it on this row
    resp = api.post(follow(approve, rows[0], world.property_id), {"approval": "POSTPAY"})
    assert resp.status_code == 200, resp.text
    assert _rows(api, "corporate-accounts", company_profile_id=company)[0]["status"] \
        == "POSTPAY"
    for name in ("reject_payment_method", "suspend_payment_method",
                 "resubmit_payment_method"):
        assert _action(definition, name)["params"] == {
            "property_id": "property_id", "profile_id": "company_profile_id", "id": "id"}


def test_a_company_gets_its_first_user_from_the_toolbar(api):
    world = World(api)
    company = _company(world)
    assert _rows(api, "company_users", company_profile_id=company) == []
    definition = _definition(api, "company_users")
    add = _action(definition, "add_user")
    assert add["on_row"] is False  # no row needed: the company is entered
    resp = api.post(follow(add, None, world.property_id, {"profile_id": company}),
                    {"traveler_profile_id": world.profile_id, "role": "ADMIN"})
    assert resp.status_code == 201, resp.text
    rows = _rows(api, "company_users", company_profile_id=company)
    assert [(r["traveler_profile_id"], r["role"]) for r in rows] == [(world.profile_id, "ADMIN")]
    remove = _action(definition, "remove_user")
    assert remove["on_row"] is True
    assert follow(remove, rows[0], world.property_id).endswith(
        f"/companies/{company}/users/{rows[0]['id']}")


def test_every_row_action_takes_its_parameters_from_columns_the_list_has(api):
    for name in admin_pages.PAGES:
        definition = _definition(api, name)
        for action in definition["actions"]:
            declared = set(action["params"])
            assert declared == set(admin_pages.path_params(action["domain_path"])), action["name"]
            for source in action["params"].values():
                assert source in ("", "property_id", *definition["list_columns"]), \
                    (name, action["name"], source)


# -- the registry refuses to start when a page does not resolve ----------------------------

def _broken(**change: Any) -> dict[str, admin_pages.PageDef]:
    page = admin_pages.PAGES["housekeeping"]
    return {**admin_pages.PAGES, "housekeeping": dataclasses.replace(page, **change)}


HK = admin_pages.PAGES["housekeeping"]
BROKEN = {
    "column": _broken(source=dataclasses.replace(HK.source, columns=("room_nr",))),
    "filter": _broken(source=dataclasses.replace(HK.source, filters=("floor",))),
    "lookup": _broken(source=dataclasses.replace(
        HK.source, lookups=(Lookup("room_number", "room_id", Room, "number"),))),
    "lov list": _broken(lovs={"kind": "no-such-list"}),
    "lov field": _broken(lovs={"no_such_field": "housekeeping-task-kinds"}),
    "route": _broken(actions=(admin_pages.Action("x", "PUT", f"{P}/housekeeping/nowhere"),)),
    "parameter": _broken(actions=(admin_pages.Action(
        "set_room_status", "PUT", f"{P}/housekeeping/{{room_number}}",
        params={"room_number": "room_id_typo"}),)),
    "stray parameter": _broken(actions=(admin_pages.Action(
        "update_task", "PUT", f"{P}/housekeeping/tasks/{{id}}",
        params={"id": "id", "task_id": "id"}),)),
    "search column": _broken(source=dataclasses.replace(
        HK.source, searches={"who": ("assignee_name",)})),
    "choices of no filter": _broken(source=dataclasses.replace(
        HK.source, choices={"floor": ("1", "2")})),
    "fill column": _broken(actions=(admin_pages.Action(
        "update_task", "PUT", f"{P}/housekeeping/tasks/{{id}}", params={"id": "id"},
        fill={"status": "no_such_column"}),)),
    "fill field": _broken(actions=(admin_pages.Action(
        "update_task", "PUT", f"{P}/housekeeping/tasks/{{id}}", params={"id": "id"},
        fill={"no_such_field": "status"}),)),
    "then": _broken(actions=(admin_pages.Action(
        "update_task", "PUT", f"{P}/housekeeping/tasks/{{id}}", params={"id": "id"},
        then="no_such_action"),)),
}


@pytest.mark.parametrize("what", sorted(BROKEN))
def test_a_broken_page_refuses_to_start(monkeypatch, what):
    problems = admin.registry_problems(BROKEN[what], all_routes())
    assert problems and all(p.startswith("admin page housekeeping:") for p in problems), problems
    monkeypatch.setattr(admin, "PAGES", BROKEN[what])
    with pytest.raises(admin.RegistryError, match="admin page housekeeping"):
        all_routes()  # what the app assembles when it starts


def test_the_registry_as_shipped_resolves():
    assert admin.registry_problems(admin_pages.PAGES, all_routes()) == []


def test_a_source_without_list_source_has_no_filters():
    assert admin_ui.list_filters(admin_pages.PAGES["reports"]) == []
    assert isinstance(admin_pages.PAGES["housekeeping"].source, ListSource)


# -- filters: a list's own, refused otherwise ----------------------------------------------

def test_unknown_admin_list_filter_is_422(api):
    resp = api.get("/v1/admin/rates", params={"nope": "x"})
    assert_problem(resp, 422)
    # a filter of another list is not one of this list's either
    assert_problem(api.get("/v1/admin/rates", params={"role": "ADMIN"}), 422)
    assert_problem(api.get("/v1/admin/profiles", params={"property_id": str(uuid.uuid4())}),
                   422)
    assert api.get("/v1/admin/rates", params={"code": "NONE"}).status_code == 200


def test_openapi_advertises_each_lists_own_filters(api):
    document = api.get("/v1/openapi.json").json
    for name, page in admin_pages.PAGES.items():
        operation = document["paths"][f"/v1/admin/{name}"]["get"]
        query = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        assert query == {"limit", "cursor", *admin_ui.list_filters(page)}, name


def test_reservation_and_front_desk_rows_name_their_room_type_rate_plan_and_room(api):
    from tests.api.recipes import _new_reservation

    world = World(api)
    url, body = _new_reservation(world)
    made = api.post(url, body)
    assert made.status_code == 201, made.text
    property_id = url.split("/")[3]
    rows = {r["id"]: r for r in _rows(api, "reservations", property_id=property_id)}
    row = rows[made.json["id"]]
    room_type = api.get(f"/v1/properties/{property_id}/room-types/{row['room_type_id']}").json
    plan = api.get(f"/v1/properties/{property_id}/rate-plans/{row['rate_plan_id']}").json
    assert (row["room_type"], row["rate_plan"]) == (room_type["name"], plan["code"])
    desk = {r["id"]: r for r in _rows(api, "frontdesk", property_id=property_id)}
    assert "room_number" in desk[made.json["id"]]  # null until a room is assigned
