"""The OpenAPI 3.1 document, generated from the route table and the same msgspec schemas that
validate requests (never written by hand). Served at `GET /v1/openapi.json`; `pms-cli openapi`
prints it."""

from __future__ import annotations

import copy
import functools
import re
import typing
from typing import Any

import falcon
import msgspec

from pms import __version__
from pms.api.openapi_rules import refine
from pms.api.route import Route, operations
from pms.api.spec import EndpointSpec, endpoint
from pms.schemas.common import Page

PROBLEM_SCHEMA = {
    "type": "object",
    "required": ["type", "title", "status", "detail", "code"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "code": {"type": "string"},
        "errors": {"type": "array", "items": {
            "type": "object", "properties": {"field": {"type": "string"},
                                             "message": {"type": "string"}}}},
    },
}
STANDARD_ERRORS = {
    400: "Malformed JSON or header", 401: "Missing or invalid bearer token",
    403: "Tenant mismatch, missing scope, or a guest session on a staff-only operation "
         "(guest_not_allowed)",
    404: "Not found (also another env's or another holder's row)",
    413: "Body over 1 MiB", 415: "Body is not JSON", 422: "Validation failed",
    409: "State conflict", 503: "Busy or draining; see Retry-After",
    429: "Too many failed attempts from this caller; see Retry-After",
    412: "If-Match is not the current ETag", 428: "If-Match is required",
}
# Answers any operation may give, whatever it declares: the middleware's (401, 400 for the
# tenant header, 403 for tenant and scope, 503 while draining or when the database is
# unreachable) and the router's 404 for ids that name nothing.
ALWAYS = frozenset({400, 401, 403, 404, 503})
# what a kiosk token (client_kind kiosk) may do there, beyond "deny"/"open"
KIOSK_ACCESS_DOC = {
    "session": "A kiosk token may call it with hotel:pms:kiosk:write (standing in for the "
               "scope above) and the X-Kiosk-Session of a lookup for this reservation (403 "
               "kiosk_session_invalid without a live one of this terminal; 404 for another "
               "reservation); 409 kiosk_locked in lockdown, 409 kiosk_mode_disabled when its "
               "mode is not enabled.",
    "stand_in": "A kiosk token may call it with hotel:pms:kiosk:write (standing in for the "
                "scope above), no session; 409 kiosk_locked in lockdown, 409 "
                "kiosk_mode_disabled when its mode is not enabled.",
}
GUEST_ACCESS_DOC = {
    "deny": "Staff only: a guest session (a token with holder_id) gets 403 guest_not_allowed.",
    "open": "Guest sessions may call it: it shows no holder-owned rows.",
    "own": "Guest sessions may call it for their own rows only (holder_id); another "
           "holder's rows answer 404.",
}
DESCRIPTION = """Multi-tenant hotel property-management service.

Every request carries `Authorization: Bearer <JWT>` and `X-Platform-Env-Id: <uuid>` equal to the
token's `env_id` claim. Errors are `application/problem+json` with a stable `code`. Lists are
`{"data": [...], "next_cursor": ...}` with `limit` (1..200) and `cursor`. Every POST accepts an
`Idempotency-Key` (replayed for 72 h; 409 and 5xx answers are not stored). Money is a decimal
string beside a currency code; stay dates are property-local `YYYY-MM-DD`.
"""


def _path_params(path: str) -> list[dict[str, Any]]:
    return [
        {"name": name, "in": "path", "required": True,
         "schema": {"type": "string", "format": "uuid"} if name.endswith("id") else
         {"type": "string"}}
        for name in re.findall(r"\{(\w+)\}", path)
    ]


def _query_params(schema: type, components: dict[str, Any]) -> list[dict[str, Any]]:
    (ref,), comps = msgspec.json.schema_components([schema], ref_template="#/components/schemas/{name}")
    name = ref["$ref"].rsplit("/", 1)[-1]
    obj = comps.get(name, {})
    required = set(obj.get("required", []))
    return [
        {"name": prop, "in": "query", "required": prop in required, "schema": sub}
        for prop, sub in obj.get("properties", {}).items()
    ]


def _operation_id(method: str, path: str) -> str:
    parts = [p for p in re.split(r"[/{}\-]+", path) if p and p != "v1"]
    return method.lower() + "_" + "_".join(parts)


def build_document(routes: list[Route]) -> dict[str, Any]:
    ops = list(operations(routes))
    types: list[Any] = []
    for _, _, _, spec in ops:
        for t in (spec.body, spec.response, *(t for _, t in spec.responses)):
            if t is not None:
                types.append(t)
    schemas_for, components = msgspec.json.schema_components(
        types, ref_template="#/components/schemas/{name}")
    schema_map = dict(zip([id(t) for t in types], schemas_for, strict=True))  # same type, same id
    components["Problem"] = copy.deepcopy(PROBLEM_SCHEMA)
    paths: dict[str, dict[str, Any]] = {}
    for method, path, _fn, spec in ops:
        paths.setdefault(path, {})[method.lower()] = _operation(method, path, spec, schema_map,
                                                                components)
    pages = {(method, path) for method, path, _fn, spec in ops
              if typing.get_origin(spec.response) is Page}
    return refine({
        "openapi": "3.1.0",
        "info": {"title": "Hotel PMS", "version": __version__, "description": DESCRIPTION},
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "bearerFormat": "JWT"}},
        },
        "security": [{"bearer": []}],
    }, pages)


