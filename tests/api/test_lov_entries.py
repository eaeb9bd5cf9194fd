"""The env's own lists of values are edited one entry at a time (`PUT|DELETE
/v1/lov/{list}/{code}`), each change an event and an audit row; lists that derive from a
request schema, the catalog or a transition table are refused with 409 `lov_not_editable`."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from pms.context import Ctx
from pms.devkeys import mint_token
from pms.platform.ledger import EmbeddedLedger
from pms.services.catalog import lov
from pms.services.environments import initialize_environment
from tests.helpers import assert_problem, audit_actions, outbox_rows

REASONS = "/v1/lov/cancellation-reasons"


def _codes(api, url, **params):
    resp = api.get(url, params={"limit": 200, "include_inactive": "true", **params})
    assert resp.status_code == 200, resp.text
    return [(i["code"], i["name"], i["active"]) for i in resp.json["data"]]


def _lov_events(api):
    return [e for e in outbox_rows(Ctx(env_id=api.env_id)) if e.type.startswith("hotel:pms:lov_entry:")]


def test_an_entry_is_added_replaced_and_removed_with_an_event_and_audit_row_each(api):
    initialize_environment(api.env_id, ledger=EmbeddedLedger())
    added = api.put(f"{REASONS}/WEATHER", {"name": "Weather", "description": "Storm, snow"})
    assert added.status_code == 201, added.text
    assert added.json == {"code": "WEATHER", "name": "Weather", "description": "Storm, snow",
                          "active": True}
    # a new entry goes last; the seeded ones are untouched
    assert [c for c, _, _ in _codes(api, REASONS)] == [
        "GUEST_REQUEST", "NO_PAYMENT", "DUPLICATE", "OTHER", "WEATHER"]
    replaced = api.put(f"{REASONS}/DUPLICATE", {"name": "Booked twice", "active": False})
    assert replaced.status_code == 200, replaced.text
    # a replaced entry keeps its place; an inactive one leaves the default list
    assert _codes(api, REASONS)[2] == ("DUPLICATE", "Booked twice", False)
    assert "DUPLICATE" not in [i["code"] for i in api.get(REASONS).json["data"]]
    assert api.delete(f"{REASONS}/WEATHER").status_code == 204
    assert "WEATHER" not in [c for c, _, _ in _codes(api, REASONS)]

    events = _lov_events(api)
    assert [e.type.rsplit(":", 1)[1] for e in events] == ["created", "updated", "deleted"]
    assert events[0].data["list"] == "cancellation-reasons" and events[0].data["code"] == "WEATHER"
    assert events[1].data["name"] == "Booked twice" and events[1].data["active"] is False
    assert events[2].data["code"] == "WEATHER"
    actions = audit_actions(Ctx(env_id=api.env_id))
    assert [a for a in actions if a.startswith("lov_entry.")] == [
        "lov_entry.created", "lov_entry.updated", "lov_entry.deleted"]


def test_an_edited_entry_is_what_a_configuration_export_carries(api):
    """The codes are the env's as kept, `F&B` and `mini bar` too: URL-encoded in the path."""
    initialize_environment(api.env_id, ledger=EmbeddedLedger())
    url = "/v1/lov/folio-item-categories"
    assert api.put(f"{url}/{quote('spa & wellness', safe='')}",
                   {"name": "Spa & wellness"}).status_code == 201
    assert api.put(f"{url}/{quote('F&B', safe='')}", {"name": "Food and beverage"}
                   ).status_code == 200
    assert ("F&B", "Food and beverage", True) in _codes(api, url)
    assert api.delete(f"{url}/{quote('mini bar', safe='')}").status_code == 204
    codes = [c for c, _, _ in _codes(api, url)]
    assert "spa & wellness" in codes and "mini bar" not in codes


def test_sort_order_places_an_entry(api):
    assert api.put("/v1/lov/service-request-kinds/IRONING",
                   {"name": "Ironing", "sort_order": 0}).status_code == 201
    assert api.put("/v1/lov/service-request-kinds/AAA", {"name": "Aaa", "sort_order": 5}
                   ).status_code == 201
    assert [c for c, _, _ in _codes(api, "/v1/lov/service-request-kinds")] == ["IRONING", "AAA"]


@pytest.mark.parametrize("name", sorted(lov.SCHEMA_LISTS))
def test_a_schema_backed_list_is_not_edited_here(api, name):
    before = _codes(api, f"/v1/lov/{name}")
    resp = api.put(f"/v1/lov/{name}/CALL_CENTER", {"name": "Call centre"})
    problem = assert_problem(resp, 409, "lov_not_editable")
    assert "request schema" in problem["detail"] and name in problem["detail"]
    assert_problem(api.delete(f"/v1/lov/{name}/{before[0][0]}"), 409, "lov_not_editable")
    assert _codes(api, f"/v1/lov/{name}") == before
    assert _lov_events(api) == []


def test_catalog_and_transition_lists_are_not_edited_here(api):
    catalog = assert_problem(api.put("/v1/lov/room-types/DBL", {"name": "Double"}), 409,
                             "lov_not_editable")
    assert "catalog" in catalog["detail"]
    machine = assert_problem(api.delete("/v1/lov/reservation-statuses/CONFIRMED"), 409,
                             "lov_not_editable")
    assert "transition table" in machine["detail"]


