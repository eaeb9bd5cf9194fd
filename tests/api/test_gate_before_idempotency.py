"""the gate (scope, token kind, holder class) runs before any Idempotency-Key
lookup; a key belongs to its caller (env, `sub`, `holder_id`); refused requests store nothing.
recovering an abandoned key trusts no client-supplied request id."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta

from pms.db.database import db
from pms.db.scope import tenant_scope
from pms.devkeys import mint_token
from pms.models import IdempotencyRecord, Property
from tests.factories import make_booking_hotel
from tests.helpers import assert_problem, counts, random_ref


def _records(ctx) -> int:
    with tenant_scope(ctx.env_id):
        return IdempotencyRecord.select().count()


def _profile_body() -> dict:
    return {"last_name": "Lovelace", "email": f"{random_ref('ada')}@example.com",
            "phone": "+44 20 7946 0000"}


def test_a_token_without_the_scope_gets_403_not_the_stored_answer_and_stores_nothing(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    url = f"/v1/properties/{hotel.id}/profiles"
    body = _profile_body()
    staff = api.post(url, body, headers={"Idempotency-Key": "shared-key"})
    assert staff.status_code == 201, staff.text
    stored = _records(ctx)
    nobody = mint_token(api.settings, env_id=api.env_id, scopes=[])
    resp = api.post(url, body, headers={"Idempotency-Key": "shared-key"}, token=nobody)
    assert_problem(resp, 403, "missing_scope")
    assert "idempotent-replayed" not in resp.headers
    assert body["email"] not in resp.text and body["phone"] not in resp.text
    # its own key, refused: nothing stored either, so the same key still answers 403
    resp = api.post(url, body, headers={"Idempotency-Key": "own-key"}, token=nobody)
    assert_problem(resp, 403, "missing_scope")
    # a bad token (401) neither
    resp = api.post(url, body, headers={"Idempotency-Key": "shared-key"}, token="not.a.token")
    assert_problem(resp, 401)
    assert _records(ctx) == stored


def test_a_guest_on_a_staff_route_gets_403_not_the_stored_answer(api, ctx):
    body = {"propertyCode": random_ref("G").upper(), "timezone": "UTC", "currencyCode": "EUR"}
    first = api.post("/v1/properties", body, headers={"Idempotency-Key": "k-staff"})
    assert first.status_code == 201
    stored = _records(ctx)
    guest = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                       holder_id=str(uuid.uuid4()))
    resp = api.post("/v1/properties", body, headers={"Idempotency-Key": "k-staff"}, token=guest)
    assert_problem(resp, 403, "guest_not_allowed")
    assert "idempotent-replayed" not in resp.headers
    assert _records(ctx) == stored


def test_another_holder_sending_the_same_key_and_body_runs_fresh(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    url = f"/v1/properties/{hotel.id}/profiles"
    mine, theirs = uuid.uuid4(), uuid.uuid4()
    body = _profile_body()
    token_a = mint_token(api.settings, env_id=api.env_id, client_kind="guest", holder_id=str(mine))
    token_b = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                         holder_id=str(theirs))
    first = api.post(url, body, headers={"Idempotency-Key": "k-guest"}, token=token_a)
    assert first.status_code == 201 and first.json["id"] == str(mine)
    # B's same key is B's own: it runs, and never sees A's profile (the email is A's: 409)
    other = api.post(url, body, headers={"Idempotency-Key": "k-guest"}, token=token_b)
    assert "idempotent-replayed" not in other.headers
    assert str(mine) not in other.text and body["phone"] not in other.text
    assert_problem(other, 409, "profile_conflict")
    # A's retry still replays A's answer
    again = api.post(url, body, headers={"Idempotency-Key": "k-guest"}, token=token_a)
    assert again.headers.get("idempotent-replayed") == "true" and again.json == first.json


def test_another_staff_sub_with_the_same_key_runs_fresh(api, ctx):
    body = {"propertyCode": random_ref("S").upper(), "timezone": "UTC", "currencyCode": "EUR"}
    first = api.post("/v1/properties", body, headers={"Idempotency-Key": "k-sub"})
    assert first.status_code == 201
    other = mint_token(api.settings, env_id=api.env_id, sub="another-user")
    resp = api.post("/v1/properties", body, headers={"Idempotency-Key": "k-sub"}, token=other)
    # ran (the code is taken now), not replayed
    assert_problem(resp, 409, "already_exists")
    assert "idempotent-replayed" not in resp.headers


def _fingerprint(path: str, raw: bytes) -> str:
    digest = hashlib.sha256(raw).hexdigest()
    return hashlib.sha256(f"POST {path} {digest}".encode()).hexdigest()


def test_an_abandoned_claim_is_not_taken_for_changed_by_a_change_under_the_same_request_id(
        api, ctx):
    """the claimant died before changing anything; another request of the same
    client reused its X-Platform-Request-Id and made a change. The retry must run (201), not
    answer 409 idempotency_response_lost naming the other request's row."""
    from tests.api.test_idempotency import _stored

    body = {"propertyCode": random_ref("R").upper(), "timezone": "UTC", "currencyCode": "EUR"}
    raw = json.dumps(body).encode()
    with tenant_scope(ctx.env_id), db.atomic():
        IdempotencyRecord.create(key=_stored("k-abandoned"),
                                 fingerprint=_fingerprint("/v1/properties", raw),
                                 state="running", request_id="client-chosen-id",
                                 created_at=ctx.now - timedelta(minutes=3),
                                 expires_at=ctx.now + timedelta(hours=70))
    unrelated = {"propertyCode": random_ref("U").upper(), "timezone": "UTC",
                 "currencyCode": "EUR"}
    made = api.post("/v1/properties", unrelated,
                    headers={"X-Platform-Request-Id": "client-chosen-id"})
    assert made.status_code == 201
    before = counts(ctx)
    resp = api.request("POST", "/v1/properties", body=raw, headers={
        "Idempotency-Key": "k-abandoned", "Content-Type": "application/json"})
    assert resp.status_code == 201, resp.text
    assert resp.json["propertyCode"] == body["propertyCode"]
    assert counts(ctx)[0] == before[0] + 1


