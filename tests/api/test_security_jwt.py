"""JWT checks beyond the signature (RFC 8725 §3.11, RFC 9068): a `typ` header, when present,
is `JWT` or `at+jwt` (an ID token, a logout token or another kind is refused); and a token's
lifetime is bounded (`exp - iat` and `exp - now` at most settings.jwt_max_lifetime_s, 24 h by
default). Through the HTTP API, on both backends."""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
import pytest

from tests.api.test_auth import _claims, _sign, get_prop
from tests.helpers import assert_problem

HOUR = 3600


@pytest.fixture
def prop(api: Any) -> str:
    resp = api.post("/v1/properties", {"propertyCode": "JWTSEC1", "timezone": "UTC",
                                       "currencyCode": "EUR"})
    assert resp.status_code == 201
    return resp.json["id"]


@pytest.mark.parametrize("typ,ok", [
    ("JWT", True), ("jwt", True), ("at+jwt", True), ("application/at+jwt", True),
    (None, True),  # no typ header at all
    ("id_token+jwt", False), ("logout+jwt", False), ("JOSE", False), ("secevent+jwt", False),
    (5, False),
])
def test_the_typ_header_names_an_access_token(api, settings, prop, typ, ok):
    token = _sign(settings, _claims(settings, api.env_id), headers={"typ": typ})
    header = json.loads(jwt.utils.base64url_decode(token.split(".")[0]))
    assert header.get("typ") == typ  # the header sent is the one named
    resp = get_prop(api, prop, token)
    if ok:
        assert resp.status_code == 200, resp.text
    else:
        assert_problem(resp, 401, "invalid_token")


def test_a_token_living_longer_than_the_bound_is_refused(api, settings, prop):
    assert settings.jwt_max_lifetime_s == 24 * HOUR
    now = int(time.time())
    refused = [
        _claims(settings, api.env_id, iat=now, exp=now + 10 * 365 * 24 * HOUR),
        _claims(settings, api.env_id, iat=now, exp=now + 25 * HOUR),
        # issued long ago for a long life: still valid by exp, but exp - iat is over the bound
        _claims(settings, api.env_id, iat=now - 47 * HOUR, exp=now + HOUR),
    ]
    for claims in refused:
        assert_problem(get_prop(api, prop, _sign(settings, claims)), 401,
                       "token_lifetime_too_long")
    for claims in (_claims(settings, api.env_id, iat=now, exp=now + 24 * HOUR),
                   _claims(settings, api.env_id, iat=now - 23 * HOUR, exp=now + HOUR)):
        assert get_prop(api, prop, _sign(settings, claims)).status_code == 200


def test_the_bound_is_configured(api, settings, prop, database, clock):
    import falcon.testing

    from pms.app import create_app

    short = falcon.testing.TestClient(create_app(settings.with_(jwt_max_lifetime_s=HOUR),
                                                 db=database, clock=clock))
    now = int(time.time())
    headers = {"X-Platform-Env-Id": str(api.env_id)}
    two_hours = _sign(settings, _claims(settings, api.env_id, iat=now, exp=now + 2 * HOUR))
    resp = short.simulate_get(f"/v1/properties/{prop}",
                              headers={**headers, "Authorization": f"Bearer {two_hours}"})
    assert_problem(resp, 401, "token_lifetime_too_long")
    assert get_prop(api, prop, two_hours).status_code == 200  # the default bound takes it
