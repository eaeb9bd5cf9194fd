"""Bearer-token verification against the identity provider's key set (CONTRACT §2).

The key set is `pms.api.jwks` (`JwksCache`, `fetch_jwks`, named here too).
`AuthMiddleware` runs before routing: no bearer -> 401 before anything else; bad token -> 401;
missing or malformed tenant header -> 400; tenant mismatch -> 403.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import falcon
import jwt

from pms.api.jwks import JwksCache
from pms.api.jwks import JwksUnavailable as JwksUnavailable
from pms.api.jwks import fetch_jwks as fetch_jwks
from pms.clock import Clock
from pms.config import Settings
from pms.context import Ctx
from pms.errors import BadRequest, Forbidden, Unauthorized

log = logging.getLogger("pms.auth")

TENANT_HEADER = "X-Platform-Env-Id"
_TENANT_WSGI = "HTTP_" + TENANT_HEADER.upper().replace("-", "_")
REQUEST_ID_HEADER = "X-Platform-Request-Id"
FORBIDDEN_HEADERS = ("jku", "x5u", "jwk", "x5c")
# RFC 8725 §3.11 / RFC 9068: a `typ` header, when present, says this is an access token (a
# JWT of another kind, an ID token or a logout token, is not accepted in its place)
ACCEPTED_TYPES = frozenset({"jwt", "at+jwt", "application/jwt", "application/at+jwt"})
REQUIRED_CLAIMS = ["exp", "iat", "iss", "aud", "sub"]
LEEWAY_S = 30
CLIENT_KINDS = frozenset({"user", "machine", "kiosk", "guest", "anonymous"})
# Kinds whose tokens are only meaningful with a holder: the holder is what limits them.
HOLDER_KINDS = frozenset({"guest"})
NUMERIC_DATE_CLAIMS = ("exp", "iat", "nbf")
VERIFIED_CACHE_SIZE = 4096


class VerifiedTokens:
    """A bounded LRU of tokens that passed verification, keyed by their exact string.

    PERF: verifying an RS256 token (base64 segments, JSON, the signature) was the largest share
    of a cheap GET; clients reuse one token for many requests. Only fully verified tokens are
    kept, and a hit is re-checked against the clock (`exp` and `nbf`, with the same leeway) and
    against the key set (the signing key must still be the one cached under its kid), so a
    cached token never outlives its expiry or a key the identity provider withdrew.
    """

    def __init__(self, size: int = VERIFIED_CACHE_SIZE) -> None:
        self.size = size
        # token -> (claims, kid, key, exp, nbf or None): the dates read once, at put
        self._items: OrderedDict[str, tuple[dict[str, Any], str, Any, float, float | None]] = (
            OrderedDict())
        self._lock = threading.Lock()

    def get(self, token: str, now: float, current_key: Callable[[str], Any]
            ) -> dict[str, Any] | None:
        """The cached claims, or None; `current_key(kid)` is the key set's entry today."""
        with self._lock:
            item = self._items.get(token)
            if item is None:
                return None
            claims, kid, key, exp, nbf = item
            if exp < now - LEEWAY_S or current_key(kid) is not key:
                del self._items[token]
                return None
            self._items.move_to_end(token)
        if nbf is not None and nbf > now + LEEWAY_S:
            return None
        return claims

    def put(self, token: str, claims: dict[str, Any], kid: str, key: Any) -> None:
        nbf = float(claims["nbf"]) if "nbf" in claims else None
        with self._lock:
            self._items[token] = (claims, kid, key, float(claims["exp"]), nbf)
            self._items.move_to_end(token)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


