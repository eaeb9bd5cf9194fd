"""An integrator's first hour: the OpenAPI document is one a client generator can
use, and the client generated from it is typed end to end.

`generated_client` (tests/clientgen) serves the app on a real socket, runs
`openapi-python-client generate --url .../v1/openapi.json` (no token) and
`datamodel-code-generator` on the same document, and fails on any warning of either. The stay
below runs through that client; test_fuzz.py parses every 2xx its pass reaches with it.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from pathlib import Path

import pytest

from pms.api.openapi import build_document
from pms.api.openapi_rules import (
    NAME_SHAPE,
    OPERATION_ID_MAX,
    OPERATION_ID_SHAPE,
    PROBLEM_MEMBERS,
    response_components,
)
from pms.routes import all_routes
from tests.clientgen import generated_client, run_in_clientgen, serve  # noqa: F401
from tests.factories import make_booking_hotel, make_reservation

DOC = build_document(all_routes())
SCHEMAS = DOC["components"]["schemas"]
OPS = [(m.upper(), p, op) for p, ops in DOC["paths"].items() for m, op in ops.items()]


def _props(schema):
    return schema.get("properties", {}).items()


def test_every_schema_is_one_component_with_a_readable_name():
    for name, schema in SCHEMAS.items():
        assert NAME_SHAPE.match(name), name
        assert schema.get("title", name) == name, (name, schema.get("title"))
    text = json.dumps(DOC)
    for ref in re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', text):
        assert ref in SCHEMAS, ref
    assert "NightPriceOut" in SCHEMAS and "ReservationPage" in SCHEMAS


def test_operation_ids_are_unique_and_shaped_like_a_person_would_name_them():
    ids = [op["operationId"] for _m, _p, op in OPS]
    assert len(ids) == len(set(ids))
    for op_id in ids:
        assert OPERATION_ID_SHAPE.match(op_id) and len(op_id) <= OPERATION_ID_MAX, op_id
    assert max(len(i) for i in ids) <= 40  # today's longest, an admin alias (the issue saw 66)
    named = {(m, p): op["operationId"] for m, p, op in OPS}
    base = "/v1/properties/{property_id}/reservations"
    assert named[("POST", base)] == "createReservation"
    assert named[("POST", base + "/{id}/check-out")] == "checkOutReservation"
    assert named[("GET", base)] == "listReservations"
    assert named[("GET", base + "/{id}")] == "getReservation"


def test_timestamps_and_dates_carry_their_formats():
    seen = 0
    for name, schema in SCHEMAS.items():
        for prop, sub in _props(schema):
            strings = [s for s in sub.get("anyOf", [sub]) if s.get("type") == "string"]
            if not strings:
                continue
            if prop.endswith("_at") or re.fullmatch(r"[a-z]+At", prop):
                seen += 1
                assert any(s.get("format") == "date-time" for s in strings), (name, prop)
            if prop == "date" or prop.endswith("_date"):
                assert any(s.get("format") == "date" for s in strings), (name, prop)
    assert seen >= 20


def test_response_enums_are_named_components_marked_extensible():
    closed = {("ReservationOut", "status"), ("ReservationOut", "source"),
              ("ReservationOut", "channel"), ("FolioOut", "folio_type"),
              ("FolioOut", "status"), ("FolioPaymentOut", "status"), ("TaskOut", "status")}
    for owner, prop in closed:
        sub = SCHEMAS[owner]["properties"][prop]
        assert sub.get("x-extensible-enum"), (owner, prop, sub)
    extensible = 0
    for name in response_components(DOC):
        for prop, sub in _props(SCHEMAS[name]):
            refs = [s["$ref"].rsplit("/", 1)[-1] for s in sub.get("anyOf", [sub]) if "$ref" in s]
            if any("enum" in SCHEMAS[r] for r in refs):
                extensible += 1
                assert sub.get("x-extensible-enum"), (name, prop)
                assert {"type": "string"} in sub["anyOf"], (name, prop)
    assert extensible >= 30


def test_every_answer_documents_its_headers():
    for method, path, op in OPS:
        for status, answer in op["responses"].items():
            names = set(answer.get("headers", {}))
            assert "X-Request-Id" in names, (method, path, status)
            if method == "POST" and status.startswith("2"):
                assert "Idempotent-Replayed" in names, (method, path, status)
            if status in ("201", "202"):
                assert "Location" in names, (method, path, status)
            if status == "503":
                assert "Retry-After" in names, (method, path, status)
    assert set(DOC["components"]["headers"]) >= {"Idempotent-Replayed", "Retry-After",
                                                 "Location", "X-Request-Id"}


def _problem_extension_members() -> set[str]:
    """Every keyword passed to a PmsError (or a subclass) anywhere under pms/."""
    import pms
    import pms.errors as errors

    names = {n for n, c in vars(errors).items()
             if inspect.isclass(c) and issubclass(c, errors.PmsError)}
    root = Path(pms.__file__).parent
    trees = [ast.parse(f.read_text()) for f in root.rglob("*.py")]
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and b.id in names for b in node.bases):
                names.add(node.name)
    found: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                fn = node.func
                name = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", None)
                if name in names:
                    found |= {k.arg for k in node.keywords if k.arg}
    return found - {"code", "retry_after"}


def test_problem_extension_members_are_typed():
    members = _problem_extension_members()
    assert {"balance", "folio_id", "reasons", "target_id"} <= members
    problem = SCHEMAS["Problem"]["properties"]
    missing = sorted(m for m in members if m not in problem)
    assert not missing, f"add to PROBLEM_MEMBERS (pms/api/problem_members.py): {missing}"
    assert problem["folio_id"] == {"type": "string", "format": "uuid"}
    assert PROBLEM_MEMBERS["balance"]["format"] == "decimal"


def test_the_tenant_header_is_a_security_scheme_set_once(api):
    assert DOC["components"]["securitySchemes"]["tenant"] == {
        "type": "apiKey", "in": "header", "name": "X-Platform-Env-Id",
        "description": DOC["components"]["securitySchemes"]["tenant"]["description"]}
    for method, path, op in OPS:
        assert not any(p["name"] == "X-Platform-Env-Id" for p in op.get("parameters", [])), path
        if path != "/v1/openapi.json":
            assert op["security"][0].keys() == {"bearer", "tenant"}, (method, path)


def test_the_document_is_served_without_a_token(api):
    resp = api.get("/v1/openapi.json", raw_headers={})
    assert resp.status_code == 200, resp.text
    assert resp.json["paths"].keys() == DOC["paths"].keys()
    assert resp.json["paths"]["/v1/openapi.json"]["get"]["security"] == []
    # everything else still needs one
    assert api.get("/v1/properties", raw_headers={}).status_code == 401


def test_the_generated_client_drives_a_whole_stay(api, ctx, generated_client):  # noqa: F811
    from pms.db.uow import unit_of_work
    from pms.models import Reservation

    hotel = make_booking_hotel(ctx, rooms=3)
    odd = make_reservation(ctx, hotel)
    with unit_of_work(ctx):  # a status this client was generated without (a release later)
        changed = Reservation.update(status="WAITLISTED").where(
            Reservation.id == odd.id).execute()
    assert changed == 1
    with serve(api.client.app) as base_url:
        out = run_in_clientgen(
            "drive_stay.py", str(generated_client), base_url, api.token, str(api.env_id),
            str(hotel.id), str(hotel.room_type.id), str(hotel.rate_plan.id),
            hotel.today.isoformat(), str(odd.id), "WAITLISTED")
    lines = out.splitlines()
    steps = [line.split()[0] for line in lines]
    assert steps[:3] == ["search_availability", "create_profile", "create_reservation"], out
    for step in ("update_reservation", "check_in_reservation", "create_folio_charge",
                 "create_folio_payment", "check_out_reservation"):
        assert step in steps, out
    assert "unknown-status WAITLISTED" in lines, out


def test_a_generator_warning_fails_the_generation(tmp_path):
    """The check itself: a document with a reference to nothing makes openapi-python-client
    warn, and generation refuses it."""
    from tests.clientgen import _run, ensure_generators

    broken = json.loads(json.dumps(DOC))
    op = broken["paths"]["/v1/health"]["get"]
    op["responses"]["200"]["content"]["application/json"]["schema"] = {
        "$ref": "#/components/schemas/NoSuchThing"}
    (tmp_path / "doc.json").write_text(json.dumps(broken))
    (tmp_path / "cfg.yaml").write_text("post_hooks: []\n")
    venv = ensure_generators()
    with pytest.raises(AssertionError, match="warned"):
        _run([str(venv / "bin" / "openapi-python-client"), "generate", "--path",
              str(tmp_path / "doc.json"), "--meta", "none", "--output-path",
              str(tmp_path / "out"), "--config", str(tmp_path / "cfg.yaml")])


def test_the_main_journeys_have_examples_that_match_their_schemas():
    import jsonschema_rs

    from pms.api.openapi_examples import EXAMPLES

    found = set()
    for _m, _p, op in OPS:
        if op["operationId"] not in EXAMPLES:
            continue
        found.add(op["operationId"])
        media = [a["content"]["application/json"] for s, a in op["responses"].items()
                 if s.startswith("2") and "application/json" in a.get("content", {})][0]
        body = op.get("requestBody", {}).get("content", {}).get("application/json")
        for schema, example in ((media["schema"], media["example"]),
                                *(((body["schema"], body["example"]),)
                                  if EXAMPLES[op["operationId"]]["request"] else ())):
            validator = jsonschema_rs.Draft202012Validator(
                {**schema, "components": DOC["components"]})
            errors = [e.message for e in validator.iter_errors(example)]
            assert not errors, (op["operationId"], errors[:3])
    assert found == set(EXAMPLES)
    assert {"searchAvailability", "createProfile", "createReservation", "updateReservation",
            "checkInReservation", "createFolioCharge", "createFolioPayment",
            "checkOutReservation"} <= found


def test_the_operation_id_rule_names_a_route_added_later():
    from pms.api.openapi_rules import operation_id

    base = "/v1/properties/{property_id}"
    keys = base + "/reservations/{id}/keys"
    siblings = {("GET", keys), ("POST", keys)}
    pages = {("GET", keys)}
    assert operation_id("GET", keys, siblings, pages) == "listReservationKeys"
    assert operation_id("POST", keys, siblings, pages) == "createReservationKey"
    assert operation_id("POST", keys + "/{key_id}/revoke", siblings, pages) == \
        "revokeReservationKey"
    assert operation_id("GET", base + "/kiosk-config", set(), set()) == "getKioskConfig"
    assert operation_id("PUT", base + "/kiosk-config", set(), set()) == "setKioskConfig"
