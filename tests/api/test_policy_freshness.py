"""A policy change holds on every instance from its next request, with no round trip of its own
(docs/guides/authorization.md "Freshness and cost"), on SQLite and PostgreSQL.

Two app instances, each with its own decision point and cache, as two hosts have: a change
written through one is obeyed by the other's next request (a new deny, a lifted deny, and an
unrelated change that moves the version while the answer stays allowed, on a read outside a
transaction and on a write whose transaction carries an Idempotency-Key claim). On PostgreSQL
the check of the cached version rides the request's first statement: the GET of a property's
budget of one round trip is pinned in tests/budgets.
"""

from __future__ import annotations

from typing import Any

import falcon.testing
import pytest

from pms.api.gate import GateMiddleware
from pms.app import create_app
from pms.context import Ctx
from pms.db.uow import read_scope
from pms.models import Profile
from pms.services.admin.policies import PolicyGate
from tests.conftest import Api
from tests.helpers import assert_problem, random_ref

A = "/v1/admin"
READ = "hotel:pms:properties:read"


def _host(settings: Any, database: Any, clock: Any, env_id: Any) -> Api:
    """An app instance with a decision point of its own (another host's process)."""
    app = create_app(settings, db=database, clock=clock)
    gate = next(m for m in app._unprepared_middleware if isinstance(m, GateMiddleware))
    gate.policies = PolicyGate()
    return Api(falcon.testing.TestClient(app), settings, env_id)


@pytest.fixture
def hosts(settings, database, clock, env_id) -> tuple[Api, Api]:
    return (_host(settings, database, clock, env_id), _host(settings, database, clock, env_id))


def _property(api: Api) -> str:
    resp = api.post("/v1/properties", {"propertyCode": random_ref("PF").upper(),
                                       "timezone": "UTC", "currencyCode": "EUR"})
    assert resp.status_code == 201, resp.text
    return resp.json["id"]


def _policy(api: Api, *rules: dict[str, Any]) -> dict[str, Any]:
    resp = api.post(f"{A}/policy-sets", {"name": random_ref("ps"), "rules": list(rules)})
    assert resp.status_code == 201, resp.text
    return resp.json


def test_a_deny_written_on_one_host_holds_on_the_other_at_its_next_request(hosts):
    first, second = hosts
    prop = _property(first)
    _policy(first, {"effect": "deny", "scopes": ["hotel:pms:rates:read"]})  # rules cached
    assert second.get(f"/v1/properties/{prop}").status_code == 200
    assert second.get(f"/v1/properties/{prop}").status_code == 200  # on the cached rules
    denied = _policy(first, {"id": "freeze", "effect": "deny", "scopes": [READ],
                             "property_ids": [prop]})
    body = assert_problem(second.get(f"/v1/properties/{prop}"), 403, "policy_denied")
    assert (body["rule_id"], body["policy_set_id"]) == ("freeze", denied["id"])
    assert_problem(second.get(f"/v1/properties/{prop}"), 403, "policy_denied")
    assert first.delete(f"{A}/policy-sets/{denied['id']}").status_code == 204
    assert second.get(f"/v1/properties/{prop}").status_code == 200  # the lifted deny, at once


def test_a_write_refused_by_a_new_deny_writes_nothing_and_a_moved_version_still_writes(
        hosts, env_id):
    first, second = hosts
    prop = _property(first)
    url = f"/v1/properties/{prop}/profiles"
    _policy(first, {"effect": "deny", "scopes": ["hotel:pms:rates:read"]})
    assert second.post(url, {"last_name": "Warm"}).status_code == 201  # rules cached
    # an unrelated change moves the version: the write is decided again, allowed, and runs once
    _policy(first, {"effect": "deny", "scopes": ["hotel:pms:rates:write"]})
    made = second.post(url, {"last_name": "Moved"}, headers={"Idempotency-Key": "moved-1"})
    assert made.status_code == 201, made.text
    replay = second.post(url, {"last_name": "Moved"}, headers={"Idempotency-Key": "moved-1"})
    assert replay.json["id"] == made.json["id"]
    _policy(first, {"effect": "deny", "scopes": ["hotel:pms:profiles:write"],
                    "property_ids": [prop]})
    assert_problem(second.post(url, {"last_name": "Refused"},
                               headers={"Idempotency-Key": "refused-1"}), 403, "policy_denied")
    assert_problem(second.post(url, {"last_name": "Refused"}), 403, "policy_denied")
    with read_scope(Ctx(env_id=env_id)):
        names = sorted(p.last_name for p in Profile.select())
    assert names == ["Moved", "Warm"]
