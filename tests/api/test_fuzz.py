"""Fuzzing from the OpenAPI document: schemathesis generates requests for every
operation of `GET /v1/openapi.json` and sends them to the in-process WSGI app, with staff, guest
and kiosk tokens; each answer must pass not_a_server_error, response_schema_conformance,
status_code_conformance and content_type_conformance.

Bounded for `make test`: a few examples per operation (PMS_FUZZ_EXAMPLES, default 3), a fixed
seed (derandomized), no shrinking. `make fuzz` sets PMS_FUZZ_EXAMPLES higher and adds negative
(schema-violating) generation (PMS_FUZZ_NEGATIVE=1). Path ids are those of a small hotel built
first, so most requests reach real rows instead of stopping at 404.

Every 2xx answer the pass reaches is kept and parsed afterwards by the client generated from
the document (tests/clientgen): into its operation's generated model and the pydantic
model of its schema. A route added later is covered the day it is in the document.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from pms.api.openapi import build_document
from pms.devkeys import all_scopes, mint_token
from pms.routes import all_routes
from tests.api.recipes import World
from tests.clientgen import generated_client, run_in_clientgen  # noqa: F401

CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance,
          content_type_conformance]
EXAMPLES = int(os.environ.get("PMS_FUZZ_EXAMPLES", "3"))
NEGATIVE = os.environ.get("PMS_FUZZ_NEGATIVE", "") == "1"
KIOSK_SCOPES = ["hotel:pms:kiosk:read", "hotel:pms:kiosk:write", "hotel:pms:properties:read",
                "hotel:pms:inventory:read", "hotel:pms:reservations:read",
                "hotel:pms:reservations:write", "hotel:pms:frontdesk:write"]

# Which world id a path's `{id}` names, by the collection before it.
ID_OF = {"room-types": "room_type_id", "rooms": "room_id", "rate-plans": "rate_plan_id",
         "items": "item_id", "packages": "package_id", "profiles": "profile_id"}


def _token(api: Any, world: World, kind: str) -> str:
    if kind == "guest":
        return mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                          holder_id=world.profile_id, scopes=all_scopes())
    if kind == "kiosk":
        return mint_token(api.settings, env_id=api.env_id, client_kind="kiosk",
                          scopes=KIOSK_SCOPES)
    return api.token


def _path_ids(world: World, path: str, drawn: dict[str, Any]) -> dict[str, Any]:
    """The drawn path parameters, with the hotel's ids where the path names a known kind."""
    ids = dict(drawn)
    if "property_id" in ids:
        ids["property_id"] = world.property_id
    match = re.search(r"/([a-z-]+)/\{id\}", path)
    if match and match.group(1) in ID_OF and "id" in ids:
        ids["id"] = getattr(world, ID_OF[match.group(1)])
    return ids


DOC = build_document(all_routes())


def _answer(method: str, path: str, status: int, content: bytes) -> dict[str, Any]:
    """What parse_answers.py needs of one 2xx: the operation, its status, body and schema."""
    op = DOC["paths"][path][method.lower()]
    media = op["responses"].get(str(status), {}).get("content", {}).get("application/json", {})
    ref = media.get("schema", {}).get("$ref", "")
    return {"operation_id": op["operationId"], "status": status,
            "body": json.loads(content) if content else None,
            "schema": ref.rsplit("/", 1)[-1] if ref else None}


def _fuzz_operation(operation: Any, world: World, headers: dict[str, str],
                    mode: Any, answers: list[dict[str, Any]] | None = None) -> list[str]:
    failures: list[str] = []
    label = f"{operation.method.upper()} {operation.path}"

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        if case.path_parameters:
            case.path_parameters = _path_ids(world, operation.path, case.path_parameters)
        case.headers = {**(case.headers or {}), **headers}
        response = case.call()
        if answers is not None and 200 <= response.status_code < 300:
            media = str(response.headers.get("content-type", [""]))
            if not response.content or "json" in media:
                answers.append(_answer(operation.method, operation.path, response.status_code,
                                       response.content))
        try:
            case.validate_response(response, checks=CHECKS)
        except Exception as exc:  # noqa: BLE001 - a FailureGroup per case: collect, report all
            failures.append(f"{label} [{mode.value}] -> {response.status_code}: "
                            f"{str(exc)[:600]}")

    run()
    return failures


@pytest.mark.parametrize("kind", ["staff", "guest", "kiosk"])
def test_fuzz_every_operation_from_the_openapi_document(api, kind, generated_client,  # noqa: F811
                                                        tmp_path):
    world = World(api)
    headers = {"Authorization": f"Bearer {_token(api, world, kind)}",
               "X-Platform-Env-Id": str(api.env_id)}
    schema = schemathesis.openapi.from_wsgi("/v1/openapi.json", api.client.app,
                                            headers=api.headers())
    modes = [GenerationMode.POSITIVE] + ([GenerationMode.NEGATIVE] if NEGATIVE else [])
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 100
    answers: list[dict[str, Any]] = []
    for operation in operations:
        for mode in modes:
            failures += _fuzz_operation(operation, world, headers, mode, answers)
    assert not failures, f"{len(failures)} failing operation(s):\n" + "\n".join(failures)
    # every 2xx reached parses into its generated model
    # staff reach most operations; guest and kiosk sessions a few (the rest are 403)
    assert len({a["operation_id"] for a in answers}) >= (40 if kind == "staff" else 5)
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(json.dumps(a) for a in answers))
    out = run_in_clientgen("parse_answers.py", str(generated_client), str(path))
    assert f"parsed {len(answers)}" in out, out


def test_fuzz_env_is_one_fresh_tenant(api):
    # the fuzzing runs inside this test's own env: nothing it creates is seen by another env
    assert api.for_env(uuid.uuid4()).get("/v1/properties").json["data"] == []
