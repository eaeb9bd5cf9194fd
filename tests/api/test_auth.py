"""Authentication and the policy gate (CONTRACT §2): every case answers 401/400/403 as the
contract says, and 401 happens before any domain logic."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import falcon.testing
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from pms.api.auth import JwksCache
from pms.app import create_app
from pms.devkeys import all_scopes, load_private_key, mint_token
from tests.helpers import assert_problem


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _claims(settings: Any, env: uuid.UUID, **over: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {"iss": settings.jwt_issuer, "aud": settings.jwt_audience, "sub": "tester",
              "iat": now, "exp": now + 600, "env_id": str(env),
              "scope": " ".join(all_scopes())}
    claims.update(over)
    return {k: v for k, v in claims.items() if v is not None}


def _sign(settings: Any, claims: dict[str, Any], *, alg: str = "RS256",
          headers: dict[str, Any] | None = None) -> str:
    kid, key = load_private_key(settings)
    hdrs = {"kid": kid}
    hdrs.update(headers or {})
    return jwt.encode(claims, key, algorithm=alg, headers=hdrs)


@pytest.fixture
def prop(api: Any) -> str:
    resp = api.post("/v1/properties", {"propertyCode": "AUTH1", "timezone": "UTC",
                                       "currencyCode": "EUR"})
    assert resp.status_code == 201
    return resp.json["id"]


def get_prop(api: Any, prop: str, token: str | None, *, env: Any = None,
             extra: dict[str, str] | None = None) -> Any:
    headers = {"X-Platform-Env-Id": str(env or api.env_id)}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    headers.update(extra or {})
    return api.get(f"/v1/properties/{prop}", raw_headers=headers)


def test_valid_token_reads_the_property(api, prop):
    assert get_prop(api, prop, api.token).status_code == 200


def test_no_bearer_is_401_with_www_authenticate(api, prop):
    resp = get_prop(api, prop, None)
    assert_problem(resp, 401, "missing_token")
    assert resp.headers["www-authenticate"].startswith("Bearer")


def test_non_bearer_scheme_is_401(api, prop):
    resp = api.get(f"/v1/properties/{prop}", raw_headers={
        "Authorization": "Basic dXNlcjpwYXNz", "X-Platform-Env-Id": str(api.env_id)})
    assert_problem(resp, 401)


def test_401_comes_before_domain_logic_even_for_unknown_routes_and_bad_bodies(api):
    resp = api.request("POST", "/v1/properties", raw_headers={"Content-Type": "application/json"},
                       body=b"{not json")
    assert_problem(resp, 401, "missing_token")
    assert_problem(api.get("/v1/nowhere", raw_headers={}), 401)


def test_alg_none_is_refused(api, prop, settings):
    header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    payload = _b64(json.dumps(_claims(settings, api.env_id)).encode())
    assert_problem(get_prop(api, prop, f"{header}.{payload}."), 401)


def test_hs256_signed_with_the_rsa_public_key_is_refused(api, prop, settings):
    kid, key = load_private_key(settings)
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    payload = _b64(json.dumps(_claims(settings, api.env_id)).encode())
    signing_input = f"{header}.{payload}".encode()
    signature = _b64(hmac.new(public_pem, signing_input, hashlib.sha256).digest())
    assert_problem(get_prop(api, prop, f"{header}.{payload}.{signature}"), 401)


def test_rs512_is_refused_when_not_allowed(api, prop, settings):
    token = _sign(settings, _claims(settings, api.env_id), alg="RS512")
    assert_problem(get_prop(api, prop, token), 401)


def test_expired_token_is_401(api, prop, settings):
    now = int(time.time())
    token = _sign(settings, _claims(settings, api.env_id, iat=now - 7200, exp=now - 120))
    assert_problem(get_prop(api, prop, token), 401, "token_expired")


def test_expiry_within_leeway_is_accepted(api, prop, settings):
    now = int(time.time())
    token = _sign(settings, _claims(settings, api.env_id, exp=now - 10))
    assert get_prop(api, prop, token).status_code == 200


def test_nbf_in_the_future_is_401(api, prop, settings):
    token = _sign(settings, _claims(settings, api.env_id, nbf=int(time.time()) + 600))
    assert_problem(get_prop(api, prop, token), 401)


@pytest.mark.parametrize("claim", ["exp", "aud", "sub", "iss", "iat"])
def test_missing_required_claim_is_401(api, prop, settings, claim):
    claims = _claims(settings, api.env_id)
    claims.pop(claim)
    assert_problem(get_prop(api, prop, _sign(settings, claims)), 401)


@pytest.mark.parametrize("issuer_suffix", ["-evil", "x", "/"])
def test_wrong_or_prefix_matching_issuer_is_401(api, prop, settings, issuer_suffix):
    token = _sign(settings, _claims(settings, api.env_id, iss=settings.jwt_issuer + issuer_suffix))
    assert_problem(get_prop(api, prop, token), 401)


def test_issuer_that_is_a_prefix_of_ours_is_401(api, prop, settings):
    token = _sign(settings, _claims(settings, api.env_id, iss=settings.jwt_issuer[:-1]))
    assert_problem(get_prop(api, prop, token), 401)


@pytest.mark.parametrize("aud", ["other-service", "hotel-pms-x", "hotel"])
def test_wrong_audience_is_401(api, prop, settings, aud):
    assert_problem(get_prop(api, prop, _sign(settings, _claims(settings, api.env_id, aud=aud))), 401)


def test_unknown_kid_is_401(api, prop, settings):
    token = _sign(settings, _claims(settings, api.env_id), headers={"kid": "no-such-key"})
    assert_problem(get_prop(api, prop, token), 401)


@pytest.mark.parametrize("header", ["jku", "x5u", "jwk"])
def test_key_location_headers_are_refused(api, prop, settings, header):
    value: Any = "https://attacker.example/jwks.json" if header != "jwk" else {"kty": "RSA"}
    token = _sign(settings, _claims(settings, api.env_id), headers={header: value})
    assert_problem(get_prop(api, prop, token), 401)


def test_tenant_mismatch_is_403(api, prop, settings):
    other = uuid.uuid4()
    token = mint_token(settings, env_id=other)
    assert_problem(get_prop(api, prop, token), 403, "tenant_mismatch")


def test_token_without_env_id_is_403(api, prop, settings):
    token = _sign(settings, _claims(settings, api.env_id, env_id=None))
    assert_problem(get_prop(api, prop, token), 403)


def test_missing_tenant_header_is_400(api, prop):
    resp = api.get(f"/v1/properties/{prop}", raw_headers={"Authorization": f"Bearer {api.token}"})
    assert_problem(resp, 400, "missing_tenant")


def test_malformed_tenant_header_is_400(api, prop):
    assert_problem(get_prop(api, prop, api.token, env="not-a-uuid"), 400, "malformed_tenant")


def test_underscore_spelling_of_the_tenant_header_is_not_the_tenant_header(api, prop):
    # WSGI folds "_" and "-" together; gunicorn's header_map=drop removes such headers before
    # they reach the app (tested over real HTTP in tests/ops). Here: without the real header,
    # the underscore spelling alone never authenticates a tenant.
    resp = api.get(f"/v1/properties/{prop}", raw_headers={
        "Authorization": f"Bearer {api.token}"})
    assert_problem(resp, 400, "missing_tenant")


def test_scope_prefix_does_not_match(api, prop, settings):
    # holds ...:writes and ...:readx but not ...:write / ...:read
    token = mint_token(settings, env_id=api.env_id,
                       scopes=["hotel:pms:properties:writes", "hotel:pms:properties:readx"])
    assert_problem(get_prop(api, prop, token), 403, "missing_scope")
    resp = api.post("/v1/properties", {"propertyCode": "X1", "timezone": "UTC",
                                       "currencyCode": "EUR"}, token=token)
    assert_problem(resp, 403, "missing_scope")


def test_write_does_not_imply_read(api, prop, settings):
    token = mint_token(settings, env_id=api.env_id, scopes=["hotel:pms:properties:write"])
    assert_problem(get_prop(api, prop, token), 403, "missing_scope")


def test_scp_array_claim_is_accepted(api, prop, settings):
    token = _sign(settings, _claims(settings, api.env_id, scope=None,
                                    scp=["hotel:pms:properties:read"]))
    assert get_prop(api, prop, token).status_code == 200


def test_es256_tokens_from_the_key_set_are_accepted(api, prop, settings, tmp_path, database):
    ec_key = ec.generate_private_key(ec.SECP256R1())
    jwk = json.loads(ECAlgorithm.to_jwk(ec_key.public_key()))
    jwk.update({"kid": "ec-1", "alg": "ES256"})
    jwks_path = tmp_path / "jwks.json"
    jwks_path.write_text(json.dumps({"keys": [jwk]}))
    app = create_app(settings.with_(jwks_url=f"file://{jwks_path}"), db=database)
    client = falcon.testing.TestClient(app)
    token = jwt.encode(_claims(settings, api.env_id), ec_key, algorithm="ES256",
                       headers={"kid": "ec-1"})
    resp = client.simulate_get(f"/v1/properties/{prop}", headers={
        "Authorization": f"Bearer {token}", "X-Platform-Env-Id": str(api.env_id)})
    assert resp.status_code == 200, resp.text


# -- the key-set cache ------------------------------------------------------------------------

class JwksServer:
    """A real HTTP identity provider on 127.0.0.1 that can go down."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.fetches = 0
        self.down = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                server.fetches += 1
                if server.down:
                    self.send_response(503)
                    self.end_headers()
                    return
                body = json.dumps(server.doc).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/jwks.json"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def idp(settings):
    server = JwksServer(json.loads(settings.jwks_path.read_text()))
    yield server
    server.stop()


