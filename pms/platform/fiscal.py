"""Client of the fiscal service: a fiscal document submitted to be signed or registered (a
German TSE, a French NF525 signer, an authority's registry) before it counts.

Three parts with one contract, as the payments and locks clients: the `FiscalClient` protocol,
the embedded in-process sandbox signer (`PMS_PLATFORM_URL=embedded`) and the HTTP client for the
gateway (`/proxy/fiscal/v1/...`), which routes a property's documents to its own provider. A
submission carries the document's id as its idempotency key: submitted twice, a document is
signed once and the same answer comes back.

The sandbox behaves as a TSE would: it signs the document's content hash with its signature
counter (one counter per property, the property's cash register, rising by one per signature)
and the signing time. Its `fault` control makes it fail for tests: `"unavailable"` (every call
fails as an outage: the document stays PENDING and is retried), `"reject"` or `"correction"`
(the document is answered REJECTED or CORRECTION_NEEDED).
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from pms.config import Settings
from pms.errors import DependencyUnavailable

FISCAL_SCOPES = ("platform:fiscal:documents:write",)
OUTCOMES = ("ACCEPTED", "REJECTED", "CORRECTION_NEEDED")
FAULTS = (None, "unavailable", "reject", "correction")


class FiscalUnavailable(DependencyUnavailable):
    """Raised when the fiscal provider cannot be reached or fails (the outcome is unknown)."""

    code = "fiscal_provider_unavailable"


@dataclass(frozen=True)
class FiscalOutcome:
    """The provider's answer: ACCEPTED with its signature, counter and time, or REJECTED /
    CORRECTION_NEEDED with its reason."""

    status: str
    provider: str
    signature: str | None = None
    signature_counter: int | None = None
    signed_at: datetime | None = None
    transaction_ref: str | None = None
    reason: str | None = None


class FiscalClient(Protocol):
    def submit(self, *, env_id: str, property_id: str, document_id: str, kind: str,
               number: str, content_hash: str, idempotency_key: str) -> FiscalOutcome: ...


# -- embedded sandbox signer --------------------------------------------------------------------

@dataclass
class SandboxSigner:
    """In-process TSE-like signer; replays by idempotency key (one signature per document)."""

    fault: str | None = None
    key: bytes = b"pms-sandbox-tse"
    calls: list[str] = field(default_factory=list)
    counters: dict[tuple[str, str], int] = field(default_factory=dict)
    _by_key: dict[str, FiscalOutcome] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def submit(self, *, env_id: str, property_id: str, document_id: str, kind: str,
               number: str, content_hash: str, idempotency_key: str) -> FiscalOutcome:
        if self.fault not in FAULTS:
            raise ValueError(f"unknown sandbox fault {self.fault!r}")
        if self.fault == "unavailable":
            raise FiscalUnavailable("sandbox: fiscal signer unavailable")
        with self._lock:
            done = self._by_key.get(idempotency_key)
            if done is not None:
                return done
            self.calls.append(document_id)
            if self.fault in ("reject", "correction"):
                status = "REJECTED" if self.fault == "reject" else "CORRECTION_NEEDED"
                # not remembered: a resend after the fault is lifted is signed
                return FiscalOutcome(status=status, provider="sandbox",
                                     reason=f"sandbox: {self.fault} requested")
            register = (env_id, property_id)
            counter = self.counters.get(register, 0) + 1
            self.counters[register] = counter
            signed_at = datetime.now(UTC)
            message = f"{counter}|{signed_at.isoformat()}|{kind}|{number}|{content_hash}"
            signature = hmac.new(self.key, message.encode(), hashlib.sha256).hexdigest()
            outcome = FiscalOutcome(status="ACCEPTED", provider="sandbox", signature=signature,
                                    signature_counter=counter, signed_at=signed_at,
                                    transaction_ref=f"tse_{uuid.uuid4().hex[:20]}")
            self._by_key[idempotency_key] = outcome
            return outcome

    def verify(self, outcome: FiscalOutcome, *, kind: str, number: str,
               content_hash: str) -> bool:
        """Whether `outcome`'s signature is this signer's over the document (tests, audits)."""
        if outcome.signed_at is None or outcome.signature is None:
            return False
        message = (f"{outcome.signature_counter}|{outcome.signed_at.isoformat()}|{kind}|"
                   f"{number}|{content_hash}")
        expected = hmac.new(self.key, message.encode(), hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, outcome.signature)


# -- HTTP client through the gateway ------------------------------------------------------------

class HttpFiscal:
    """The fiscal service through the gateway (`/proxy/fiscal/v1/...`)."""

    def __init__(self, http: Any) -> None:
        self.http = http

    def submit(self, *, env_id: str, property_id: str, document_id: str, kind: str,
               number: str, content_hash: str, idempotency_key: str) -> FiscalOutcome:
        body = self.http.call("POST", "/submissions", {
            "property_id": property_id, "document_id": document_id, "kind": kind,
            "number": number, "content_hash": content_hash},
            idempotency_key=idempotency_key, env_id=env_id)
        status = str(body.get("status") or "")
        if status not in OUTCOMES:
            raise FiscalUnavailable(f"fiscal service answered status {status!r}")
        signed = body.get("signed_at")
        counter = body.get("signature_counter")
        return FiscalOutcome(status=status, provider=str(body.get("provider") or "gateway"),
                             signature=body.get("signature"),
                             signature_counter=int(counter) if counter is not None else None,
                             signed_at=datetime.fromisoformat(signed) if signed else None,
                             transaction_ref=body.get("transaction_ref"),
                             reason=body.get("reason"))


def build(settings: Settings) -> FiscalClient:
    """The embedded sandbox signer, or the gateway client for a real `PMS_PLATFORM_URL`."""
    if settings.embedded_platform:
        return SandboxSigner()
    from pms.platform.payments import GatewayHttp, machine_token

    return HttpFiscal(GatewayHttp(settings.platform_url, "fiscal",
                                  machine_token(settings, FISCAL_SCOPES),
                                  unavailable=FiscalUnavailable))
