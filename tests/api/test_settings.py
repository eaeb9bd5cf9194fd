"""Settings: module configuration by merge patch with ETag/If-Match, env-wide or per
property, validated per module, audited and announced; external systems without secrets."""

from __future__ import annotations

import uuid

from pms.context import Ctx
from pms.services.catalog import settings as settings_service
from tests.api.recipes import World
from tests.helpers import RawBody, assert_problem, audit_actions, outbox_rows

MODULES = "/v1/settings/modules"
SYSTEMS = "/v1/settings/external-systems"
MERGE = "application/merge-patch+json"


def _patch(api, patch, etag=None, url=MODULES, params=None):
    headers = {"Content-Type": MERGE}
    if etag is not None:
        headers["If-Match"] = etag
    return api.request("PATCH", url, json=RawBody(json=patch, headers=headers), params=params)


def test_defaults_include_blocks_switch_off_with_an_etag(api):
    resp = api.get(MODULES)
    assert resp.status_code == 200
    assert resp.json["modules"]["blocks"] == {"tentative_deducts_inventory": False}
    assert resp.json["property_id"] is None
    assert resp.headers["etag"].startswith('"') and resp.headers["etag"].endswith('"')
    ctx = Ctx(env_id=api.env_id)
    assert settings_service.effective(ctx)["blocks"]["tentative_deducts_inventory"] is False


def test_patch_needs_if_match_and_refuses_a_stale_one(api):
    assert_problem(_patch(api, {"kiosk": {"enabled": True}}), 428, "precondition_required")
    etag = api.get(MODULES).headers["etag"]
    first = _patch(api, {"kiosk": {"enabled": True}}, etag)
    assert first.status_code == 200, first.text
    assert first.json["modules"]["kiosk"]["enabled"] is True
    assert first.headers["etag"] != etag
    assert api.get(MODULES).headers["etag"] == first.headers["etag"]
    # the tag read before the change is no longer current
    assert_problem(_patch(api, {"kiosk": {"enabled": False}}, etag), 412, "precondition_failed")
    assert api.get(MODULES).json["modules"]["kiosk"]["enabled"] is True


def test_a_change_is_audited_and_announced(api):
    ctx = Ctx(env_id=api.env_id)
    etag = api.get(MODULES).headers["etag"]
    resp = _patch(api, {"night_audit": {"enabled": False}}, etag)
    assert resp.status_code == 200
    events = [e for e in outbox_rows(ctx) if e.type == "hotel:pms:settings:updated"]
    assert len(events) == 1
    assert events[0].data["modules"]["night_audit"]["enabled"] is False
    assert events[0].data["version"] == resp.headers["etag"].strip('"')
    assert "settings.updated" in audit_actions(ctx)


def test_a_property_overrides_the_env_and_null_removes_the_override(api):
    world = World(api)
    pid = {"property_id": world.property_id}
    etag = api.get(MODULES, params=pid).headers["etag"]
    resp = _patch(api, {"blocks": {"tentative_deducts_inventory": True}}, etag, params=pid)
    assert resp.status_code == 200, resp.text
    assert resp.json["overrides"] == {"blocks": {"tentative_deducts_inventory": True}}
    ctx = Ctx(env_id=api.env_id)
    assert settings_service.effective(ctx, uuid.UUID(world.property_id))["blocks"][
        "tentative_deducts_inventory"] is True
    assert settings_service.effective(ctx)["blocks"]["tentative_deducts_inventory"] is False
    assert api.get(MODULES).json["modules"]["blocks"]["tentative_deducts_inventory"] is False
    # an env change shows through where the property does not override it
    env_tag = api.get(MODULES).headers["etag"]
    assert _patch(api, {"kiosk": {"enabled": True}}, env_tag).status_code == 200
    mine = api.get(MODULES, params=pid)
    assert mine.json["modules"]["kiosk"]["enabled"] is True
    # null removes the property's override: the env's value (the default) applies again
    resp = _patch(api, {"blocks": None}, mine.headers["etag"], params=pid)
    assert resp.status_code == 200, resp.text
    assert resp.json["overrides"] == {}
    assert resp.json["modules"]["blocks"]["tentative_deducts_inventory"] is False


