"""The two performance shortcuts on the GET path keep their safety rules: the verified-token cache
never serves an expired or never-verified token, and the pool skips its liveness ping only for a
connection that was checked in moments ago."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from pms.api.auth import JwksCache, TokenVerifier, VerifiedTokens, fetch_jwks
from pms.clock import FixedClock
from pms.db.database import make_database
from pms.devkeys import mint_token
from pms.errors import Unauthorized
from tests import pg


class CountingFetch:
    """Reads the real key file and counts the reads."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, url: str) -> dict:
        self.calls += 1
        return fetch_jwks(url)


def _verifier(settings, clock, *, cache_size=16):  # noqa: ANN001, ANN202
    fetch = CountingFetch()
    return TokenVerifier(settings, JwksCache(settings.jwks_url, fetch=fetch), clock,
                         cache_size=cache_size), fetch


def test_a_verified_token_is_served_from_the_cache(base_settings):
    clock = FixedClock(datetime.now(UTC))
    verifier, _ = _verifier(base_settings, clock)
    token = mint_token(base_settings, env_id=uuid.uuid4())
    first = verifier.verify(token)
    assert len(verifier.verified) == 1
    assert verifier.verify(token) is first


def test_a_cached_token_is_refused_once_it_expires(base_settings):
    clock = FixedClock(datetime.now(UTC))
    verifier, _ = _verifier(base_settings, clock)
    token = mint_token(base_settings, env_id=uuid.uuid4(), ttl_s=60)
    verifier.verify(token)
    clock.advance(seconds=60 + 31)
    with pytest.raises(Unauthorized) as err:
        verifier.verify(token)
    assert err.value.code == "token_expired"


def test_a_token_that_fails_verification_is_never_cached(base_settings):
    clock = FixedClock(datetime.now(UTC))
    verifier, _ = _verifier(base_settings, clock)
    token = mint_token(base_settings, env_id=uuid.uuid4())
    head, payload, sig = token.split(".")
    forged = ".".join([head, payload, sig[:-4] + ("AAAA" if sig[-4:] != "AAAA" else "BBBB")])
    for _ in range(2):
        with pytest.raises(Unauthorized):
            verifier.verify(forged)
    assert len(verifier.verified) == 0


def test_the_cache_is_bounded_least_recently_used_first():
    cache = VerifiedTokens(size=2)
    far = {"exp": 4_000_000_000}
    key = object()

    def current(kid: str) -> object:
        return key

    for token in ("a", "b"):
        cache.put(token, far, "kid", key)
    assert cache.get("a", 0, current) is far  # a is now the most recent
    cache.put("c", far, "kid", key)
    assert len(cache) == 2
    assert cache.get("b", 0, current) is None
    assert cache.get("a", 0, current) is far and cache.get("c", 0, current) is far


def test_a_cached_token_is_refused_once_its_key_leaves_the_key_set(base_settings, tmp_path):
    from pms.devkeys import generate_keys

    clock = FixedClock(datetime.now(UTC))
    rotated = base_settings.with_(jwks_url=f"file://{tmp_path}/jwks.json")
    generate_keys(rotated)
    source = {"url": base_settings.jwks_url}
    jwks = JwksCache(base_settings.jwks_url, fetch=lambda url: fetch_jwks(source["url"]),
                     cooldown_s=0)
    verifier = TokenVerifier(base_settings, jwks, clock)
    old = mint_token(base_settings, env_id=uuid.uuid4())
    verifier.verify(old)
    # The identity provider rotates: the next unknown kid refetches a set without the old key
    source["url"] = rotated.jwks_url
    verifier.verify(mint_token(rotated, env_id=uuid.uuid4()))
    with pytest.raises(Unauthorized):
        verifier.verify(old)


def test_the_cache_can_be_switched_off(base_settings):
    clock = FixedClock(datetime.now(UTC))
    verifier, _ = _verifier(base_settings, clock, cache_size=0)
    verifier.verify(mint_token(base_settings, env_id=uuid.uuid4()))
    assert verifier.verified is None


# -- the pool's liveness ping ----------------------------------------------------------------------

@pytest.mark.postgres
def test_a_connection_idle_past_the_threshold_is_pinged_and_replaced(pg_database):
    database = make_database(pg_database.app_url, pool_size=2)
    database.PING_AFTER_IDLE_S = 0.0
    try:
        database.connect()
        pid = pg.backend_pid(database)
        database.close()
        pg.terminate_backend(pid)
        database.connect()
        assert pg.backend_pid(database) != pid  # the dead connection was found and replaced
        database.close()
    finally:
        database.close_all()


@pytest.mark.postgres
def test_a_connection_returned_moments_ago_is_handed_out_again(pg_database):
    database = make_database(pg_database.app_url, pool_size=2)
    database.PING_AFTER_IDLE_S = 3600.0
    try:
        database.connect()
        pid = pg.backend_pid(database)
        database.close()
        database.connect()
        assert pg.backend_pid(database) == pid  # same backend, handed out again
        database.close()
    finally:
        database.close_all()
