"""One transaction per change (SPEC rule 4): every mutating route leaves exactly one outbox row
and one audit row, and a failure forced after the outbox write leaves no domain, outbox or audit
row behind. Parametrized over the router itself."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from pms.context import Ctx
from pms.db.database import db
from pms.db.uow import read_scope
from pms.models import ALL_MODELS, AuditEntry, IdempotencyRecord, OutboxEvent
from pms.routes import all_routes, operations
from tests.api.kiosk_recipes import TERMINAL
from tests.api.recipes import RECIPES, World

MUTATING = sorted(
    (method, path) for method, path, _fn, spec in operations(all_routes())
    if method != "GET" and spec.mutates
)


def test_every_mutating_route_has_a_recipe():
    missing = [f"{m} {p}" for m, p in MUTATING if (m, p) not in RECIPES]
    assert not missing, "add recipes in tests/api/recipes.py for: " + ", ".join(missing)


def _ctx(api: Any) -> Ctx:
    return Ctx(env_id=api.env_id)


# a change of what can be sold also writes `hotel:pms:ari:updated` events (and moves
# its room types' ARI streams), beside its own pair; they are counted apart (tests/services/
# test_ari_events.py proves them), so "one pair per change" keeps speaking of the change.
ARI = "hotel:pms:ari:updated"


def _counts(ctx: Ctx) -> dict[str, int]:
    with read_scope(ctx):
        out = {m.__name__: m.select().count() for m in ALL_MODELS if m is not IdempotencyRecord}
        out["OutboxEvent"] = OutboxEvent.select().where(OutboxEvent.type != ARI).count()
        return out


# Routes whose one request is two changes, each with its own pair: starting the night audit
# claims its run and queues the job that runs it (`hotel:pms:job:queued`, through the outbox).
PAIRS = {("POST", "/v1/properties/{property_id}/end-of-day"): 2, ("POST", "/v1/jobs"): 2,
         # a pick-up books the stay and changes the block's grid (`block:pickup_changed`)
         ("POST", "/v1/properties/{property_id}/blocks/{id}/reservations"): 2,
         ("POST", "/v1/admin/blocks/properties/{property_id}/blocks/{id}/reservations"): 2,
         ("POST", "/v1/properties/{property_id}/blocks/{id}/overpicks"): 2,
         # provisioning a new ADMIN creates the traveler's profile, binds it, and stamps the
         # company (`profile:created`, `company_user:added`, `company:admin_provisioned`)
         ("PUT", "/v1/properties/{property_id}/companies/{profile_id}/admin-provisioning"): 3,
         ("PUT", "/v1/admin/companies/properties/{property_id}/companies/{profile_id}/"
                 "admin-provisioning"): 3,
         # accepting a company's invitation binds the traveler and closes the invitation
         # (`company_user:added`, `company_invitation:accepted`)
         ("POST", "/v1/properties/{property_id}/profiles/{id}/company-invitations/"
                  "{invitation_id}/accept"): 2,
         # a grant that changes the standing consent records it and changes the profile
         # (`consent:granted`, `profile:consents_changed`)
         ("POST", "/v1/properties/{property_id}/profiles/{id}/consents"): 2,
         # posting a banquet event changes the event and (when lines were posted)
         # the folio, each with its pair
         ("POST", "/v1/properties/{property_id}/events/{id}/post"): 2,
         # issuing a fiscal document records it and asks its fiscalization
         # (`folio:invoiced` or `folio:receipt_issued`, `fiscal_document:fiscalization_requested`)
         ("POST", "/v1/properties/{property_id}/folios/{id}/invoice"): 2,
         ("POST", "/v1/properties/{property_id}/folios/{id}/payments/{payment_id}/receipt"): 2}


@pytest.mark.parametrize("method,path", MUTATING, ids=[f"{m} {p}" for m, p in MUTATING])
def test_mutating_route_writes_one_outbox_and_one_audit_row(api, method, path):
    recipe = RECIPES.get((method, path))
    if recipe is None:
        pytest.fail(f"no recipe for {method} {path}")
    world = World(api)
    url, body = recipe(world)
    ctx = _ctx(api)
    before = _counts(ctx)
    request_id = "req-" + uuid.uuid4().hex[:12]
    resp = api.request(method, url, json=body, headers={"X-Platform-Request-Id": request_id})
    assert 200 <= resp.status_code < 300, resp.text
    after = _counts(ctx)
    pairs = PAIRS.get((method, path), 1)
    assert after["OutboxEvent"] - before["OutboxEvent"] == pairs
    assert after["AuditEntry"] - before["AuditEntry"] == pairs
    with read_scope(ctx):
        events = list(OutboxEvent.select().where((OutboxEvent.request_id == request_id)
                                                 & (OutboxEvent.type != ARI)))
        audits = list(AuditEntry.select().where(AuditEntry.request_id == request_id))
    assert len(events) == pairs and len(audits) == pairs
    assert all(e.type.startswith("hotel:pms:") and e.aggregate_version >= 1 for e in events)
    # the caller is the actor: the desk's token, or the terminal on a kiosk session's route
    actor = TERMINAL if "/kiosk/reservations/" in path else "dev-user"
    assert all(a.actor_sub == actor for a in audits)
    if not path.endswith("/split"):  # split: audited on the original, emitted for the new stay
        assert sorted(a.target_id for a in audits) == sorted(e.subject for e in events)


# -- forced failure after the outbox write ---------------------------------------------------

@pytest.fixture
def fail_after_outbox(backend, request, api):
    """A database trigger that aborts any transaction of this test's env once it has written its
    outbox row (fires at commit on PostgreSQL, at the insert on SQLite): no production hook."""
    env = str(api.env_id)
    if backend == "postgres":
        import psycopg2

        owner = request.getfixturevalue("pg_database").owner_url
        name = "fail_" + env.replace("-", "")[:16]
        conn = psycopg2.connect(owner)
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f"""
                CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                  IF NEW.env_id = '{env}'::uuid THEN RAISE EXCEPTION 'forced failure'; END IF;
                  RETURN NEW;
                END $$""")
            cur.execute(f"""CREATE CONSTRAINT TRIGGER {name} AFTER INSERT ON outbox_event
                            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {name}()""")
        yield
        with conn.cursor() as cur:
            cur.execute(f"DROP TRIGGER {name} ON outbox_event")
            cur.execute(f"DROP FUNCTION {name}()")
        conn.close()
    else:
        name = "fail_" + env.replace("-", "")[:16]
        hexenv = uuid.UUID(env).hex
        db.execute_sql(f"""CREATE TRIGGER {name} AFTER INSERT ON outbox_event
                           WHEN NEW.env_id = '{hexenv}'
                           BEGIN SELECT RAISE(ABORT, 'forced failure'); END""")
        yield
        db.execute_sql(f"DROP TRIGGER {name}")


@pytest.mark.parametrize("method,path", MUTATING, ids=[f"{m} {p}" for m, p in MUTATING])
def test_forced_failure_after_the_outbox_write_leaves_nothing(api, method, path, request):
    recipe = RECIPES.get((method, path))
    if recipe is None:
        pytest.fail(f"no recipe for {method} {path}")
    world = World(api)
    url, body = recipe(world)
    ctx = _ctx(api)
    before_rows = _snapshot(ctx)
    request.getfixturevalue("fail_after_outbox")
    resp = api.request(method, url, json=body)
    assert resp.status_code == 500, resp.text
    assert resp.json["code"] == "internal_error"
    assert _snapshot(ctx) == before_rows


def _snapshot(ctx: Ctx) -> dict[str, Any]:
    """Every row of the env, by table (ids and versions), to prove nothing changed."""
    with read_scope(ctx):
        out = {}
        for model in ALL_MODELS:
            if model is IdempotencyRecord:
                continue
            fields = [model.id] + ([model.version] if "version" in model._meta.fields else [])
            out[model.__name__] = sorted(tuple(str(v) for v in row) for row in
                                         model.select(*fields).tuples())
        return out
