"""Configuration bundles ("Beyond the anchors"): a property's configuration exports as
one versioned bundle named by codes, and applies to another property of the env with a dry run
showing the difference first; the apply runs the domain's service functions in one transaction
(their events and audit rows), never deletes, and refuses a bad bundle with 422 problem+json.
SQLite and PostgreSQL (the `api` fixture)."""

from __future__ import annotations

import json
import uuid

from pms.context import Ctx
from pms.platform.ledger import EmbeddedLedger
from pms.services.environments import initialize_environment
from tests.helpers import RawBody, assert_problem, audit_actions, outbox_rows

MERGE = "application/merge-patch+json"


def _bundle_url(property_id: str, dry_run: bool | None = None) -> str:
    url = f"/v1/properties/{property_id}/config-bundle"
    return url if dry_run is None else f"{url}?dry_run={str(dry_run).lower()}"


def _property(api, code: str | None = None) -> str:
    resp = api.post("/v1/properties", json={
        "propertyCode": code or "CB" + uuid.uuid4().hex[:6].upper(), "name": "Bundle Hotel",
        "timezone": "Europe/Berlin", "currencyCode": "EUR"})
    assert resp.status_code == 201, resp.text
    return resp.json["id"]


def _ok(resp, status=200):
    assert resp.status_code == status, resp.text
    return resp.json


def _configured(api) -> str:
    """A property with two packages, an item, two room types, two rate plans (one naming a
    package), a kiosk configuration and a module override."""
    pid = _property(api)
    base = f"/v1/properties/{pid}"
    for code, price in (("BRKF", "15.00"), ("PARK", "8.50")):
        _ok(api.post(f"{base}/packages", json={"code": code, "name": code.title(),
                                               "price": price, "calculation": "PER_NIGHT"}), 201)
    _ok(api.post(f"{base}/items", json={"code": "WATER", "name": "Water", "category": "mini bar",
                                        "price": "3.00"}), 201)
    for code, occupancy in (("DBL", 2), ("FAM", 4)):
        _ok(api.post(f"{base}/room-types", json={"code": code, "name": f"Room {code}",
                                                 "max_occupancy": occupancy}), 201)
    _ok(api.post(f"{base}/rate-plans", json={"code": "BAR", "name": "Best available"}), 201)
    _ok(api.post(f"{base}/rate-plans", json={
        "code": "BB", "name": "Bed and breakfast", "package_codes": ["BRKF"],
        "cancellation_policy": {"fee_type": "FIRST_NIGHT"}}), 201)
    _ok(api.put(f"{base}/kiosk-config", json={
        "enabled_modes": ["CHECK_IN", "CHECK_OUT"], "add_on_package_codes": ["PARK"],
        "lockdown": False, "max_keys_per_stay": 3}))
    etag = api.get("/v1/settings/modules", params={"property_id": pid}).headers["etag"]
    _ok(api.request("PATCH", f"/v1/settings/modules?property_id={pid}", json=RawBody(
        json={"housekeeping": {"stayover_tasks": False}},
        headers={"Content-Type": MERGE, "If-Match": etag})))
    return pid


def _sections(bundle: dict) -> dict:
    return {k: v for k, v in bundle.items() if k not in ("source", "content_hash")}