class TokenVerifier:
    """Verifies a compact JWS against the key set and the contract's claim rules."""

    def __init__(self, settings: Settings, jwks: JwksCache, clock: Clock,
                 cache_size: int = VERIFIED_CACHE_SIZE) -> None:
        self.issuer = settings.jwt_issuer
        self.audience = settings.jwt_audience
        self.algorithms = [a for a in settings.jwt_algorithms if a in ("RS256", "ES256", "EdDSA")]
        self.max_lifetime_s = settings.jwt_max_lifetime_s
        self.jwks = jwks
        self.clock = clock
        self.verified = VerifiedTokens(cache_size) if cache_size > 0 else None

    def verify(self, token: str, now: float | None = None) -> dict[str, Any]:
        """The token's claims, from the verified-token cache or by full verification. `now` is
        the clock's time as a timestamp, when the caller has read it already."""
        if now is None:
            now = self.clock.now().timestamp()
        # the key set past its age is re-read first (outside the verified-token cache's lock),
        # so a cached token of a withdrawn key is refused too
        self.jwks.refresh_if_due()
        if self.verified is not None:
            cached = self.verified.get(token, now, self.jwks.current)
            if cached is not None:
                return cached
        claims, kid, entry = self._verify(token, now)
        if self.verified is not None:
            self.verified.put(token, claims, kid, entry)
        return claims

    def _verify(self, token: str, now: float) -> tuple[dict[str, Any], str, tuple[str, Any]]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise Unauthorized("the bearer token is malformed", code="invalid_token") from exc
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise Unauthorized(f"token algorithm {alg!r} is not accepted", code="invalid_token")
        if any(h in header for h in FORBIDDEN_HEADERS):
            raise Unauthorized("token headers jku/x5u/jwk/x5c are not accepted",
                               code="invalid_token")
        typ = header.get("typ")
        if typ is not None and (not isinstance(typ, str) or typ.lower() not in ACCEPTED_TYPES):
            raise Unauthorized("the token's typ is not an access token's (JWT or at+jwt)",
                               code="invalid_token")
        kid = header.get("kid")
        if not isinstance(kid, str):
            raise Unauthorized("token has no key id", code="invalid_token")
        entry = self.jwks.get(kid)
        if entry is None:
            raise Unauthorized("token key id is unknown", code="invalid_token")
        kty, key = entry
        if (alg.startswith("RS") and kty != "RSA") or (alg.startswith("ES") and kty != "EC"):
            raise Unauthorized("token algorithm does not match its key", code="invalid_token")
        try:
            claims = jwt.decode(
                token, key=key, algorithms=[alg], audience=self.audience, issuer=self.issuer,
                # every time claim is judged on the app's clock below (one source of time
                # for the token and the request it authorizes), not on PyJWT's wall clock
                leeway=LEEWAY_S, options={"require": REQUIRED_CLAIMS, "verify_iat": False,
                                          "verify_exp": False, "verify_nbf": False},
            )
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"the token is not valid: {exc}", code="invalid_token") from exc
        check_numeric_dates(claims)
        if float(claims["exp"]) < now - LEEWAY_S:
            raise Unauthorized("the token has expired", code="token_expired")
        if "nbf" in claims and float(claims["nbf"]) > now + LEEWAY_S:
            raise Unauthorized("the token is not valid yet", code="invalid_token")
        check_issued_and_audience(claims, self.audience, now)
        check_lifetime(claims, self.max_lifetime_s, now)
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise Unauthorized("the token has no subject", code="invalid_token")
        check_session_claims(claims)
        return claims, kid, entry


def check_issued_and_audience(claims: dict[str, Any], audience: str, now: float) -> None:
    """CONTRACT §2 says `aud` must match exactly, so a list passes only when it is our
    audience alone (PyJWT accepts any list that contains it); and a token issued in the future
    (`iat` beyond the leeway) is refused (PyJWT does not check `iat` against the clock)."""
    aud = claims.get("aud")
    if not (aud == audience or (isinstance(aud, list) and aud == [audience])):
        raise Unauthorized("the token's audience is not exactly this service",
                           code="invalid_token")
    if float(claims["iat"]) > now + LEEWAY_S:
        raise Unauthorized("the token was issued in the future", code="invalid_token")


def check_lifetime(claims: dict[str, Any], max_lifetime_s: int, now: float) -> None:
    """A token lives at most `max_lifetime_s` (settings.jwt_max_lifetime_s): refused when
    `exp - iat` or `exp - now` is longer (beyond the leeway)."""
    exp = float(claims["exp"])
    if exp - float(claims["iat"]) > max_lifetime_s + LEEWAY_S or exp - now > max_lifetime_s + LEEWAY_S:
        raise Unauthorized(f"the token lives longer than {max_lifetime_s} s",
                           code="token_lifetime_too_long")


def check_numeric_dates(claims: dict[str, Any]) -> None:
    """`exp`, `iat` and `nbf` must be JSON numbers (RFC 7519 §2 NumericDate).

    PyJWT converts a numeric string such as "1700000000" with int(); a token whose dates are
    strings was not made by a conforming issuer, so it is refused rather than reinterpreted.
    """
    for name in NUMERIC_DATE_CLAIMS:
        if name not in claims:
            continue
        value = claims[name]
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value):
            raise Unauthorized(f"the token's {name} claim is not a NumericDate (a number)",
                               code="invalid_token")


def check_session_claims(claims: dict[str, Any]) -> None:
    """Refuse tokens whose session claims would widen what the bearer may see.

    A guest session is restricted by its `holder_id`; a guest token without a usable one must
    not fall through to the unrestricted (staff) view, so a missing, empty or non-UUID
    `holder_id` on a guest token is a bad token (401). The same holds for a malformed
    `holder_id` on any other kind, and for a `client_kind` this service does not know (it was
    once read as `user`, which is unrestricted).
    """
    kind = claims.get("client_kind", "user")
    if not isinstance(kind, str) or kind not in CLIENT_KINDS:
        raise Unauthorized("the token's client_kind is not one this service knows",
                           code="invalid_token")
    holder = claims.get("holder_id")
    if holder is None:
        if kind in HOLDER_KINDS:
            raise Unauthorized(f"a {kind} token must carry a holder_id", code="invalid_token")
        return
    if not isinstance(holder, str) or _uuid_or_none(holder) is None:
        raise Unauthorized("the token's holder_id is not a UUID", code="invalid_token")


