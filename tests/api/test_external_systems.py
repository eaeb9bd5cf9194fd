"""External systems one at a time: `GET|PUT|DELETE /v1/settings/external-systems/{code}` adds,
edits or removes one system and leaves the others as they are, with the document's ETag,
the same secret refusal, an event and an audit row per change."""

from __future__ import annotations

import uuid

from pms.context import Ctx
from tests.helpers import assert_problem, outbox_rows

SYSTEMS = "/v1/settings/external-systems"
POS = {"kind": "pos", "name": "Bar till", "identifiers": {"outlet": "1"}}
CM = {"kind": "channel_manager", "endpoint_url": "https://cm.example/api",
      "secret_ref": "vault://pms/channel-manager"}


def _events(api):
    return [e for e in outbox_rows(Ctx(env_id=api.env_id))
            if e.type == "hotel:pms:settings:updated"]


def test_add_edit_remove_one_system_keeps_the_others(api):
    assert api.put(f"{SYSTEMS}/channel-manager", CM).status_code == 201
    added = api.put(f"{SYSTEMS}/pos", POS)
    assert added.status_code == 201, added.text
    assert added.json["name"] == "Bar till"
    assert set(api.get(SYSTEMS).json["systems"]) == {"channel-manager", "pos"}

    read = api.get(f"{SYSTEMS}/pos")
    assert read.status_code == 200 and read.json["identifiers"] == {"outlet": "1"}
    assert read.headers["etag"] == api.get(SYSTEMS).headers["etag"]
    edited = api.put(f"{SYSTEMS}/pos", {**POS, "active": False},
                     headers={"If-Match": read.headers["etag"]})
    assert edited.status_code == 200, edited.text
    assert edited.json["active"] is False
    whole = api.get(SYSTEMS).json["systems"]
    assert whole["channel-manager"]["endpoint_url"] == CM["endpoint_url"]
    assert whole["pos"]["active"] is False

    assert api.delete(f"{SYSTEMS}/pos").status_code == 204
    assert list(api.get(SYSTEMS).json["systems"]) == ["channel-manager"]
    assert_problem(api.get(f"{SYSTEMS}/pos"), 404, "not_found")
    events = _events(api)
    assert len(events) == 4
    assert set(events[-1].data["systems"]) == {"channel-manager"}


def test_a_stale_tag_is_412_and_changes_nothing(api):
    first = api.put(f"{SYSTEMS}/pos", POS)
    stale = first.headers["etag"]
    assert api.put(f"{SYSTEMS}/channel-manager", CM,
                   headers={"If-Match": stale}).status_code == 201
    # another admin added a system since: the tag read before is stale for every system
    assert_problem(api.put(f"{SYSTEMS}/pos", {**POS, "name": "Lobby"},
                           headers={"If-Match": stale}), 412, "precondition_failed")
    assert_problem(api.delete(f"{SYSTEMS}/channel-manager", headers={"If-Match": stale}),
                   412, "precondition_failed")
    assert api.get(f"{SYSTEMS}/pos").json["name"] == "Bar till"
    assert "channel-manager" in api.get(SYSTEMS).json["systems"]


def test_bad_input_is_a_clear_4xx_and_writes_nothing(api):
    api.put(f"{SYSTEMS}/pos", POS)
    before = len(_events(api))
    refused = assert_problem(api.put(f"{SYSTEMS}/pms", {
        "kind": "pms", "identifiers": {"api_key": "sk_live_abcdefghijklmnop"}}), 422,
        "secret_refused")
    assert refused["errors"][0]["field"] == "identifiers.api_key"
    assert_problem(api.put(f"{SYSTEMS}/pms", {"kind": "pms", "password": "x"}), 422)
    assert_problem(api.put(f"{SYSTEMS}/Not%20A%20Code", POS), 422)
    assert_problem(api.put(f"{SYSTEMS}/pms", {"name": "no kind"}), 422)
    assert_problem(api.delete(f"{SYSTEMS}/never-there"), 404, "not_found")
    assert len(_events(api)) == before
    assert list(api.get(SYSTEMS).json["systems"]) == ["pos"]


def test_another_env_neither_reads_nor_removes_them(api):
    api.put(f"{SYSTEMS}/pos", POS)
    other = api.for_env(uuid.uuid4())
    assert_problem(other.get(f"{SYSTEMS}/pos"), 404)
    assert_problem(other.delete(f"{SYSTEMS}/pos"), 404)
    assert api.get(f"{SYSTEMS}/pos").status_code == 200
