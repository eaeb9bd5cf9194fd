"""The rules that make the OpenAPI document one a client generator can use.

`refine(doc, ops)` rewrites the document `pms.api.openapi.build_document` derives from the route
table and the msgspec schemas. Every rule is generic (a name, a field name, a status), so a route
added later follows them without an entry here:

- Component names: one component per schema, named `^[A-Z][A-Za-z0-9]*$` (a list page
  `Page[ReservationOut]` is `ReservationPage`; a module-qualified name msgspec gives to two
  classes of one name becomes `<Module><Name>`), each titled with its own name.
- Closed sets: an inline `enum` of a component's property becomes a component of its own,
  `<Owner><Field>` (`TaskOut.kind` -> `TaskKind`). On the response side every enum reference is
  `anyOf: [<enum>, string]` with `x-extensible-enum`: a value added later (a new status) still
  parses in a client generated today.
- Formats: a string property named `*_at` is `date-time`; `date`, `*_date` are `date`.
- Responses: a response object's properties are all required (the encoder writes every field).
- Headers: `X-Request-Id` on every answer, `Idempotent-Replayed` on every POST success,
  `Location` on 201/202, `Retry-After` on 503 (and on 409 of a POST: the in-flight key).
- Problem members: the extension members an error may carry are typed on `Problem`
  (PROBLEM_MEMBERS, in pms/api/problem_members.py; tests/api/test_openapi_client.py scans the
  code for any that is not).
- Operation ids: a rule (`operation_id`) with a few overrides (OPERATION_ID_OVERRIDES), in
  pms/api/operation_ids.py.
- Security: the bearer and the tenant header (`X-Platform-Env-Id`, an apiKey scheme), so a
  generated client sets both once. The document itself is public (PUBLIC_PATHS).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from pms.api.operation_ids import OPERATION_ID_MAX as OPERATION_ID_MAX
from pms.api.operation_ids import OPERATION_ID_SHAPE as OPERATION_ID_SHAPE
from pms.api.operation_ids import _pascal, operation_id
from pms.api.problem_members import PROBLEM_MEMBERS

REF = "#/components/schemas/"
HAND_WRITTEN = frozenset({"Problem"})  # components not made from a msgspec struct
TENANT_HEADER = "X-Platform-Env-Id"
PUBLIC_PATHS = frozenset({"/v1/openapi.json"})
NAME_SHAPE = re.compile(r"^[A-Z][A-Za-z0-9]*$")
EXTENSIBLE_NOTE = ("Extensible: values may be added later; a client must accept a value it "
                   "does not know.")

HEADERS = {
    "X-Request-Id": {"description": "The request's id (X-Platform-Request-Id when given)",
                     "schema": {"type": "string"}},
    "Idempotent-Replayed": {"description": "`true` when this is the stored answer of an "
                                           "earlier request with the same Idempotency-Key",
                            "schema": {"type": "string", "enum": ["true"]}},
    "Location": {"description": "The URL of the resource made (when it has one)",
                 "schema": {"type": "string"}},
    "Retry-After": {"description": "Seconds to wait before retrying",
                    "schema": {"type": "integer", "minimum": 0}},
}


# -- names --------------------------------------------------------------------------------------

def component_name(name: str) -> str:
    """The readable name of a msgspec component name (see module docstring)."""
    page = re.fullmatch(r"Page_(\w+?)_", name)
    if page:
        inner = component_name(page.group(1))
        return (inner[:-3] if inner.endswith("Out") and len(inner) > 3 else inner) + "Page"
    if "." in name:
        module, _, cls = name.rpartition(".")
        return _pascal(module.rsplit(".", 1)[-1]) + _pascal(cls)
    return name if NAME_SHAPE.match(name) else _pascal(name)


def _rewrite_refs(node: Any, renames: dict[str, str]) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(REF):
                name = value[len(REF):]
                out[key] = REF + renames.get(name, name)
            else:
                out[key] = _rewrite_refs(value, renames)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(v, renames) for v in node]
    return node


def _rename_components(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    renames = {name: component_name(name) for name in schemas}
    taken: dict[str, str] = {}
    for old, new in sorted(renames.items()):
        if new in taken and taken[new] != old:
            raise ValueError(f"two schemas would be named {new}: {taken[new]} and {old}")
        taken[new] = old
    doc["paths"] = _rewrite_refs(doc["paths"], renames)
    fresh = {}
    for old, schema in schemas.items():
        schema = _rewrite_refs(schema, renames)
        schema["title"] = renames[old]
        fresh[renames[old]] = schema
    doc["components"]["schemas"] = dict(sorted(fresh.items()))


# -- enums --------------------------------------------------------------------------------------

def _owner_base(name: str) -> str:
    return re.sub(r"(Out|In|Patch|Entry)$", "", name) or name


def _lift_enums(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    lifted: dict[str, dict[str, Any]] = {}

    def lift(owner: str, prop: str, sub: dict[str, Any]) -> dict[str, Any]:
        if "enum" in sub and "$ref" not in sub and sub.get("type", "string") == "string":
            enum = {"type": "string", "enum": list(sub["enum"])}
            field, base = _pascal(prop), _owner_base(owner)
            for known_name, known in sorted(schemas.items()):
                # the same set as an enum the code names (a StrEnum of pms.domain.states):
                # RoomBoardEntry.hk_status -> HkStatus
                if known.get("enum") == enum["enum"] and known_name.endswith(field):
                    return {"$ref": REF + known_name}
            for candidate in (base if base.endswith(field) else base + field, owner + field):
                known = lifted.get(candidate) or schemas.get(candidate)
                if known is None:
                    lifted[candidate] = {**enum, "title": candidate}
                    return {"$ref": REF + candidate}
                if known.get("enum") == enum["enum"]:
                    return {"$ref": REF + candidate}
            return sub
        if "anyOf" in sub:
            return {**sub, "anyOf": [lift(owner, prop, s) for s in sub["anyOf"]]}
        if sub.get("type") == "array" and isinstance(sub.get("items"), dict):
            return {**sub, "items": lift(owner, prop, sub["items"])}
        return sub

    for name in sorted(schemas):
        schema = schemas[name]
        for prop, sub in list(schema.get("properties", {}).items()):
            schema["properties"][prop] = lift(name, prop, sub)
    schemas.update(lifted)
    doc["components"]["schemas"] = dict(sorted(schemas.items()))


def _refs_in(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF):
            found.add(ref[len(REF):])
        for value in node.values():
            _refs_in(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs_in(value, found)


def _closure(roots: set[str], schemas: dict[str, Any]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in schemas:
            continue
        seen.add(name)
        refs: set[str] = set()
        _refs_in(schemas[name], refs)
        todo.extend(refs - seen)
    return seen


def response_components(doc: dict[str, Any]) -> set[str]:
    roots: set[str] = set()
    for ops in doc["paths"].values():
        for op in ops.values():
            for answer in op.get("responses", {}).values():
                _refs_in(answer.get("content", {}), roots)
    return _closure(roots, doc["components"]["schemas"])


def request_components(doc: dict[str, Any]) -> set[str]:
    roots: set[str] = set()
    for ops in doc["paths"].values():
        for op in ops.values():
            _refs_in(op.get("requestBody", {}), roots)
            _refs_in(op.get("parameters", []), roots)
    return _closure(roots, doc["components"]["schemas"])


def _is_enum(schemas: dict[str, Any], sub: dict[str, Any]) -> str | None:
    ref = sub.get("$ref", "")
    name = ref[len(REF):] if ref.startswith(REF) else ""
    return name if name and "enum" in schemas.get(name, {}) else None


def _extensible(schemas: dict[str, Any], sub: dict[str, Any]) -> dict[str, Any]:
    """A response property naming an enum: that enum or any other string."""
    name = _is_enum(schemas, sub)
    if name:
        return {"anyOf": [sub, {"type": "string"}],
                "x-extensible-enum": schemas[name]["enum"], "description": EXTENSIBLE_NOTE}
    if "anyOf" in sub:
        members = sub["anyOf"]
        names = [n for n in (_is_enum(schemas, m) for m in members) if n]
        if names:
            rest = [m for m in members if not _is_enum(schemas, m)]
            if not any(m.get("type") == "string" and len(m) == 1 for m in rest):
                rest = [{"type": "string"}, *rest]
            return {**sub, "anyOf": [m for m in members if _is_enum(schemas, m)] + rest,
                    "x-extensible-enum": schemas[names[0]]["enum"],
                    "description": sub.get("description", EXTENSIBLE_NOTE)}
        return sub
    if sub.get("type") == "array" and isinstance(sub.get("items"), dict):
        return {**sub, "items": _extensible(schemas, sub["items"])}
    return sub


def _responses_side(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    requests = request_components(doc)
    for name in response_components(doc):
        schema = schemas[name]
        props = schema.get("properties")
        if not props:
            continue
        for prop, sub in list(props.items()):
            props[prop] = _extensible(schemas, sub)
        if name not in requests and name not in HAND_WRITTEN:
            # every field of a response struct is written, defaults included
            schema["required"] = list(props)
            for sub in props.values():
                sub.pop("default", None)


# -- formats ------------------------------------------------------------------------------------

def _format_for(prop: str) -> str | None:
    if prop.endswith("_at") or re.fullmatch(r"[a-z]+At", prop):
        return "date-time"
    if prop == "date" or prop.endswith("_date"):
        return "date"
    return None


def _with_format(sub: dict[str, Any], fmt: str) -> dict[str, Any]:
    if sub.get("type") == "string" and "format" not in sub and "enum" not in sub:
        return {**sub, "format": fmt}
    if "anyOf" in sub:
        return {**sub, "anyOf": [_with_format(s, fmt) for s in sub["anyOf"]]}
    return sub


def _formats(doc: dict[str, Any]) -> None:
    for schema in doc["components"]["schemas"].values():
        for prop, sub in list(schema.get("properties", {}).items()):
            fmt = _format_for(prop)
            if fmt:
                schema["properties"][prop] = _with_format(sub, fmt)
    for ops in doc["paths"].values():
        for op in ops.values():
            for param in op.get("parameters", []):
                fmt = _format_for(param["name"])
                if fmt and param["in"] == "query":
                    param["schema"] = _with_format(param["schema"], fmt)


# -- the whole pass -----------------------------------------------------------------------------

def _headers(doc: dict[str, Any]) -> None:
    doc["components"]["headers"] = copy.deepcopy(HEADERS)

    def ref(name: str) -> dict[str, Any]:
        return {"$ref": f"#/components/headers/{name}"}

    for ops in doc["paths"].values():
        for method, op in ops.items():
            for status, answer in op["responses"].items():
                headers = {"X-Request-Id": ref("X-Request-Id")}
                code = int(status)
                if 200 <= code < 300 and method == "post":
                    headers["Idempotent-Replayed"] = ref("Idempotent-Replayed")
                if code in (201, 202):
                    headers["Location"] = ref("Location")
                if code in (429, 503) or (code == 409 and method == "post"):
                    headers["Retry-After"] = ref("Retry-After")
                answer["headers"] = headers


def _problem(doc: dict[str, Any]) -> None:
    problem = doc["components"]["schemas"]["Problem"]
    problem["title"] = "Problem"
    problem["description"] = ("RFC 9457 problem details. `code` is stable; the other members "
                              "listed appear with the codes that carry them.")
    problem["properties"].update(copy.deepcopy(PROBLEM_MEMBERS))
    problem["properties"]["errors"]["items"]["required"] = ["field", "message"]


def _security(doc: dict[str, Any]) -> None:
    doc["components"]["securitySchemes"]["tenant"] = {
        "type": "apiKey", "in": "header", "name": TENANT_HEADER,
        "description": "The env (tenant) id, a UUID equal to the token's env_id claim"}
    doc["security"] = [{"bearer": [], "tenant": []}]
    for path, ops in doc["paths"].items():
        for op in ops.values():
            op["parameters"] = [p for p in op.get("parameters", [])
                                if not (p["in"] == "header" and p["name"] == TENANT_HEADER)]
            if path in PUBLIC_PATHS:
                op["security"] = []
                op["description"] = "Public: no token needed (the document holds no tenant data)."
            else:
                scopes = op.get("security", [{"bearer": []}])[0].get("bearer", [])
                op["security"] = [{"bearer": scopes, "tenant": []}]


def refine(doc: dict[str, Any], page_ops: set[tuple[str, str]]) -> dict[str, Any]:
    """Apply every rule of the module docstring; `page_ops` are the (METHOD, path) whose
    success is a list page."""
    _rename_components(doc)
    _lift_enums(doc)
    _formats(doc)
    _responses_side(doc)
    _problem(doc)
    _headers(doc)
    _security(doc)
    siblings = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    ids: dict[str, tuple[str, str]] = {}
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            op_id = operation_id(method.upper(), path, siblings, page_ops)
            if op_id in ids:
                raise ValueError(f"operationId {op_id} of {method.upper()} {path} is also "
                                 f"{ids[op_id]}: add an override")
            ids[op_id] = (method.upper(), path)
            op["operationId"] = op_id
            _examples(op)
    return doc


def _examples(op: dict[str, Any]) -> None:
    """The main journeys' example request and response (pms/api/openapi_examples.py)."""
    from pms.api.openapi_examples import EXAMPLES

    example = EXAMPLES.get(op["operationId"])
    if example is None:
        return
    body = op.get("requestBody", {}).get("content", {}).get("application/json")
    if body is not None and example["request"] is not None:
        body["example"] = example["request"]
    for status, answer in op["responses"].items():  # the declared success status first
        media = answer.get("content", {}).get("application/json")
        if status.startswith("2") and media is not None:
            media["example"] = example["response"]
            break
