"""`Idempotency-Key` on POST (CONTRACT §3)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from pms.db.database import db
from pms.db.scope import tenant_scope
from pms.models import IdempotencyRecord, Property
from tests.helpers import assert_problem, counts, random_ref


def _stored(key: str, sub: str = "dev-user", holder_id: uuid.UUID | None = None) -> str:
    """The key as the middleware stores it for the `api` fixture's token (per caller)."""
    from types import SimpleNamespace

    from pms.api.idempotency import caller_key

    return caller_key(SimpleNamespace(sub=sub, holder_id=holder_id), key)


def _prop() -> dict:
    return {"propertyCode": random_ref("I").upper(), "timezone": "UTC", "currencyCode": "EUR"}


def test_same_key_same_request_replays_status_and_body(api, ctx):
    body = _prop()
    first = api.post("/v1/properties", body, headers={"Idempotency-Key": "k-1"})
    assert first.status_code == 201
    before = counts(ctx)
    again = api.post("/v1/properties", body, headers={"Idempotency-Key": "k-1"})
    assert again.status_code == 201
    assert again.json == first.json
    assert again.headers["idempotent-replayed"] == "true"
    assert again.headers.get("location") == first.headers.get("location")
    assert counts(ctx) == before
    assert "idempotent-replayed" not in first.headers


def test_same_key_different_body_is_422(api):
    api.post("/v1/properties", _prop(), headers={"Idempotency-Key": "k-2"})
    assert_problem(api.post("/v1/properties", _prop(), headers={"Idempotency-Key": "k-2"}),
                   422, "idempotency_key_mismatch")


def test_same_key_different_path_is_422(api):
    prop = api.post("/v1/properties", _prop(), headers={"Idempotency-Key": "k-3"}).json
    resp = api.post(f"/v1/properties/{prop['id']}/room-types", {"code": "A", "name": "A"},
                    headers={"Idempotency-Key": "k-3"})
    assert_problem(resp, 422, "idempotency_key_mismatch")


def test_key_still_running_is_409(api, ctx):
    from pms.api.idempotency import fingerprint  # noqa: F401 - the record below mimics a claim

    with tenant_scope(ctx.env_id), db.atomic():
        IdempotencyRecord.create(key=_stored("k-busy"), fingerprint="x" * 64, state="running",
                                 expires_at=ctx.now + timedelta(hours=1))
    resp = api.post("/v1/properties", _prop(), headers={"Idempotency-Key": "k-busy"})
    # a different fingerprint takes precedence over "running": mismatch is the caller's bug
    assert_problem(resp, 422, "idempotency_key_mismatch")


def test_key_still_running_with_same_request_is_409(api, ctx):
    import hashlib
    import json

    body = _prop()
    raw = json.dumps(body).encode()
    digest = hashlib.sha256(raw).hexdigest()
    fp = hashlib.sha256(f"POST /v1/properties {digest}".encode()).hexdigest()
    with tenant_scope(ctx.env_id), db.atomic():
        IdempotencyRecord.create(key=_stored("k-run"), fingerprint=fp, state="running",
                                 expires_at=ctx.now + timedelta(hours=1))
    resp = api.request("POST", "/v1/properties", body=raw, headers={
        "Idempotency-Key": "k-run", "Content-Type": "application/json"})
    assert_problem(resp, 409, "idempotency_key_in_use")


def test_empty_or_overlong_key_is_400(api):
    assert_problem(api.post("/v1/properties", _prop(), headers={"Idempotency-Key": " "}), 400,
                   "invalid_idempotency_key")
    assert_problem(api.post("/v1/properties", _prop(), headers={"Idempotency-Key": "x" * 256}),
                   400, "invalid_idempotency_key")
    assert api.post("/v1/properties", _prop(), headers={"Idempotency-Key": "x" * 255}).status_code == 201


def test_keys_are_per_env(api):
    body = _prop()
    a = api.post("/v1/properties", body, headers={"Idempotency-Key": "shared"})
    b = api.for_env(uuid.uuid4()).post("/v1/properties", body, headers={"Idempotency-Key": "shared"})
    assert a.status_code == b.status_code == 201
    assert a.json["id"] != b.json["id"]
    assert "idempotent-replayed" not in b.headers


