"""HTTP conventions of CONTRACT §3: problem+json from one place, strict request schemas, the
1 MiB body limit, cursor pagination, request ids, and the OpenAPI document generated from the
same schemas as the router."""

from __future__ import annotations

import json
import uuid

import pytest

from pms.routes import all_routes, openapi_path, operations
from tests.helpers import assert_problem

PROPERTY = {"propertyCode": "HTTP1", "timezone": "Europe/Paris", "currencyCode": "EUR"}


@pytest.fixture
def prop(api):
    return api.post("/v1/properties", PROPERTY).json["id"]


@pytest.mark.parametrize("field", ["env_id", "id", "status", "version", "envId", "createdAt"])
def test_bodies_cannot_carry_server_owned_fields(api, field):
    resp = api.post("/v1/properties", {**PROPERTY, field: str(uuid.uuid4())})
    body = assert_problem(resp, 422, "validation_failed")
    assert body["errors"][0]["field"] == field


def test_room_body_cannot_carry_status(api, prop):
    rt = api.post(f"/v1/properties/{prop}/room-types", {"code": "DBL", "name": "Double"}).json
    resp = api.post(f"/v1/properties/{prop}/rooms", {"room_number": "101",
                                                     "room_type_id": rt["id"], "status": "OCCUPIED"})
    assert_problem(resp, 422)


def test_malformed_json_is_400(api):
    resp = api.request("POST", "/v1/properties", body=b'{"propertyCode": ',
                       headers={"Content-Type": "application/json"})
    assert_problem(resp, 400, "malformed_json")


def test_missing_body_is_422(api):
    assert_problem(api.post("/v1/properties"), 422)


def test_wrong_types_are_422_with_the_field(api):
    body = assert_problem(api.post("/v1/properties", {**PROPERTY, "languages": "en"}), 422)
    assert body["errors"][0]["field"] == "languages"


def test_invalid_values_are_422(api):
    assert_problem(api.post("/v1/properties", {**PROPERTY, "currencyCode": "euro"}), 422)
    assert_problem(api.post("/v1/properties", {**PROPERTY, "timezone": "Mars/Olympus"}), 422)