_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def valid_traceparent(value: str | None) -> str | None:
    """The W3C Trace Context `traceparent` to keep, or None (it is stored with every outbox
    row, in a column of 64 characters: a value that is not a traceparent must not fail a write).

    Version 00 is exactly `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`, lower case,
    ids not all zeros; version ff is invalid; a later version is read by its first 55
    characters when the next one is `-` (the spec's forward compatibility), and only those are
    kept. Anything else is dropped: the request goes on without a trace parent.
    """
    if not value:
        return None
    value = value.strip(" \t")
    head = value[:55]
    match = _TRACEPARENT.fullmatch(head)
    if match is None:
        return None
    version, trace_id, parent_id, _flags = match.groups()
    if version == "ff" or trace_id == "0" * 32 or parent_id == "0" * 16:
        return None
    if len(value) > 55 and (version == "00" or value[55] != "-"):
        return None
    return head


def scopes_of(claims: dict[str, Any]) -> frozenset[str]:
    scopes: set[str] = set()
    if isinstance(claims.get("scope"), str):
        scopes.update(claims["scope"].split())
    if isinstance(claims.get("scp"), list):
        scopes.update(s for s in claims["scp"] if isinstance(s, str))
    return frozenset(scopes)


def _uuid_or_none(value: Any) -> uuid.UUID | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


class Identity:
    """What a verified token says about its bearer, derived once per verified token."""

    __slots__ = ("client_kind", "env_id", "env_text", "holder_id", "scopes", "sub")

    def __init__(self, claims: dict[str, Any]) -> None:
        self.env_id = _uuid_or_none(claims.get("env_id"))
        self.env_text = str(self.env_id) if self.env_id is not None else None
        self.sub = str(claims["sub"])
        # check_session_claims refused unknown kinds and malformed holders before this point
        self.client_kind = str(claims.get("client_kind", "user"))
        self.holder_id = _uuid_or_none(claims.get("holder_id"))
        self.scopes = scopes_of(claims)


class AuthMiddleware:
    """401 before anything else; tenant header bound to the token's env_id."""

    def __init__(self, verifier: TokenVerifier, clock: Clock) -> None:
        self.verifier = verifier
        self.clock = clock
        # PERF: the identity derived from a cached verified token, keyed by the token and
        # valid while the verifier hands back the very same claims object (re-verification
        # makes a new one). Bounded like the verified-token cache.
        self._identities: dict[str, tuple[dict[str, Any], Identity]] = {}

    def _identity(self, token: str, claims: dict[str, Any]) -> Identity:
        known = self._identities.get(token)
        if known is not None and known[0] is claims:
            return known[1]
        identity = Identity(claims)
        if len(self._identities) >= VERIFIED_CACHE_SIZE:
            self._identities.clear()
        self._identities[token] = (claims, identity)
        return identity

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        # PERF: the WSGI variables themselves (what req.get_header(name) reads for these names)
        env = req.env
        auth = env.get("HTTP_AUTHORIZATION") or ""
        scheme, _, token = auth.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("a bearer token is required", code="missing_token")
        now = self.clock.now()  # read once: the token's expiry and the request's ctx.now
        identity = self._identity(token, self.verifier.verify(token, now.timestamp()))
        raw_env = env.get(_TENANT_WSGI)
        if not raw_env:
            raise BadRequest(f"the {TENANT_HEADER} header is required", code="missing_tenant")
        if raw_env == identity.env_text:  # the common spelling: no parsing needed
            env_id = identity.env_id
        else:
            try:
                env_id = uuid.UUID(raw_env.strip())
            except ValueError as exc:
                raise BadRequest(f"the {TENANT_HEADER} header is not a UUID",
                                 code="malformed_tenant") from exc
            if identity.env_id is None or identity.env_id != env_id:
                raise Forbidden("the token may not act in this env", code="tenant_mismatch")
        req.context.ctx = Ctx(
            env_id=env_id,
            sub=identity.sub,
            client_kind=identity.client_kind,
            holder_id=identity.holder_id,
            scopes=identity.scopes,
            request_id=req.context.request_id,
            traceparent=valid_traceparent(env.get("HTTP_TRACEPARENT")),
            now=now,
            idempotency_key=env.get("HTTP_IDEMPOTENCY_KEY"),
            # a kiosk terminal's lookup-bound session (only a kiosk token's is read)
            kiosk_session=(env.get("HTTP_X_KIOSK_SESSION") or None
                           if identity.client_kind == "kiosk" else None),
        )
