"""A JSON body whose string holds bytes that are not UTF-8 is a 400 `malformed_json`
problem+json on every route that takes a body (it was a 500), whether the
body says it is JSON (the body inspection every request gets) or says nothing (the responder's
own decoder). The routes come from the route table, not a hand list."""

from __future__ import annotations

import re
import uuid

import pytest

from pms.routes import all_routes, operations
from tests.helpers import assert_problem

BAD = [b'{"name": "\xff\xfe"}', b'{"\xc3": 1}', b'{"a": ["ok", "\xed\xa0\x80"]}']


def _body_operations() -> list[tuple[str, str]]:
    return sorted({(method, path) for method, path, _, spec in operations(all_routes())
                   if spec.body is not None})


def _concrete(path: str) -> str:
    return re.sub(r"\{\w+\}", lambda _: str(uuid.uuid4()), path)


def test_the_route_table_has_write_routes_with_bodies():
    assert len(_body_operations()) >= 40


@pytest.mark.parametrize("content_type", ["application/json", None])
def test_bytes_that_are_not_utf8_in_a_string_are_a_400_on_every_route_with_a_body(
        api, content_type):
    wrong = []
    for method, path in _body_operations():
        for body in BAD:
            headers = api.headers({"Content-Type": content_type} if content_type else None)
            resp = api.request(method, _concrete(path), body=body, raw_headers=headers)
            if resp.status_code != 400 or resp.headers.get("content-type") != \
                    "application/problem+json" or resp.json.get("code") != "malformed_json":
                wrong.append((method, path, body, resp.status_code, resp.text[:120]))
    assert wrong == []


def test_the_problem_says_the_body_is_not_utf8(api):
    resp = api.request("POST", "/v1/properties", body=BAD[0],
                       raw_headers=api.headers({"Content-Type": "application/json"}))
    problem = assert_problem(resp, 400, "malformed_json")
    assert "UTF-8" in problem["detail"]