def _client(settings, database, jwks):
    app = create_app(settings.with_(jwks_url=jwks.url), db=database, jwks=jwks)
    return falcon.testing.TestClient(app)


def test_identity_provider_outage_after_a_fetch_keeps_cached_keys(api, prop, settings, database, idp):
    jwks = JwksCache(idp.url, cooldown_s=0)
    client = _client(settings, database, jwks)
    headers = {"Authorization": f"Bearer {api.token}", "X-Platform-Env-Id": str(api.env_id)}
    assert client.simulate_get(f"/v1/properties/{prop}", headers=headers).status_code == 200
    idp.down = True
    # an unknown kid forces a refetch, which fails: the cached key set must survive it
    unknown = _sign(settings, _claims(settings, api.env_id), headers={"kid": "rotated"})
    assert client.simulate_get(f"/v1/properties/{prop}", headers={
        **headers, "Authorization": f"Bearer {unknown}"}).status_code == 401
    idp.stop()
    for _ in range(3):
        assert client.simulate_get(f"/v1/properties/{prop}", headers=headers).status_code == 200


def test_unknown_kid_refetches_at_most_once_per_cooldown(api, prop, settings, database, idp):
    clock = [1000.0]
    jwks = JwksCache(idp.url, cooldown_s=30, monotonic=lambda: clock[0])
    client = _client(settings, database, jwks)
    unknown = _sign(settings, _claims(settings, api.env_id), headers={"kid": "rotated"})
    headers = {"Authorization": f"Bearer {unknown}", "X-Platform-Env-Id": str(api.env_id)}
    for _ in range(5):
        assert client.simulate_get(f"/v1/properties/{prop}", headers=headers).status_code == 401
    assert idp.fetches == 1
    clock[0] += 31
    client.simulate_get(f"/v1/properties/{prop}", headers=headers)
    assert idp.fetches == 2