def test_bad_input_is_a_clear_4xx(api):
    assert_problem(api.put("/v1/lov/no-such-list/X", {"name": "X"}), 404, "not_found")
    assert_problem(api.delete(f"{REASONS}/NEVER_THERE"), 404, "not_found")
    assert_problem(api.put(f"{REASONS}/X", {"name": ""}), 422)
    assert_problem(api.put(f"{REASONS}/X", {"name": "X", "env_id": "x"}), 422)
    assert_problem(api.put(f"{REASONS}/{quote(' padded', safe='')}", {"name": "X"}), 422)
    assert_problem(api.put(f"{REASONS}/{'A' * 65}", {"name": "X"}), 422)
    assert _lov_events(api) == []


def test_writing_needs_the_lov_write_scope_and_stays_in_its_env(api):
    read_only = mint_token(api.settings, env_id=api.env_id, scopes=["hotel:pms:lov:read"])
    assert_problem(api.put(f"{REASONS}/X", {"name": "X"}, token=read_only), 403,
                   "missing_scope")
    assert api.put(f"{REASONS}/MINE", {"name": "Mine"}).status_code == 201
    import uuid

    other = api.for_env(uuid.uuid4())
    assert "MINE" not in [c for c, _, _ in _codes(other, REASONS)]
    assert_problem(other.delete(f"{REASONS}/MINE"), 404)
    assert "MINE" in [c for c, _, _ in _codes(api, REASONS)]


def test_the_console_adds_edits_and_removes_an_entry_of_the_envs_own_lists(api):
    from tests.api.test_admin_actions import _action, _definition, _rows, follow

    initialize_environment(api.env_id, ledger=EmbeddedLedger())
    page = _definition(api, "lists-of-values")
    rows = _rows(api, "lists-of-values")
    assert {r["list"] for r in rows} == set(lov.SEEDED_LISTS)  # derived lists are not here
    add = _action(page, "add_entry")
    assert add["on_row"] is False and "name" in add["schema"]["properties"]
    url = follow(add, None, "", {"list": "folio-item-categories", "code": "spa"})
    assert api.put(url, {"name": "Spa"}).status_code == 201
    row = next(r for r in _rows(api, "lists-of-values") if r["code"] == "spa")
    assert row["list"] == "folio-item-categories" and row["id"] == "folio-item-categories/spa"
    edit = _action(page, "edit_entry")
    assert edit["on_row"] is True
    edited = api.put(follow(edit, row, ""), {"name": "Spa and wellness", "active": False})
    assert edited.status_code == 200, edited.text
    row = next(r for r in _rows(api, "lists-of-values") if r["code"] == "spa")
    assert row["name"] == "Spa and wellness" and row["active"] is False
    assert api.delete(follow(_action(page, "remove_entry"), row, "")).status_code == 204
    assert "spa" not in [r["code"] for r in _rows(api, "lists-of-values")]
    # an entered list that derives from a schema is refused with the reason, not a 500
    bad = follow(add, None, "", {"list": "reservation-channels", "code": "CALL_CENTER"})
    assert_problem(api.put(bad, {"name": "Call centre"}), 409, "lov_not_editable")


def test_one_value_is_read_by_its_code_inactive_too(api):
    assert api.put(f"{REASONS}/WEATHER", {"name": "Weather", "active": False}).status_code == 201
    got = api.get(f"{REASONS}/WEATHER")
    assert got.status_code == 200, got.text
    assert got.json == {"code": "WEATHER", "name": "Weather", "description": None,
                        "active": False}
    assert api.get("/v1/lov/reservation-channels/PHONE").json["name"] == "Phone"
    assert_problem(api.get("/v1/lov/reservation-channels/CALL_CENTER"), 404, "not_found")
    assert_problem(api.get(f"{REASONS}/NEVER"), 404, "not_found")
    assert_problem(api.get("/v1/lov/room-types/DBL"), 422)  # a property's list needs parent


def test_if_match_refuses_a_stale_entry_and_changes_nothing(api):
    first = api.put(f"{REASONS}/WEATHER", {"name": "Weather"})
    read = api.get(f"{REASONS}/WEATHER")
    assert read.headers["etag"] == first.headers["etag"]
    changed = api.put(f"{REASONS}/WEATHER", {"name": "Storm"},
                      headers={"If-Match": read.headers["etag"]})
    assert changed.status_code == 200 and changed.headers["etag"] != read.headers["etag"]
    # another admin's save with the tag read before is refused, not lost
    assert_problem(api.put(f"{REASONS}/WEATHER", {"name": "Snow"},
                           headers={"If-Match": read.headers["etag"]}), 412,
                   "precondition_failed")
    assert_problem(api.delete(f"{REASONS}/WEATHER", headers={"If-Match": read.headers["etag"]}),
                   412, "precondition_failed")
    assert api.get(f"{REASONS}/WEATHER").json["name"] == "Storm"
    assert api.delete(f"{REASONS}/WEATHER",
                      headers={"If-Match": changed.headers["etag"]}).status_code == 204
    # an entry removed since it was read: the save is refused, not a silent re-create
    assert_problem(api.put(f"{REASONS}/WEATHER", {"name": "Back"},
                           headers={"If-Match": changed.headers["etag"]}), 412,
                   "precondition_failed")
    assert_problem(api.get(f"{REASONS}/WEATHER"), 404)
