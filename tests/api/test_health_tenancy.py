"""`GET /v1/health` shows a tenant its own outbox figures, never another tenant's;
the figures over every tenant (`checks.outbox_platform`) need the scope
`hotel:pms:health:operator`."""

from __future__ import annotations

import uuid

from pms.db.uow import read_scope
from pms.devkeys import mint_token
from pms.models import OutboxEvent

HEALTH = "/v1/health"
OPERATOR = "hotel:pms:health:operator"


def _create_property(api):
    resp = api.post("/v1/properties", {"propertyCode": f"H{uuid.uuid4().hex[:6]}",
                                       "timezone": "Europe/Berlin", "currencyCode": "EUR"})
    assert resp.status_code == 201, resp.text


def _waiting(ctx) -> int:
    with read_scope(ctx):
        return (OutboxEvent.select().where(OutboxEvent.published_at.is_null()
                                           & OutboxEvent.parked_at.is_null()).count())


def test_a_tenant_sees_its_own_backlog_and_not_another_tenants(api, ctx):
    for _ in range(3):
        _create_property(api)  # this tenant's unpublished events
    mine = api.get(HEALTH).json["checks"]
    assert mine["outbox"]["backlog"] == _waiting(ctx) >= 3
    assert "outbox_platform" not in mine
    # another tenant, with nothing of its own, sees an empty outbox
    other = api.for_env(uuid.uuid4())
    theirs = other.get(HEALTH)
    assert theirs.status_code == 200, theirs.text
    outbox = theirs.json["checks"]["outbox"]
    assert outbox["backlog"] == 0 and outbox["parked"] == 0
    assert outbox["oldest_unpublished_age_s"] is None
    assert "outbox_platform" not in theirs.json["checks"]


def test_the_platform_wide_figures_need_the_operator_scope(api, settings, ctx):
    _create_property(api)
    operator_env = uuid.uuid4()
    token = mint_token(settings, env_id=operator_env,
                       scopes=["hotel:pms:health:read", OPERATOR])
    resp = api.get(HEALTH, token=token, env=operator_env)
    assert resp.status_code == 200, resp.text
    checks = resp.json["checks"]
    assert checks["outbox"]["backlog"] == 0  # the operator's own tenant has none
    assert checks["outbox_platform"]["ok"] is True
    assert checks["outbox_platform"]["backlog"] >= _waiting(ctx) >= 1
    # health:read alone (the balancer's check) gets the tenant's figures only
    plain = mint_token(settings, env_id=operator_env, scopes=["hotel:pms:health:read"])
    assert "outbox_platform" not in api.get(HEALTH, token=plain, env=operator_env).json["checks"]