def test_export_apply_to_a_new_property_then_nothing_left_to_change(api):
    source = _configured(api)
    bundle = _ok(api.get(_bundle_url(source)))
    assert bundle["bundle_version"] == 1 and bundle["content_hash"].startswith("sha256:")
    assert [p["code"] for p in bundle["packages"]] == ["BRKF", "PARK"]
    assert [r["code"] for r in bundle["room_types"]] == ["DBL", "FAM"]
    assert bundle["kiosk_config"]["add_on_package_codes"] == ["PARK"]
    assert bundle["settings"] == {"housekeeping": {"stayover_tasks": False}}
    # no ids: the bundle applies elsewhere
    text = json.dumps(bundle)
    assert source not in text and '"id"' not in text and "property_id" not in text

    target = _property(api)
    ctx = Ctx(env_id=api.env_id)
    events_before, audits_before = len(outbox_rows(ctx)), len(audit_actions(ctx))
    dry = _ok(api.post(_bundle_url(target, True), json=bundle))
    assert dry["dry_run"] is True and dry["content_hash"] == bundle["content_hash"]
    rows = [c for c in dry["changes"] if c["section"] != "lovs"]
    assert {c["action"] for c in rows} == {"create"} and len(rows) == 9
    assert dry["counts"]["create"] == 9 and dry["counts"]["update"] == 0
    # a dry run writes nothing
    assert _ok(api.get(f"/v1/properties/{target}/room-types"))["data"] == []
    assert (len(outbox_rows(ctx)), len(audit_actions(ctx))) == (events_before, audits_before)

    done = _ok(api.post(_bundle_url(target, False), json=bundle))
    assert done["dry_run"] is False and done["changes"] == dry["changes"]
    # the domain's own events and audit rows, one pair per change
    new_events = outbox_rows(ctx)[events_before:]
    assert len(new_events) == 9 and len(audit_actions(ctx)) - audits_before == 9
    assert sorted(e.type for e in new_events) == sorted(
        ["hotel:pms:package:created"] * 2 + ["hotel:pms:item:created"]
        + ["hotel:pms:room_type:created"] * 2 + ["hotel:pms:rate_plan:created"] * 2
        + ["hotel:pms:kiosk_config:updated", "hotel:pms:settings:updated"])

    again = _ok(api.post(_bundle_url(target, True), json=bundle))
    assert {c["action"] for c in again["changes"]} == {"unchanged"}
    assert again["counts"]["unchanged"] == len(again["changes"])
    # round trip: the target exports the same configuration, the same hash
    copy = _ok(api.get(_bundle_url(target)))
    assert _sections(copy) == _sections(bundle)
    assert copy["content_hash"] == bundle["content_hash"]


def test_a_changed_row_shows_its_fields_and_the_apply_never_deletes(api):
    source = _configured(api)
    bundle = _ok(api.get(_bundle_url(source)))
    target = _property(api)
    _ok(api.post(_bundle_url(target), json=bundle))
    base = f"/v1/properties/{target}"
    _ok(api.post(f"{base}/room-types", json={"code": "SUITE", "name": "Suite"}), 201)
    fam = next(r for r in _ok(api.get(f"{base}/room-types"))["data"] if r["code"] == "FAM")
    _ok(api.put(f"{base}/room-types/{fam['id']}", json={"name": "Family", "sort_order": 5}))

    dry = _ok(api.post(_bundle_url(target, True), json=bundle))
    by_code = {(c["section"], c["code"]): c for c in dry["changes"]}
    assert by_code[("room_types", "FAM")]["action"] == "update"
    assert by_code[("room_types", "FAM")]["changed"] == ["name", "sort_order"]
    assert by_code[("room_types", "SUITE")]["action"] == "kept"
    assert by_code[("room_types", "DBL")]["action"] == "unchanged"

    _ok(api.post(_bundle_url(target, False), json=bundle))
    codes = {r["code"]: r for r in _ok(api.get(f"{base}/room-types"))["data"]}
    assert set(codes) == {"DBL", "FAM", "SUITE"}  # SUITE kept
    assert codes["FAM"]["name"] == "Room FAM" and codes["FAM"]["sort_order"] == 0


def test_the_apply_is_one_transaction(api):
    """The packages come first, the item after them: the item's price is refused by the
    domain (more digits than the currency has), so the packages made before it are undone."""
    target = _property(api)
    ctx = Ctx(env_id=api.env_id)
    before = (len(outbox_rows(ctx)), len(audit_actions(ctx)))
    bundle = {"bundle_version": 1,
              "packages": [{"code": "BRKF", "name": "Breakfast", "price": "15.00"}],
              "items": [{"code": "WATER", "name": "Water", "category": "other",
                         "price": "3.004"}]}
    assert _ok(api.post(_bundle_url(target, True), json=bundle))["counts"]["create"] == 2
    assert_problem(api.post(_bundle_url(target, False), json=bundle), 422)
    assert _ok(api.get(f"/v1/properties/{target}/packages"))["data"] == []
    assert (len(outbox_rows(ctx)), len(audit_actions(ctx))) == before