def _operation(method: str, path: str, spec: EndpointSpec, schema_map: dict[int, Any],
               components: dict[str, Any]) -> dict[str, Any]:
    params = _path_params(path)
    params.append({"name": "X-Platform-Env-Id", "in": "header", "required": True,
                   "schema": {"type": "string", "format": "uuid"}})
    if method == "POST":
        params.append({"name": "Idempotency-Key", "in": "header", "required": False,
                       "schema": {"type": "string", "minLength": 1, "maxLength": 255}})
    if spec.query is not None:
        params.extend(_query_params(spec.query, components))
    for name, required, doc in spec.headers:  # If-Match
        params.append({"name": name, "in": "header", "required": required,
                       "description": doc, "schema": {"type": "string", "minLength": 1}})
    op: dict[str, Any] = {
        "operationId": _operation_id(method, path),
        "summary": spec.summary or f"{method} {path}",
        "parameters": params,
        "security": [{"bearer": [spec.scope, *spec.extra_scopes]}],
        "x-scopes": [spec.scope, *spec.extra_scopes],
        "tags": [_tag(path)],
    }
    guest_doc = GUEST_ACCESS_DOC[spec.guest]
    kiosk_doc = KIOSK_ACCESS_DOC.get(spec.kiosk)
    if kiosk_doc:
        guest_doc = f"{guest_doc} {kiosk_doc}"
    op["description"] = f"{spec.description}\n\n{guest_doc}" if spec.description else guest_doc
    op["x-guest-access"] = spec.guest
    op["x-kiosk-access"] = spec.kiosk
    if spec.body is not None:
        body_schema = schema_map[id(spec.body)]
        if spec.body_media == "multipart/form-data":
            body_schema = _form_schema(body_schema, components)
        op["requestBody"] = {"required": True, "content": {
            spec.body_media: {"schema": body_schema}}}
        if spec.max_body is not None:
            op["x-max-body-bytes"] = spec.max_body
    responses: dict[str, Any] = {}
    for status in (spec.status, *spec.also_status):
        responses[str(status)] = _success(spec.response, spec, status, schema_map)
    for status, response in spec.responses:
        responses[str(status)] = _success(response, spec, status, schema_map)
    responses.update({str(code): _problem(code) for code in sorted(error_statuses(method, spec))})
    if spec.max_body is not None and "413" in responses:  # a route's own limit
        responses["413"]["description"] = f"Body over {spec.max_body} bytes"
    op["responses"] = responses
    return op


def _form_schema(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """A multipart form's schema inline, its byte fields as binary files."""
    if "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[-1]]
    out = {**schema, "properties": {}}
    for name, prop in schema.get("properties", {}).items():
        if prop.get("contentEncoding") == "base64":
            prop = {k: v for k, v in prop.items() if k != "contentEncoding"}
            prop["format"] = "binary"
        out["properties"][name] = prop
    return out


def error_statuses(method: str, spec: EndpointSpec) -> set[int]:
    """Every error status the operation can answer, derived from what it declares.

    A query schema means 422 for a bad query string; a body means 413, 415 and 422; every POST
    takes an Idempotency-Key (409 while the first request runs, 422 on a mismatch).
    """
    codes = set(ALWAYS) | set(spec.errors)
    if spec.query is not None:
        codes.add(422)
    if spec.body is not None:
        codes |= {413, 415, 422}
    if method == "POST":
        codes |= {409, 422}
    return codes - success_statuses(spec)


def success_statuses(spec: EndpointSpec) -> set[int]:
    return {spec.status, *spec.also_status, *(s for s, _ in spec.responses)}


def _success(response: Any, spec: EndpointSpec, status: int,
             schema_map: dict[int, Any]) -> dict[str, Any]:
    ok: dict[str, Any] = {"description": "Success"}
    if status == 204:
        return {"description": "Done; no body"}
    if response is not None:
        ok["content"] = {"application/json": {"schema": schema_map[id(response)]}}
        for media in spec.also_media:
            ok["content"][media] = {"schema": {"type": "string", "format": "binary"}}
    return ok


def _problem(code: int) -> dict[str, Any]:
    return {
        "description": STANDARD_ERRORS.get(code, "Error"),
        "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }


def _tag(path: str) -> str:
    parts = [p for p in path.split("/") if p and not p.startswith("{") and p != "v1"]
    if parts and parts[0] == "properties" and len(parts) > 1:
        return parts[1]
    return parts[0] if parts else "root"


class OpenApiResource:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @functools.cached_property
    def document(self) -> dict[str, Any]:
        return build_document(self.deps.routes)

    @endpoint("health:read", summary="This OpenAPI 3.1 document", guest="open",
              kiosk="open", anonymous="open")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = self.document


ROUTES = [Route("/v1/openapi.json", OpenApiResource)]
