"""The identity provider's key set (JWKS), fetched and cached for bearer-token verification
(`pms.api.auth.TokenVerifier`).

`JwksCache` keeps the last good key set and reads it again once it is older than its maximum
age (PMS_JWKS_MAX_AGE_SECONDS); an unknown `kid` triggers at most one refetch per
cooldown, a failed refetch keeps the cached keys (an identity-provider outage must not become a
401 outage), and fetches time out after 2 s, follow no redirects and read at most 64 KiB.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from pms.config import DEFAULT_JWKS_MAX_AGE_S, file_url_path

log = logging.getLogger("pms.auth")

MAX_JWKS_BYTES = 64 * 1024
FETCH_TIMEOUT_S = 2.0
UNKNOWN_KID_COOLDOWN_S = 30.0


class JwksUnavailable(Exception):
    """Raised when the key set cannot be fetched or parsed."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:  # noqa: D102
        return None


def fetch_jwks(url: str, *, timeout: float = FETCH_TIMEOUT_S,
               max_bytes: int = MAX_JWKS_BYTES) -> dict[str, Any]:
    """Read a JWKS document from https?:// or file:// with the contract's bounds."""
    if url.startswith("file://"):
        path = Path(file_url_path(url))
        try:
            raw = path.read_bytes()[: max_bytes + 1]
        except OSError as exc:
            raise JwksUnavailable(f"cannot read {path}: {exc}") from exc
    else:
        opener = urllib.request.build_opener(_NoRedirect)
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        try:
            with opener.open(request, timeout=timeout) as response:
                if response.status != 200:
                    raise JwksUnavailable(f"JWKS answered {response.status}")
                raw = response.read(max_bytes + 1)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise JwksUnavailable(f"JWKS fetch failed: {exc}") from exc
    if len(raw) > max_bytes:
        raise JwksUnavailable("JWKS document is over the size limit")
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise JwksUnavailable("JWKS document is not JSON") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
        raise JwksUnavailable("JWKS document has no keys list")
    return doc


def _load_keys(doc: dict[str, Any], previous: dict[str, tuple[str, Any]] | None = None,
               previous_jwks: dict[str, str] | None = None
               ) -> tuple[dict[str, tuple[str, Any]], dict[str, str]]:
    """The usable keys of a JWKS document by kid, and each key's JWK text. A key whose JWK is
    unchanged since `previous` keeps its very object, so tokens verified with it stay cached."""
    keys: dict[str, tuple[str, Any]] = {}
    texts: dict[str, str] = {}
    for jwk in doc["keys"]:
        if not isinstance(jwk, dict) or "kid" not in jwk:
            continue
        kid = str(jwk["kid"])
        text = json.dumps(jwk, sort_keys=True)
        if previous and previous_jwks and previous_jwks.get(kid) == text and kid in previous:
            keys[kid], texts[kid] = previous[kid], text
            continue
        kty = jwk.get("kty")
        try:
            if kty == "RSA":
                keys[kid] = ("RSA", RSAAlgorithm.from_jwk(jwk))
            elif kty == "EC":
                keys[kid] = ("EC", ECAlgorithm.from_jwk(jwk))
            else:
                continue
            texts[kid] = text
        except (jwt.InvalidKeyError, ValueError, KeyError, TypeError):
            log.warning("skipping unusable JWK kid=%s", jwk.get("kid"))
    return keys, texts


class JwksCache:
    """Thread-safe key-set cache: read again once older than `max_age_s`, stale only on error.

    a key the identity provider withdraws must stop being trusted without a restart.
    The set is re-read once it is `max_age_s` old (PMS_JWKS_MAX_AGE_SECONDS, 5 minutes by
    default): the first request to see it stale fetches while the others go on with the cached
    set (never a fetch per request). A successful fetch replaces the set whole, so a dropped kid
    is gone; a failed one keeps the last good set (an identity-provider outage must not become a
    401 outage) and is retried at most once per cooldown. An unknown `kid` also refetches, at
    most once per cooldown.
    """

    def __init__(self, url: str, *, fetch: Callable[[str], dict[str, Any]] = fetch_jwks,
                 cooldown_s: float = UNKNOWN_KID_COOLDOWN_S,
                 max_age_s: float = DEFAULT_JWKS_MAX_AGE_S,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.url = url
        self._fetch = fetch
        self._cooldown = cooldown_s
        self._max_age = max_age_s
        self._monotonic = monotonic
        self._keys: dict[str, tuple[str, Any]] = {}
        self._jwks: dict[str, str] = {}
        self._loaded = False
        self._last_attempt: float | None = None
        self._last_failure: float | None = None
        # until when the last good read counts as fresh (then the set is re-read)
        self._fresh_until = -math.inf
        self._lock = threading.Lock()

    def _refresh(self) -> None:
        now = self._last_attempt = self._monotonic()
        try:
            keys, texts = _load_keys(self._fetch(self.url), self._keys, self._jwks)
        except JwksUnavailable as exc:
            log.warning("JWKS refresh failed, keeping %d cached keys: %s", len(self._keys), exc)
            self._last_failure = now
            return
        self._keys, self._jwks = keys, texts
        self._last_failure = None
        self._fresh_until = now + self._max_age
        self._loaded = True

    def _refresh_if_stale(self) -> None:
        """Re-read a set past its age, unless another thread is at it or a failed attempt was
        made within the cooldown (then the cached set serves meanwhile)."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            now = self._monotonic()
            if now < self._fresh_until:
                return  # another thread has just refreshed it
            if self._last_failure is not None and now - self._last_failure < self._cooldown:
                return  # fetches are failing: the last good set, retried after the cooldown
            self._refresh()
        finally:
            self._lock.release()

    def refresh_if_due(self) -> None:
        """Re-read the set when it is past its age (see `_refresh_if_stale`). PERF: while it is
        fresh, one clock read and a comparison."""
        if self._monotonic() >= self._fresh_until:
            self._refresh_if_stale()

    def get(self, kid: str) -> tuple[str, Any] | None:
        self.refresh_if_due()
        key = self._keys.get(kid)
        if key is not None:
            return key
        with self._lock:
            key = self._keys.get(kid)
            if key is not None:
                return key
            due = (self._last_attempt is None
                   or self._monotonic() - self._last_attempt >= self._cooldown)
            if due:
                self._refresh()
            return self._keys.get(kid)

    def current(self, kid: str) -> tuple[str, Any] | None:
        """The cached entry for `kid`, without fetching (`refresh_if_due` comes first)."""
        return self._keys.get(kid)

    @property
    def loaded(self) -> bool:
        return self._loaded