def test_module_settings_are_validated_by_schema(api):
    etag = api.get(MODULES).headers["etag"]
    assert_problem(_patch(api, {"nope": {"x": 1}}, etag), 422)
    assert_problem(_patch(api, {"blocks": {"tentative_deducts_inventory": "yes"}}, etag), 422)
    assert_problem(_patch(api, {"blocks": {"unknown_switch": True}}, etag), 422)
    assert_problem(_patch(api, {"blocks": 3}, etag), 422)
    assert api.get(MODULES).headers["etag"] == etag  # nothing was written


def test_another_envs_property_settings_answer_404(api):
    world = World(api)
    intruder = api.for_env(uuid.uuid4())
    pid = {"property_id": world.property_id}
    assert_problem(intruder.get(MODULES, params=pid), 404)
    assert_problem(_patch(intruder, {"kiosk": {"enabled": True}}, "*", params=pid), 404)
    # and the env-wide document of one env is not another's
    etag = api.get(MODULES).headers["etag"]
    assert _patch(api, {"kiosk": {"enabled": True}}, etag).status_code == 200
    assert intruder.get(MODULES).json["modules"]["kiosk"]["enabled"] is False


SYSTEM = {"kind": "channel_manager", "endpoint_url": "https://cm.example/api",
          "identifiers": {"hotel_code": "H1"}, "secret_ref": "vault://pms/cm"}


def test_external_systems_keep_references_never_secrets(api):
    resp = api.put(SYSTEMS, {"systems": {"cm": SYSTEM}})
    assert resp.status_code == 200, resp.text
    assert resp.json["systems"]["cm"]["secret_ref"] == "vault://pms/cm"
    for bad in ({**SYSTEM, "identifiers": {"api_key": "abc"}},
                {**SYSTEM, "identifiers": {"client_secret": "s"}},
                {**SYSTEM, "identifiers": {"auth": "Bearer abc.def"}}):
        body = assert_problem(api.put(SYSTEMS, {"systems": {"cm": bad}}), 422, "secret_refused")
        assert "abc" not in str(body)
    # a system's own fields are a closed schema: a credential field is an unknown field on PUT
    body = assert_problem(api.put(SYSTEMS, {"systems": {"cm": {**SYSTEM, "password": "hunter2"}}}),
                          422)
    assert "hunter2" not in str(body)
    # and, in a merge patch (free-form until merged), refused as a secret by its name
    assert_problem(_patch(api, {"systems": {"cm": {"password": "hunter2"}}}, url=SYSTEMS), 422,
                   "secret_refused")
    assert_problem(_patch(api, {"systems": {"cm": {"token": "t"}}}, url=SYSTEMS), 422,
                   "secret_refused")
    assert api.get(SYSTEMS).json["systems"] == {"cm": {**SYSTEM, "name": None, "active": True}}


def test_external_systems_merge_patch_and_if_match(api):
    first = api.put(SYSTEMS, {"systems": {"cm": SYSTEM}})
    etag = first.headers["etag"]
    resp = _patch(api, {"systems": {"pos": {"kind": "pos"}, "cm": {"identifiers": {
        "hotel_code": "H2"}}}}, etag, url=SYSTEMS)
    assert resp.status_code == 200, resp.text
    assert set(resp.json["systems"]) == {"cm", "pos"}
    assert resp.json["systems"]["cm"]["identifiers"] == {"hotel_code": "H2"}
    assert_problem(_patch(api, {"systems": {"pos": None}}, etag, url=SYSTEMS), 412)
    resp = _patch(api, {"systems": {"pos": None}}, url=SYSTEMS)
    assert set(resp.json["systems"]) == {"cm"}
    assert_problem(api.put(SYSTEMS, {"systems": {"cm": {**SYSTEM, "endpoint_url": "ftp://x"}}}),
                   422)
    assert api.for_env(uuid.uuid4()).get(SYSTEMS).json["systems"] == {}


def test_deleting_a_property_takes_its_settings_overrides_with_it(api):
    prop = api.post("/v1/properties", {"propertyCode": "SETDEL" + uuid.uuid4().hex[:4].upper(),
                                       "timezone": "UTC", "currencyCode": "EUR"}).json
    pid = {"property_id": prop["id"]}
    etag = api.get(MODULES, params=pid).headers["etag"]
    assert _patch(api, {"kiosk": {"enabled": True}}, etag, params=pid).status_code == 200
    assert api.delete(f"/v1/properties/{prop['id']}").status_code == 204
    assert_problem(api.get(MODULES, params=pid), 404)