def test_conflicts_are_not_stored_so_a_retry_runs_again(api, ctx):
    body = _prop()
    api.post("/v1/properties", body)
    first = api.post("/v1/properties", body, headers={"Idempotency-Key": "k-409"})
    assert_problem(first, 409, "already_exists")
    # the conflicting property goes away; the same key now succeeds
    with tenant_scope(ctx.env_id), db.atomic():
        Property.delete().where(Property.code == body["propertyCode"]).execute()
    retry = api.post("/v1/properties", body, headers={"Idempotency-Key": "k-409"})
    assert retry.status_code == 201
    assert "idempotent-replayed" not in retry.headers


def test_validation_errors_are_replayed(api):
    bad = {"propertyCode": "X"}
    first = api.post("/v1/properties", bad, headers={"Idempotency-Key": "k-422"})
    again = api.post("/v1/properties", bad, headers={"Idempotency-Key": "k-422"})
    assert first.status_code == again.status_code == 422
    assert again.headers["idempotent-replayed"] == "true"


def test_expired_records_do_not_replay(api, ctx):
    body = _prop()
    api.post("/v1/properties", body, headers={"Idempotency-Key": "k-old"})
    with tenant_scope(ctx.env_id), db.atomic():
        IdempotencyRecord.update(expires_at=ctx.now - timedelta(seconds=1)).where(
            IdempotencyRecord.key == _stored("k-old")).execute()
    resp = api.post("/v1/properties", body, headers={"Idempotency-Key": "k-old"})
    assert_problem(resp, 409, "already_exists")  # ran again instead of replaying the 201


def test_records_are_kept_72_hours(api, ctx):
    api.post("/v1/properties", _prop(), headers={"Idempotency-Key": "k-ttl"})
    with tenant_scope(ctx.env_id), db.atomic():
        record = IdempotencyRecord.get(IdempotencyRecord.key == _stored("k-ttl"))
    assert record.expires_at - record.created_at >= timedelta(hours=72) - timedelta(seconds=5)


def _running_claim(ctx, body: dict, key: str, *, age: timedelta, request_id: str) -> uuid.UUID:
    """A `running` record as a request that died after claiming `key` would have left it."""
    import hashlib
    import json

    digest = hashlib.sha256(json.dumps(body).encode()).hexdigest()
    fp = hashlib.sha256(f"POST /v1/properties {digest}".encode()).hexdigest()
    with tenant_scope(ctx.env_id), db.atomic():
        record = IdempotencyRecord.create(key=_stored(key), fingerprint=fp, state="running",
                                          request_id=request_id, created_at=ctx.now - age,
                                          expires_at=ctx.now + timedelta(hours=70))
    return record.id


def _post_raw(api, body: dict, key: str):  # noqa: ANN001, ANN202
    import json

    return api.request("POST", "/v1/properties", body=json.dumps(body).encode(),
                       headers={"Idempotency-Key": key, "Content-Type": "application/json"})


def test_a_claim_abandoned_before_any_change_is_claimed_again(api, ctx):
    body = _prop()
    _running_claim(ctx, body, "k-died-early", age=timedelta(minutes=3), request_id="died-early")
    before = counts(ctx)
    resp = _post_raw(api, body, "k-died-early")
    assert resp.status_code == 201, resp.text
    assert counts(ctx) == (before[0] + 1, before[1] + 1)  # executed once, now
    replay = _post_raw(api, body, "k-died-early")
    assert replay.status_code == 201 and replay.json == resp.json
    assert replay.headers["idempotent-replayed"] == "true"


def test_a_claim_abandoned_after_its_change_names_the_change_instead_of_repeating_it(api, ctx):
    from tests.factories import make_property

    body = _prop()
    claim = _running_claim(ctx, body, "k-died-late", age=timedelta(minutes=3),
                           request_id="died-late")
    # the claimant's change committed, marking its claim (by the claim's server id)
    made = make_property(ctx.with_(request_id="died-late", idempotency_claim=claim),
                         propertyCode=body["propertyCode"])
    before = counts(ctx)
    resp = _post_raw(api, body, "k-died-late")
    assert_problem(resp, 409, "idempotency_response_lost")
    assert resp.json["target_type"] == "Property" and resp.json["target_id"] == str(made.id)
    assert resp.json["original_request_id"] == "died-late"
    assert counts(ctx) == before  # nothing repeated


def test_a_recent_running_claim_is_still_in_use(api, ctx):
    body = _prop()
    _running_claim(ctx, body, "k-young", age=timedelta(seconds=30), request_id="still-running")
    assert_problem(_post_raw(api, body, "k-young"), 409, "idempotency_key_in_use")
