"""The console edits external systems one at a time: the page lists one row per system, adds
one from the toolbar (the code entered), edits a row's system opened as it is (with its ETag)
and removes a row's; the others stay. Through the admin aliases, as the console sends them."""

from __future__ import annotations

from tests.api.test_admin_actions import _action, _definition, _rows, follow
from tests.helpers import assert_problem

SYSTEMS = "/v1/settings/external-systems"
CM = {"kind": "channel_manager", "endpoint_url": "https://cm.example/api",
      "secret_ref": "vault://pms/channel-manager"}


def test_add_edit_and_remove_one_system_from_the_console_keeps_the_others(api):
    assert api.put(f"{SYSTEMS}/channel-manager", CM).status_code == 201
    page = _definition(api, "external-systems")
    assert page["list_columns"] == ["id", "kind", "name", "endpoint_url", "secret_ref",
                                    "active"]
    add = _action(page, "add_system")
    assert add["on_row"] is False and add["params"] == {"code": ""}
    assert "kind" in add["schema"]["properties"]
    added = api.put(follow(add, None, "", {"code": "pos"}),
                    {"kind": "pos", "name": "Bar till", "identifiers": {"outlet": "1"}})
    assert added.status_code == 201, added.text
    rows = {r["id"]: r for r in _rows(api, "external-systems")}
    assert set(rows) == {"channel-manager", "pos"} and rows["pos"]["name"] == "Bar till"

    # edit opens with the system as it is (the domain GET of its path) and sends its ETag
    edit = _action(page, "edit_system")
    assert edit["on_row"] is True
    now = api.get(edit["domain_path"].replace("{code}", "pos"))
    assert now.status_code == 200
    edited = api.put(follow(edit, rows["pos"], ""), {**now.json, "name": "Lobby bar"},
                     headers={"If-Match": now.headers["etag"]})
    assert edited.status_code == 200, edited.text
    # a second save with the tag read before is refused, not lost
    assert_problem(api.put(follow(edit, rows["pos"], ""), {**now.json, "name": "Terrace"},
                           headers={"If-Match": now.headers["etag"]}), 412,
                   "precondition_failed")

    remove = _action(page, "remove_system")
    assert api.delete(follow(remove, rows["pos"], "")).status_code == 204
    left = _rows(api, "external-systems")
    assert [r["id"] for r in left] == ["channel-manager"]
    assert left[0]["endpoint_url"] == CM["endpoint_url"]


def test_the_settings_page_no_longer_replaces_every_system_at_once(api):
    page = _definition(api, "settings")
    assert all(a["domain_path"] != SYSTEMS for a in page["actions"])
