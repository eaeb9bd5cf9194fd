"""The per-request shortcuts keep their rules: the tenant scopes are plain context
managers that restore what they found, the access line's timestamp is `isoformat()`'s, and the
request limits' quick bound never lets through what the header-by-header measure refuses (nor
refuses what it lets through)."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime

import falcon.testing
import pytest

from pms.api.middleware import RequestLimitsMiddleware
from pms.db.scope import (
    ScopeError,
    current_env,
    is_tenant_free,
    is_unscoped,
    require_env,
    tenant_free,
    tenant_scope,
    unscoped,
)
from pms.errors import HeaderTooLarge
from pms.logging import _utc_iso

# -- the tenant scopes ---------------------------------------------------------------------------


def test_tenant_scope_gives_its_env_and_restores_the_outer_one():
    outer, inner = uuid.uuid4(), uuid.uuid4()
    assert current_env() is None
    with tenant_scope(outer) as env:
        assert env == outer and require_env() == outer
        with tenant_scope(inner) as nested:
            assert nested == inner and current_env() == inner
        assert current_env() == outer
    assert current_env() is None
    with pytest.raises(ScopeError):
        require_env()


def test_a_scope_is_left_when_its_block_raises():
    with pytest.raises(ValueError), tenant_scope(uuid.uuid4()), unscoped(), tenant_free():
        assert is_unscoped() and is_tenant_free() and current_env() is not None
        raise ValueError("boom")
    assert current_env() is None and not is_unscoped() and not is_tenant_free()


def test_unscoped_and_tenant_free_give_nothing_and_nest():
    with unscoped() as a:
        assert a is None and is_unscoped()
        with unscoped():
            assert is_unscoped()
        assert is_unscoped()
    assert not is_unscoped()
    with tenant_free() as b:
        assert b is None and is_tenant_free()
    assert not is_tenant_free()


def test_a_scope_object_is_entered_once():
    scope = tenant_scope(uuid.uuid4())
    with scope:
        with pytest.raises(RuntimeError), scope:
            pass


# -- the access line's timestamp -----------------------------------------------------------------


@pytest.mark.parametrize("at", [0.0, 1.5, 1_700_000_000.0, 1_700_000_000.000001,
                                1_799_999_999.999999, 1_799_999_999.9999996])
def test_the_access_timestamp_is_isoformat(at):
    assert _utc_iso(at) == datetime.fromtimestamp(at, UTC).isoformat()


def test_the_access_timestamp_is_isoformat_for_any_time():
    rng = random.Random(10)
    for _ in range(20_000):
        at = rng.randrange(10**15, 2 * 10**15) / 1e6
        assert _utc_iso(at) == datetime.fromtimestamp(at, UTC).isoformat()


# -- the request limits --------------------------------------------------------------------------


def _req(headers: dict[str, str]) -> falcon.Request:
    return falcon.testing.create_req(path="/v1/properties", headers=headers)


def _answer(limits: RequestLimitsMiddleware, headers: dict[str, str]) -> HeaderTooLarge | None:
    try:
        limits.process_request(_req(headers), falcon.Response())
    except HeaderTooLarge as exc:
        return exc
    return None


def test_a_header_at_the_limit_passes_and_one_byte_more_is_refused_by_name():
    limits = RequestLimitsMiddleware(max_header_bytes=100, max_headers_bytes=10_000)
    name = "X-Long"
    at_limit = "v" * (100 - len(name))
    # the WSGI name (HTTP_X_LONG) is longer than the header's: the quick bound is over the
    # limit here, and the exact measure must still let it through
    assert _answer(limits, {name: at_limit}) is None
    refused = _answer(limits, {name: at_limit + "v"})
    assert refused is not None and "X-LONG" in str(refused)


def test_headers_at_the_total_limit_pass_and_one_byte_more_is_refused():
    base = sum(len(k) + len(v) for k, v in _req({}).headers.items())  # the test client's own
    limits = RequestLimitsMiddleware(max_header_bytes=10_000, max_headers_bytes=base + 300)
    filling = {"A": "a" * 99, "B": "b" * 99, "C": "c" * 99}  # name + value: 3 x 100 bytes
    assert _answer(limits, filling) is None
    assert _answer(limits, {**filling, "C": "c" * 100}) is not None


def test_the_quick_bound_and_the_exact_measure_agree_on_random_headers():
    rng = random.Random(17)
    for _ in range(300):
        limits = RequestLimitsMiddleware(max_header_bytes=rng.randint(20, 200),
                                         max_headers_bytes=rng.randint(100, 800))
        headers = {f"X-H{i}": "x" * rng.randint(0, 150) for i in range(rng.randint(1, 6))}
        req = _req(headers)
        exact = None
        try:
            limits._measure(req)
        except HeaderTooLarge as exc:
            exact = str(exc)
        quick = _answer(limits, headers)
        assert (None if quick is None else str(quick)) == exact


# -- the bearer check ----------------------------------------------------------------------------


class CountingClock:
    def __init__(self) -> None:
        self.calls = 0
        self.at = datetime.now(UTC)

    def now(self) -> datetime:
        self.calls += 1
        return self.at


# a valid W3C traceparent (an invalid one, as "00-abc-def-01" once was here, is dropped)
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_the_bearer_check_reads_the_clock_once_and_the_ctx_gets_that_time(base_settings):
    from pms.api.auth import AuthMiddleware, JwksCache, TokenVerifier
    from pms.devkeys import mint_token

    clock = CountingClock()
    auth = AuthMiddleware(TokenVerifier(base_settings, JwksCache(base_settings.jwks_url), clock),
                          clock)
    env = uuid.uuid4()
    headers = {"Authorization": f"Bearer {mint_token(base_settings, env_id=env)}",
               "X-Platform-Env-Id": str(env), "traceparent": TRACEPARENT,
               "Idempotency-Key": "k1"}
    for _ in range(2):  # a full verification, then the cached token
        req = falcon.testing.create_req(path="/v1/properties", headers=headers)
        req.context.request_id = "r1"
        before = clock.calls
        auth.process_request(req, falcon.Response())
        assert clock.calls == before + 1
        ctx = req.context.ctx
        assert ctx.now is clock.at and ctx.env_id == env and ctx.request_id == "r1"
        assert (ctx.traceparent, ctx.idempotency_key) == (TRACEPARENT, "k1")
    assert len(auth.verifier.verified) == 1


# -- gunicorn's pre_request hook -----------------------------------------------------------------


@pytest.mark.parametrize(("headers", "closes"), [
    ([("HOST", "x")], False),
    ([("CONTENT-LENGTH", "10")], False),
    ([("CONTENT-LENGTH", str(10**9))], True),
    ([("CONTENT-LENGTH", "10"), ("CONTENT-LENGTH", str(10**9))], False),  # the first one counts
    ([("TRANSFER-ENCODING", "gzip, Chunked")], True),
    ([("TRANSFER-ENCODING", "gzip")], False),
    ([("CONTENT-LENGTH", "abc")], False),
])
def test_requests_whose_body_may_stay_unread_close_their_connection(headers, closes):
    from types import SimpleNamespace

    from pms import gunicorn_conf

    req = SimpleNamespace(headers=headers, must_close=False)
    gunicorn_conf.pre_request(None, req)
    assert req.must_close is closes


def test_the_worker_heartbeat_lives_in_memory_when_it_can():
    import os

    from pms import gunicorn_conf

    expected = "/dev/shm" if os.path.isdir("/dev/shm") else None
    assert gunicorn_conf.worker_tmp_dir == expected
