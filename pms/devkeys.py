"""Development key set and tokens (`pms-cli dev keys|token`, tests).

Only ever used with a local `file://` JWKS: production keys live with the identity provider.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
import uuid
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from pms.config import Settings

ALL_RESOURCES = (
    "properties", "rates", "inventory", "reservations", "frontdesk", "folios", "profiles",
    "companies", "company_users", "negotiated_rates", "company_payment_methods", "rate_links",
    "company_receivables",  # a company's receivable (credit limit): env-level, its own scope
    "housekeeping", "blocks", "events", "feedback", "kiosk", "reports", "settings", "lov",
    "jobs", "eod", "health", "policy",
    "privacy",  # a data-protection officer's reads (who read a person's data)
)


# the second pair of eyes on a credit override (docs/guides/corporate-accounts.md)
CREDIT_OVERRIDE_APPROVE = "hotel:pms:credit_overrides:approve"
# a pick-up beyond a block's allocation (docs/guides/groups-and-events.md)
BLOCK_OVERPICK = "hotel:pms:blocks:overpick"


def all_scopes() -> list[str]:
    scopes = [f"hotel:pms:{r}:{a}" for r in ALL_RESOURCES for a in ("read", "write")]
    return scopes + ["hotel:pms:admin", CREDIT_OVERRIDE_APPROVE, BLOCK_OVERPICK]


class ForeignKeySet(RuntimeError):
    """Raised instead of writing over a key set that the dev commands did not make."""


def marker_path(settings: Settings) -> Path:
    """The file beside a generated key set that says the dev commands made it."""
    return settings.jwks_path.with_name(settings.jwks_path.name + ".pms-dev-keys")


def _made_here(settings: Settings) -> bool:
    """True when the marker names the key set now at the path (by its SHA-256): a key set
    someone put there later, over ours, is not ours any more."""
    try:
        marker = json.loads(marker_path(settings).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict):
        return False
    try:
        current = settings.jwks_path.read_bytes()
    except FileNotFoundError:
        return True  # ours, and gone: it may be made again
    except OSError:
        return False
    return marker.get("jwks_sha256") == hashlib.sha256(current).hexdigest()


def generate_keys(settings: Settings, *, kid: str | None = None, force: bool = False) -> str:
    """Write the JWKS (public) and the private JWK next to it; return the key id.

    a key set is written only where there is none, or where the dev commands made
    the one there (a marker file beside it, `marker_path`). A key set they did not make, say an
    identity provider's mounted at the path, is never overwritten (ForeignKeySet), even with
    `force`; with its private key beside it, the existing key id is returned unchanged.
    """
    if not settings.jwks_is_local_file:
        raise RuntimeError("dev keys need a local file:// PMS_JWKS_URL")
    public_path, private_path = settings.jwks_path, settings.private_jwk_path
    exists = public_path.exists() or private_path.exists()
    if exists and not _made_here(settings):
        if public_path.exists() and private_path.exists() and not force:
            return json.loads(private_path.read_text())["kid"]
        raise ForeignKeySet(f"{public_path} is a key set the dev commands did not make (no "
                            f"{marker_path(settings).name} beside it); it is left as it is")
    if private_path.exists() and public_path.exists() and not force:
        return json.loads(private_path.read_text())["kid"]
    kid = kid or uuid.uuid4().hex[:16]
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_jwk = json.loads(RSAAlgorithm.to_jwk(key))
    public_jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    for jwk in (private_jwk, public_jwk):
        jwk.update({"kid": kid, "alg": "RS256", "use": "sig"})
    public_text = json.dumps({"keys": [public_jwk]})
    public_path.parent.mkdir(parents=True, exist_ok=True)
    # the marker first: a run cut short leaves a key set that is still known to be ours
    marker_path(settings).write_text(json.dumps({
        "made_by": "pms-cli dev keys", "kid": kid,
        "jwks_sha256": hashlib.sha256(public_text.encode()).hexdigest()}))
    private_path.write_text(json.dumps(private_jwk))
    private_path.chmod(0o600)
    public_path.write_text(public_text)
    return kid


def load_private_key(settings: Settings) -> tuple[str, Any]:
    return _private_key(Path(settings.private_jwk_path).read_text())


@functools.lru_cache(maxsize=8)
def _private_key(jwk_text: str) -> tuple[str, Any]:
    """The key of a JWK's text: building an RSA key checks it, which costs more than signing, so
    a key set is parsed once (keyed by its text, so a rotated set is read afresh)."""
    jwk = json.loads(jwk_text)
    return jwk["kid"], RSAAlgorithm.from_jwk(jwk)


def mint_token(settings: Settings, *, env_id: uuid.UUID | str, scopes: list[str] | None = None,
               sub: str = "dev-user", client_kind: str = "user", holder_id: str | None = None,
               ttl_s: int = 3600, extra: dict[str, Any] | None = None) -> str:
    """A signed RS256 token for the development key set."""
    kid, key = load_private_key(settings)
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": settings.jwt_issuer, "aud": settings.jwt_audience, "sub": sub,
        "iat": now, "exp": now + ttl_s, "env_id": str(env_id), "client_kind": client_kind,
        "scope": " ".join(scopes if scopes is not None else all_scopes()),
    }
    if holder_id:
        claims["holder_id"] = str(holder_id)
    claims.update(extra or {})
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})