def test_non_json_body_is_415(api):
    resp = api.request("POST", "/v1/properties", body=b"propertyCode=X",
                       headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert_problem(resp, 415)


def test_body_over_one_mebibyte_is_413(api):
    big = b'{"propertyCode": "' + b"x" * (1024 * 1024) + b'"}'
    resp = api.request("POST", "/v1/properties", body=big,
                       headers={"Content-Type": "application/json"})
    assert_problem(resp, 413, "payload_too_large")


def test_declared_length_over_the_limit_is_413_without_reading(api):
    resp = api.request("POST", "/v1/properties", body=b"{}",
                       headers={"Content-Type": "application/json",
                                "Content-Length": str(2 * 1024 * 1024)})
    assert_problem(resp, 413)


def test_unknown_route_is_404_problem(api):
    assert_problem(api.get("/v1/nowhere"), 404)


def test_unknown_id_is_404_problem(api):
    assert_problem(api.get(f"/v1/properties/{uuid.uuid4()}"), 404, "not_found")


def test_malformed_id_is_404(api):
    assert_problem(api.get("/v1/properties/not-a-uuid"), 404)


def test_wrong_method_is_405_problem(api, prop):
    assert_problem(api.request("POST", f"/v1/properties/{prop}", json=PROPERTY), 405)


def test_delete_still_referenced_is_409_not_500(api, prop):
    rt = api.post(f"/v1/properties/{prop}/room-types", {"code": "DBL", "name": "Double"}).json
    api.post(f"/v1/properties/{prop}/rooms", {"room_number": "101", "room_type_id": rt["id"]})
    assert_problem(api.delete(f"/v1/properties/{prop}/room-types/{rt['id']}"), 409,
                   "still_referenced")
    assert_problem(api.delete(f"/v1/properties/{prop}"), 409, "still_referenced")


def test_duplicate_property_code_is_409_per_env_only(api):
    assert api.post("/v1/properties", PROPERTY).status_code == 201
    assert_problem(api.post("/v1/properties", PROPERTY), 409, "already_exists")
    other = api.for_env(uuid.uuid4())
    assert other.post("/v1/properties", PROPERTY).status_code == 201


def test_request_id_is_echoed_and_stored_on_the_audit_row(api, ctx):
    from pms.db.uow import read_scope
    from pms.models import AuditEntry
    from tests.helpers import audit_actions  # noqa: F401

    resp = api.post("/v1/properties", PROPERTY, headers={"X-Platform-Request-Id": "abc-123"})
    assert resp.headers["x-request-id"] == "abc-123"
    with read_scope(ctx):
        assert AuditEntry.get(AuditEntry.target_id == resp.json["id"]).request_id == "abc-123"


def test_property_fields_are_spelled_as_spec_spells_them(api):
    body = api.post("/v1/properties", {**PROPERTY, "languages": ["fr", "en"],
                                       "displayAddress": {"line1": "1 rue X", "city": "Paris",
                                                          "countryCode": "FR"},
                                       "contacts": {"email": "desk@example.com"}}).json
    for key in ("propertyCode", "timezone", "currencyCode", "languages", "displayAddress",
                "contacts"):
        assert key in body
    assert body["displayAddress"]["countryCode"] == "FR"


def test_money_is_a_decimal_string(api, prop):
    item = api.post(f"/v1/properties/{prop}/items", {"code": "W", "name": "Water",
                                                     "category": "mini bar", "price": "3.5"}).json
    assert item["price"] == "3.50" and item["currency"] == "EUR"
    jpy = api.post("/v1/properties", {**PROPERTY, "propertyCode": "JP1", "currencyCode": "JPY"}).json
    snack = api.post(f"/v1/properties/{jpy['id']}/items", {"code": "S", "name": "Snack",
                                                          "category": "mini bar", "price": "300"}).json
    assert snack["price"] == "300" and snack["currency"] == "JPY"


# -- pagination ----------------------------------------------------------------------------------

def test_cursor_pagination_walks_every_row_once(api):
    codes = {f"PG{i:02d}" for i in range(7)}
    for code in sorted(codes):
        api.post("/v1/properties", {**PROPERTY, "propertyCode": code})
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        body = api.get("/v1/properties", params=params).json
        seen += [p["propertyCode"] for p in body["data"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(codes) and len(seen) == len(codes)
    assert pages == 3


@pytest.mark.parametrize("limit", ["0", "201", "-1", "many"])
def test_limit_out_of_range_is_422(api, limit):
    assert_problem(api.get("/v1/properties", params={"limit": limit}), 422)


def test_garbage_cursor_is_422(api):
    assert_problem(api.get("/v1/properties", params={"cursor": "!!not-a-cursor"}), 422,
                   "invalid_cursor")


# -- OpenAPI -----------------------------------------------------------------------------------

def test_openapi_operations_are_exactly_the_routers(api):
    doc = api.get("/v1/openapi.json").json
    assert doc["openapi"].startswith("3.1")
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    routed = {(m, p) for m, p, _f, _s in operations(all_routes())}
    assert documented == routed
    # and every route the Falcon app serves is in the route table
    app_paths = {openapi_path(r.template) for r in all_routes()}
    assert {p for _, p in documented} == app_paths


def test_openapi_request_bodies_come_from_the_validating_schemas(api):
    doc = api.get("/v1/openapi.json").json
    post = doc["paths"]["/v1/properties"]["post"]
    ref = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    schema = doc["components"]["schemas"][ref.rsplit("/", 1)[-1]]
    assert schema["additionalProperties"] is False
    assert {"propertyCode", "timezone", "currencyCode"} <= set(schema["required"])
    # the tenant header is a security scheme beside the bearer (set once per client)
    assert post["security"] == [{"bearer": ["hotel:pms:properties:write"], "tenant": []}]


def test_cli_prints_the_same_document(api):
    from typer.testing import CliRunner

    from cli.main import app

    result = CliRunner().invoke(app, ["openapi"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["paths"].keys() == api.get("/v1/openapi.json").json["paths"].keys()


def test_every_route_declares_a_scope_and_the_app_refuses_otherwise(settings, database):
    from pms.app import create_app
    from pms.routes import Route, UngatedRoute, add_routes

    for _m, _p, _f, spec in operations(all_routes()):
        assert spec.scope.startswith("hotel:pms:")

    class Ungated:
        def __init__(self, deps):
            pass

        def on_get(self, req, resp):
            resp.media = {}

    app = create_app(settings, db=database)
    with pytest.raises(UngatedRoute):
        add_routes(app, None, [Route("/v1/ungated", Ungated)])


class _DatabaseTrouble:
    """A test-only resource whose read ends in a real database error of the kind asked for."""

    from pms.api.spec import endpoint

    @endpoint("properties:read", summary="test only")
    def on_get(self, req, resp, kind: str) -> None:  # noqa: ANN001
        from pms.db.database import db

        if kind == "timeout":
            with db.atomic():
                db.execute_sql("SET LOCAL statement_timeout = 20")
                db.execute_sql("SELECT pg_sleep(1)")
        else:
            db.execute_sql("SELECT * FROM a_table_that_is_not_there")


def test_a_statement_timeout_is_503_with_retry_after_and_a_bug_is_still_500(app, api, backend):
    if backend != "postgres":
        pytest.skip("PostgreSQL's statement timeout")
    app.add_route("/v1/test-database-trouble/{kind}", _DatabaseTrouble())
    timeout = api.get("/v1/test-database-trouble/timeout")
    assert_problem(timeout, 503, "lock_timeout")
    assert timeout.headers["Retry-After"] == "1"
    assert_problem(api.get("/v1/test-database-trouble/missing"), 500, "internal_error")