def test_oversized_key_set_is_not_loaded(idp):
    from pms.api.auth import JwksUnavailable, fetch_jwks

    idp.doc = {"keys": [{"kid": f"k{i}", "kty": "RSA", "n": "x" * 400, "e": "AQAB"}
                        for i in range(200)]}
    with pytest.raises(JwksUnavailable, match="size limit"):
        fetch_jwks(idp.url)


def test_fetch_does_not_follow_redirects():
    from pms.api.auth import JwksUnavailable, fetch_jwks

    class Redirect(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.1:1/evil.json")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with pytest.raises(JwksUnavailable):
            fetch_jwks(f"http://127.0.0.1:{httpd.server_address[1]}/jwks.json")
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_fetch_times_out_after_two_seconds():
    import socket

    from pms.api.auth import JwksUnavailable, fetch_jwks

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts the TCP connection, never answers
    try:
        started = time.monotonic()
        with pytest.raises(JwksUnavailable):
            fetch_jwks(f"http://127.0.0.1:{listener.getsockname()[1]}/jwks.json", timeout=0.5)
        assert time.monotonic() - started < 2
    finally:
        listener.close()


# -- session claims and NumericDate -------------------------------------------------

@pytest.mark.parametrize("holder", [None, "", "   ", "not-a-uuid", 42, ["a"]],
                         ids=["missing", "empty", "blank", "not-uuid", "number", "list"])
def test_guest_token_without_a_uuid_holder_id_is_401(api, prop, settings, holder):
    # a guest token whose holder cannot restrict it must never read as an unrestricted one
    token = _sign(settings, _claims(settings, api.env_id, client_kind="guest", holder_id=holder))
    assert_problem(get_prop(api, prop, token), 401, "invalid_token")


@pytest.mark.parametrize("holder", ["", "not-a-uuid", 7])
def test_malformed_holder_id_is_401_on_any_client_kind(api, prop, settings, holder):
    token = _sign(settings, _claims(settings, api.env_id, client_kind="user", holder_id=holder))
    assert_problem(get_prop(api, prop, token), 401, "invalid_token")


@pytest.mark.parametrize("kind", ["Guest", "staff", "", 1])
def test_unknown_client_kind_is_401_not_read_as_user(api, prop, settings, kind):
    token = _sign(settings, _claims(settings, api.env_id, client_kind=kind))
    assert_problem(get_prop(api, prop, token), 401, "invalid_token")


def test_guest_token_with_a_uuid_holder_id_is_accepted(api, prop, settings):
    token = _sign(settings, _claims(settings, api.env_id, client_kind="guest",
                                    holder_id=str(uuid.uuid4())))
    assert get_prop(api, prop, token).status_code == 200


@pytest.mark.parametrize("claim", ["exp", "iat", "nbf"])
def test_numeric_date_claims_sent_as_strings_are_401(api, prop, settings, claim):
    now = int(time.time())
    values = {"exp": now + 600, "iat": now, "nbf": now - 10}
    token = _sign(settings, _claims(settings, api.env_id, **{claim: str(values[claim])}))
    assert_problem(get_prop(api, prop, token), 401, "invalid_token")


@pytest.mark.parametrize("claim", ["exp", "iat"])
def test_numeric_date_claims_as_booleans_are_401(api, prop, settings, claim):
    token = _sign(settings, _claims(settings, api.env_id, **{claim: True}))
    assert_problem(get_prop(api, prop, token), 401)


def test_fractional_numeric_dates_are_accepted(api, prop, settings):
    now = time.time()
    token = _sign(settings, _claims(settings, api.env_id, iat=now, exp=now + 600.5))
    assert get_prop(api, prop, token).status_code == 200