def test_a_request_that_died_after_its_change_is_named_by_its_claim(api, ctx, monkeypatch):
    """The server's claim id reaches the change's transaction: a keyed create whose answer is
    never stored (the process died after the commit) leaves its record `changed`, naming the
    row; the retry gets 409 idempotency_response_lost with that row, never a second create."""
    from pms.api.idempotency import IdempotencyMiddleware
    from tests.api.test_idempotency import _stored

    body = {"propertyCode": random_ref("D").upper(), "timezone": "UTC", "currencyCode": "EUR"}
    raw = json.dumps(body).encode()
    headers = {"Idempotency-Key": "k-died", "Content-Type": "application/json",
               "X-Platform-Request-Id": "shared-by-the-client"}
    def die(self, resp):  # noqa: ANN001, ANN202 - the process dies storing the answer
        raise SystemError("killed while storing the answer")

    with monkeypatch.context() as patch:
        patch.setattr(IdempotencyMiddleware, "_response", die)
        api.request("POST", "/v1/properties", body=raw, headers=headers)
    with tenant_scope(ctx.env_id), db.atomic():
        made = Property.get(Property.code == body["propertyCode"])  # the change committed
        record = IdempotencyRecord.get(IdempotencyRecord.key == _stored("k-died"))
        assert record.state == "changed"
        assert record.response_headers == {"target_type": "Property",
                                           "target_id": str(made.id)}
        IdempotencyRecord.update(created_at=ctx.now - timedelta(minutes=3)).where(
            IdempotencyRecord.id == record.id).execute()
    before = counts(ctx)
    lost = api.request("POST", "/v1/properties", body=raw, headers=headers)
    assert_problem(lost, 409, "idempotency_response_lost")
    assert lost.json["target_type"] == "Property" and lost.json["target_id"] == str(made.id)
    assert counts(ctx) == before
