"""the key set is re-read on a bounded age, so a key the identity provider
withdraws stops being trusted without a restart; the last good set is kept only while fetches
fail; and requests inside the age fetch nothing. A real HTTP server serves the key set."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import falcon.testing
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from pms.api.auth import JwksCache
from pms.app import create_app
from pms.devkeys import all_scopes
from tests.api.test_auth import JwksServer
from tests.helpers import assert_problem

MAX_AGE_S = 120.0
COOLDOWN_S = 30.0


class SecondKey:
    """A key pair of the identity provider beside the development one."""

    def __init__(self) -> None:
        self.kid = "idp-second"
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.public_jwk = json.loads(RSAAlgorithm.to_jwk(self.private.public_key()))
        self.public_jwk.update({"kid": self.kid, "alg": "RS256", "use": "sig"})

    def token(self, settings: Any, env_id: uuid.UUID) -> str:
        now = int(time.time())
        claims = {"iss": settings.jwt_issuer, "aud": settings.jwt_audience, "sub": "second",
                  "iat": now, "exp": now + 3600, "env_id": str(env_id),
                  "scope": " ".join(all_scopes())}
        return jwt.encode(claims, self.private, algorithm="RS256", headers={"kid": self.kid})


@pytest.fixture
def second() -> SecondKey:
    return SecondKey()


@pytest.fixture
def served(settings, second):
    dev_keys = json.loads(settings.jwks_path.read_text())["keys"]
    server = JwksServer({"keys": [*dev_keys, second.public_jwk]})
    yield server
    server.stop()


@pytest.fixture
def world(api, settings, database, served):
    """A client whose key set comes from the served one, on a clock the test moves."""
    clock = [1000.0]
    jwks = JwksCache(served.url, cooldown_s=COOLDOWN_S, max_age_s=MAX_AGE_S,
                     monotonic=lambda: clock[0])
    app = create_app(settings.with_(jwks_url=served.url), db=database, jwks=jwks)
    client = falcon.testing.TestClient(app)
    prop = api.post("/v1/properties", {"propertyCode": "JWKS1", "timezone": "UTC",
                                       "currencyCode": "EUR"}).json["id"]

    def get(token: str) -> Any:
        return client.simulate_get(f"/v1/properties/{prop}", headers={
            "Authorization": f"Bearer {token}", "X-Platform-Env-Id": str(api.env_id)})

    return clock, get


def test_a_withdrawn_key_is_refused_once_the_key_set_is_past_its_age(api, settings, served,
                                                                     second, world):
    clock, get = world
    withdrawn = second.token(settings, api.env_id)
    assert get(withdrawn).status_code == 200
    assert get(api.token).status_code == 200
    served.doc = {"keys": [k for k in served.doc["keys"] if k["kid"] != second.kid]}
    # inside the age: requests (verified-token cache hits and full verifications alike) fetch
    # nothing; the set read at the first request still serves
    for _ in range(5):
        assert get(withdrawn).status_code == 200
    clock[0] += MAX_AGE_S - 1
    assert get(withdrawn).status_code == 200
    assert served.fetches == 1
    clock[0] += 2  # past the age: the next request re-reads the set, the dropped key is gone
    assert_problem(get(withdrawn), 401, "invalid_token")
    assert get(api.token).status_code == 200  # the key still served stays trusted
    assert served.fetches == 2
    for _ in range(3):
        assert_problem(get(withdrawn), 401, "invalid_token")
    assert served.fetches == 2  # an unknown kid refetches at most once per cooldown


def test_the_last_good_set_serves_only_while_fetches_fail(api, settings, served, second, world):
    clock, get = world
    withdrawn = second.token(settings, api.env_id)
    assert get(withdrawn).status_code == 200
    served.doc = {"keys": [k for k in served.doc["keys"] if k["kid"] != second.kid]}
    served.down = True
    clock[0] += MAX_AGE_S + 1
    # the provider is down: the last good set (the key included) keeps serving, no 401 outage
    for _ in range(3):
        assert get(withdrawn).status_code == 200
        assert get(api.token).status_code == 200
    assert served.fetches == 2  # one failed attempt, retried only after the cooldown
    clock[0] += COOLDOWN_S + 1
    assert get(api.token).status_code == 200
    assert served.fetches == 3
    served.down = False  # back: still failing until the cooldown passes, then the new set
    clock[0] += COOLDOWN_S + 1
    assert get(api.token).status_code == 200
    assert served.fetches == 4
    assert_problem(get(withdrawn), 401, "invalid_token")


def test_an_unchanged_key_keeps_its_verified_tokens_across_a_refresh(api, served, world,
                                                                     monkeypatch):
    from pms.api import auth

    clock, get = world
    assert get(api.token).status_code == 200
    calls = []
    original = auth.TokenVerifier._verify

    def counting(self, token, now):  # noqa: ANN001, ANN202
        calls.append(token)
        return original(self, token, now)

    monkeypatch.setattr(auth.TokenVerifier, "_verify", counting)
    clock[0] += MAX_AGE_S + 1
    assert get(api.token).status_code == 200
    assert served.fetches == 2 and calls == []  # re-read, same key: still a cache hit