def test_a_bad_bundle_is_422_problem_json(api):
    source = _configured(api)
    bundle = _ok(api.get(_bundle_url(source)))
    target = _property(api)
    for dry_run in (True, False):
        url = _bundle_url(target, dry_run)
        assert_problem(api.post(url, json={**bundle, "bundle_version": 2}), 422)
        assert_problem(api.post(url, json={**bundle, "room_types": [{"code": "X"}]}), 422)
        assert_problem(api.post(url, json={**bundle, "id": str(uuid.uuid4())}), 422)
        tampered = {**bundle, "items": [{**bundle["items"][0], "price": "4.00"}]}
        assert_problem(api.post(url, json=tampered), 422, "bundle_hash_mismatch")
        twice = {**bundle, "content_hash": None, "room_types": bundle["room_types"] * 2}
        body = assert_problem(api.post(url, json=twice), 422, "invalid_bundle")
        assert body["errors"][0]["field"] == "room_types[2].code"
        orphan = {"bundle_version": 1, "rate_plans": [{"code": "BB", "name": "B&B",
                                                       "package_codes": ["NOPE"]}]}
        body = assert_problem(api.post(url, json=orphan), 422, "invalid_bundle")
        assert body["errors"][0]["field"] == "rate_plans[0].package_codes"
        assert_problem(api.post(url, json={"bundle_version": 1, "lovs": {"no-such": []}}), 422)
    assert_problem(api.post(_bundle_url(target), json=[1, 2]), 422)
    assert _ok(api.get(f"/v1/properties/{target}/room-types"))["data"] == []


def test_a_currency_the_domain_cannot_change_is_refused(api):
    source = _configured(api)
    bundle = _ok(api.get(_bundle_url(source)))
    target = _property(api)
    _ok(api.post(_bundle_url(target), json=bundle))
    priced = {**bundle, "content_hash": None,
              "packages": [{**bundle["packages"][0], "currency": "USD"}, bundle["packages"][1]]}
    body = assert_problem(api.post(_bundle_url(target, True), json=priced), 422, "invalid_bundle")
    assert body["errors"][0]["field"] == "packages[0].currency"


def test_another_env_neither_reads_nor_applies_a_bundle(api):
    source = _configured(api)
    bundle = _ok(api.get(_bundle_url(source)))
    other = api.for_env(uuid.uuid4())
    assert_problem(other.get(_bundle_url(source)), 404)
    for dry_run in (True, False):
        assert_problem(other.post(_bundle_url(source, dry_run), json=bundle), 404)
    # the other env's own property takes the bundle, and the source is untouched
    theirs = _property(other)
    assert _ok(other.post(_bundle_url(theirs), json=bundle))["counts"]["create"] == 9
    assert _sections(_ok(api.get(_bundle_url(source)))) == _sections(bundle)


def test_the_routes_need_the_admin_scope(api):
    pid = _property(api)
    from pms.devkeys import mint_token

    token = mint_token(api.settings, env_id=api.env_id,
                       scopes=["hotel:pms:properties:read", "hotel:pms:settings:write"])
    assert_problem(api.get(_bundle_url(pid), token=token), 403)
    assert_problem(api.post(_bundle_url(pid, True), json={"bundle_version": 1}, token=token), 403)


def test_an_apply_with_an_idempotency_key_replays(api):
    target = _property(api)
    bundle = {"bundle_version": 1,
              "packages": [{"code": "BRKF", "name": "Breakfast", "price": "15.00"}]}
    ctx = Ctx(env_id=api.env_id)
    key = {"Idempotency-Key": str(uuid.uuid4())}
    first = api.post(_bundle_url(target, False), json=bundle, headers=key)
    assert first.status_code == 200, first.text
    events = len(outbox_rows(ctx))
    again = api.post(_bundle_url(target, False), json=bundle, headers=key)
    assert again.status_code == 200 and again.headers.get("idempotent-replayed") == "true"
    assert again.json == first.json and first.json["counts"]["create"] == 1
    assert len(outbox_rows(ctx)) == events


def test_an_initialized_env_round_trips_with_its_seeded_lists(api):
    """An env's seeded lists hold codes such as `F&B` and `mini bar`: its export applies."""
    initialize_environment(api.env_id, ledger=EmbeddedLedger())
    source = _configured(api)
    bundle = _ok(api.get(_bundle_url(source)))
    assert {"F&B", "mini bar"} <= set(bundle["lovs"]["folio-item-categories"])
    dry = _ok(api.post(_bundle_url(_property(api), True), json=bundle))
    lovs = [c for c in dry["changes"] if c["section"] == "lovs"]
    assert lovs and {c["action"] for c in lovs} <= {"unchanged", "kept"}, lovs
