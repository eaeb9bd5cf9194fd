"""Client of the payments service: pre-authorizations (payment intents with manual confirmation),
their confirmation, charges (capture or folio payment) and refunds of charges, idempotent by
Idempotency-Key.

Three parts with one contract (SPEC rules 3 and 8): the `PaymentsClient` protocol, the embedded
in-process sandbox (`PMS_PLATFORM_URL=embedded`, declines on well-known test payment_method_ids)
and the HTTP client for the gateway (`/proxy/payments/v1/...`, machine token by client
credentials). Only payment_method_id references cross this boundary, never card data. Transient
failures (timeout, outage, 5xx) raise `PaymentsUnavailable`; a decline is a result, not an error.
Amounts are sent at the currency's scale ("80.00", never "80.0000": `pms.domain.money.to_wire`).

every call carries the tenant env and, for a guest session's payment, its holder
(`env_id`, `holder_id`: the HTTP client sends them as `X-Platform-Env-Id` and
`X-Platform-Holder-Id` and in the metadata), so the payments service can check that a guest
pays with its own method; `payment_method` asks the service whose a method is and what card
it is (HTTP: `GET /proxy/payments/v1/payment-methods/{id}`, its `holder_id` and `card` brand,
last4, exp_month, exp_year; 404 -> nobody's, no card), and `require_own_method` refuses one
that is not the caller's (422 payment_method_not_allowed naming payment_method_id). The sandbox
knows one kind of owned method: `pm_holder_<holder uuid, 32 hex digits>` (optionally
`_<suffix>`; payment_method_id allows only letters, digits and `_`) belongs to that holder; the
well-known test methods (`pm_card_visa`, the declining ones) to nobody, so only staff may use
them. A sandbox card's brand is the suffix's first word when it names one (`_amex`,
`_mastercard`; else visa), its last four digits are derived from the method id (two methods
read apart) and it expires in December two years from now (`pm_card_expired`: last year). A
holder's method named after a declining one (`pm_holder_<hex>_declined`) declines as it does.
The 32 hex digits may also be written with the letters g to p for 0 to 9 (`HOLDER_DIGITS`): the
card-data guard reads digits glued to a letter inside a payment_method_id as the token's
(pms.domain.luhn), but a hex that starts or ends with a long digit run is a number on its own. A
sandbox intent for a holder whose method is not its own declines (`payment_method_not_owned`),
as the service would.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any, Protocol

from pms.config import Settings
from pms.domain.money import to_wire
from pms.errors import DependencyUnavailable, ValidationFailed
from pms.platform import trace

PAYMENT_SCOPES = ("platform:payments:intents:write", "platform:payments:charges:write")

# Sandbox test payment methods that decline, with their decline code (everything else succeeds).
DECLINING_METHODS = {
    "pm_card_declined": "card_declined",
    "pm_card_insufficient_funds": "insufficient_funds",
    "pm_card_expired": "expired_card",
}

# A sandbox test payment method whose calls fail as if the service were down (outcome unknown):
# the payment stays PENDING until the reconciler gets an answer.
UNAVAILABLE_METHOD = "pm_card_unavailable"

# the sandbox's methods owned by a holder: pm_holder_<uuid hex>[_<anything>]
HOLDER_METHOD_PREFIX = "pm_holder_"
NOT_OWNED = "payment_method_not_owned"

SUCCEEDED, DECLINED = "succeeded", "declined"
REQUIRES_CONFIRMATION, REQUIRES_CAPTURE = "requires_confirmation", "requires_capture"


class PaymentsUnavailable(DependencyUnavailable):
    """Raised when the payments service cannot be reached or fails (the outcome is unknown)."""

    code = "payments_unavailable"


# the card brands a sandbox method's suffix may name (pm_holder_<hex>_amex)
SANDBOX_BRANDS = ("visa", "mastercard", "amex", "discover", "jcb", "diners", "unionpay")


@dataclass(frozen=True)
class PaymentMethodInfo:
    """What the payments service reports of a method: whose it is (None: nobody's or unknown)
    and its card summary (never the number)."""

    holder_id: str | None
    brand: str | None = None
    last4: str | None = None
    exp_month: int | None = None
    exp_year: int | None = None


@dataclass(frozen=True)
class PaymentResult:
    """What the payments service answered for an intent, a confirmation or a charge."""

    id: str
    status: str
    amount: Decimal
    currency: str
    decline_code: str | None = None

    @property
    def ok(self) -> bool:
        return self.status != DECLINED


class PaymentsClient(Protocol):
    def create_intent(self, *, amount: Decimal, currency: str, payment_method_id: str,
                      idempotency_key: str, metadata: dict[str, str] | None = None,
                      env_id: str | None = None, holder_id: str | None = None
                      ) -> PaymentResult: ...

    def confirm_intent(self, intent_id: str, *, idempotency_key: str,
                       env_id: str | None = None, holder_id: str | None = None
                       ) -> PaymentResult: ...

    def charge(self, *, amount: Decimal, currency: str, idempotency_key: str,
               payment_method_id: str | None = None, intent_id: str | None = None,
               metadata: dict[str, str] | None = None, env_id: str | None = None,
               holder_id: str | None = None) -> PaymentResult: ...

    def refund(self, *, charge_id: str, amount: Decimal, currency: str, idempotency_key: str,
               metadata: dict[str, str] | None = None, env_id: str | None = None,
               holder_id: str | None = None) -> PaymentResult: ...

    def payment_method(self, payment_method_id: str, *, env_id: str) -> PaymentMethodInfo: ...


def require_own_method(payments: PaymentsClient, payment_method_id: str, *, env_id: str,
                       holder_id: str, detail: str, message: str) -> PaymentMethodInfo:
    """The method's summary when the payments service reports it as `holder_id`'s; else 422
    payment_method_not_allowed naming payment_method_id (`detail`, `message` say whose it
    should be). Ask outside any transaction: it is a network call."""
    info = payments.payment_method(payment_method_id, env_id=env_id)
    if info.holder_id != holder_id:
        raise ValidationFailed(detail, code="payment_method_not_allowed",
                               errors=[{"field": "payment_method_id", "message": message}])
    return info


def _caller(env_id: str | None, holder_id: str | None) -> dict[str, str]:
    """The env and holder keyword arguments of a gateway call, those that are set."""
    out = {}
    if env_id:
        out["env_id"] = env_id
    if holder_id:
        out["holder_id"] = holder_id
    return out


def caller_metadata(metadata: dict[str, str] | None, env_id: str | None,
                    holder_id: str | None) -> dict[str, str]:
    """The call's metadata with the env and the holder it is made for."""
    out = dict(metadata or {})
    if env_id:
        out["env_id"] = env_id
    if holder_id:
        out["holder_id"] = holder_id
    return out


def _result(body: dict[str, Any]) -> PaymentResult:
    return PaymentResult(id=str(body["id"]), status=str(body["status"]),
                         amount=Decimal(str(body["amount"])), currency=str(body["currency"]),
                         decline_code=body.get("decline_code"))


# -- embedded sandbox ---------------------------------------------------------------------------

def _sandbox_decline(payment_method_id: str | None) -> str | None:
    """The decline code of a declining test method, or of a holder's method named after one
    (`pm_holder_<hex>_declined`, `_insufficient_funds`, `_expired`); else None."""
    method = payment_method_id or ""
    if _sandbox_holder(method) is not None:
        method = "pm_card_" + method[len(HOLDER_METHOD_PREFIX) + 33:]
    return DECLINING_METHODS.get(method)


# a holder's hex with its digits as the letters g..p (no digit run the card-data guard refuses)
HOLDER_DIGITS = str.maketrans("0123456789", "ghijklmnop")
_HOLDER_UNDIGITS = str.maketrans("ghijklmnop", "0123456789")


def _sandbox_holder(payment_method_id: str) -> str | None:
    """The holder of `pm_holder_<32 hex>[_...]` (the digits maybe as g..p), else None."""
    if not payment_method_id.startswith(HOLDER_METHOD_PREFIX):
        return None
    rest = payment_method_id[len(HOLDER_METHOD_PREFIX):]
    if len(rest) > 32 and rest[32] != "_":
        return None
    try:
        return str(uuid.UUID(hex=rest[:32].translate(_HOLDER_UNDIGITS)))
    except ValueError:
        return None


@dataclass
class EmbeddedPayments:
    """In-process sandbox: same contract as the service, replays by idempotency key."""

    intents: dict[str, dict[str, Any]] = field(default_factory=dict)
    charges: dict[str, dict[str, Any]] = field(default_factory=dict)
    _by_key: dict[str, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _once(self, key: str, make: Any) -> PaymentResult:
        with self._lock:
            if key not in self._by_key:
                self._by_key[key] = make()
            return _result(self._by_key[key])

    def payment_method(self, payment_method_id: str, *, env_id: str) -> PaymentMethodInfo:
        """The holder a sandbox method belongs to (`pm_holder_<32 hex>[_...]`, else None) and
        its card summary."""
        words = payment_method_id.split("_")
        brand = next((w for w in words[2:] if w in SANDBOX_BRANDS), "visa")
        digest = int(hashlib.sha256(payment_method_id.encode()).hexdigest(), 16)
        expired = _sandbox_decline(payment_method_id) == "expired_card"
        year = date.today().year + (-1 if expired else 2)
        return PaymentMethodInfo(holder_id=_sandbox_holder(payment_method_id), brand=brand,
                                 last4=f"{digest % 10000:04d}", exp_month=12, exp_year=year)

    def create_intent(self, *, amount: Decimal, currency: str, payment_method_id: str,
                      idempotency_key: str, metadata: dict[str, str] | None = None,
                      env_id: str | None = None, holder_id: str | None = None
                      ) -> PaymentResult:
        if payment_method_id == UNAVAILABLE_METHOD:
            raise PaymentsUnavailable("sandbox: payments service unavailable")

        def make() -> dict[str, Any]:
            declined = _sandbox_decline(payment_method_id)
            if holder_id and self.payment_method(
                    payment_method_id, env_id=env_id or "").holder_id != holder_id:
                declined = NOT_OWNED  # the service's own check of a guest's method
            body = {"id": f"pi_{uuid.uuid4().hex[:24]}", "amount": to_wire(amount, currency),
                    "currency": currency, "payment_method_id": payment_method_id,
                    "status": DECLINED if declined else REQUIRES_CONFIRMATION,
                    "decline_code": declined, "capture_method": "manual",
                    "metadata": caller_metadata(metadata, env_id, holder_id)}
            self.intents[body["id"]] = body
            return body
        return self._once(f"intent:{idempotency_key}", make)

    def confirm_intent(self, intent_id: str, *, idempotency_key: str,
                       env_id: str | None = None, holder_id: str | None = None
                       ) -> PaymentResult:
        def make() -> dict[str, Any]:
            intent = self.intents.get(intent_id)
            if intent is None:
                raise PaymentsUnavailable(f"unknown payment intent {intent_id}")
            if intent["status"] == REQUIRES_CONFIRMATION:
                intent["status"] = REQUIRES_CAPTURE
            return dict(intent)
        return self._once(f"confirm:{idempotency_key}", make)

    def charge(self, *, amount: Decimal, currency: str, idempotency_key: str,
               payment_method_id: str | None = None, intent_id: str | None = None,
               metadata: dict[str, str] | None = None, env_id: str | None = None,
               holder_id: str | None = None) -> PaymentResult:
        if payment_method_id == UNAVAILABLE_METHOD:
            raise PaymentsUnavailable("sandbox: payments service unavailable")

        def make() -> dict[str, Any]:
            method = payment_method_id
            if intent_id is not None:
                intent = self.intents.get(intent_id)
                if intent is None or intent["status"] != REQUIRES_CAPTURE:
                    return {"id": f"ch_{uuid.uuid4().hex[:24]}",
                            "amount": to_wire(amount, currency),
                            "currency": currency, "status": DECLINED,
                            "decline_code": "intent_not_capturable"}
                method = intent["payment_method_id"]
                intent["status"] = SUCCEEDED
            declined = _sandbox_decline(method)
            body = {"id": f"ch_{uuid.uuid4().hex[:24]}", "amount": to_wire(amount, currency),
                    "currency": currency, "status": DECLINED if declined else SUCCEEDED,
                    "decline_code": declined, "payment_intent": intent_id}
            self.charges[body["id"]] = body
            return body
        return self._once(f"charge:{idempotency_key}", make)

    def refund(self, *, charge_id: str, amount: Decimal, currency: str, idempotency_key: str,
               metadata: dict[str, str] | None = None, env_id: str | None = None,
               holder_id: str | None = None) -> PaymentResult:
        """Give back (part of) a succeeded charge; declined when the charge is unknown, failed,
        in another currency, or when the refunds would exceed what it took."""
        def make() -> dict[str, Any]:
            charge = self.charges.get(charge_id)
            refunded = Decimal(charge.get("amount_refunded", "0")) if charge else Decimal(0)
            decline = None
            if charge is None or charge["status"] != SUCCEEDED or charge["currency"] != currency:
                decline = "charge_not_refundable"
            elif refunded + amount > Decimal(charge["amount"]):
                decline = "amount_exceeds_charge"
            else:
                charge["amount_refunded"] = to_wire(refunded + amount, currency)
            return {"id": f"re_{uuid.uuid4().hex[:24]}", "amount": to_wire(amount, currency),
                    "currency": currency, "status": DECLINED if decline else SUCCEEDED,
                    "decline_code": decline, "charge": charge_id}
        return self._once(f"refund:{idempotency_key}", make)


# -- HTTP client through the gateway ------------------------------------------------------------

class MachineToken:
    """A client-credentials access token, fetched on demand and cached until shortly before exp."""

    def __init__(self, token_url: str, client_id: str, client_secret: str,
                 scopes: tuple[str, ...], timeout_s: float = 5.0) -> None:
        self.token_url, self.client_id, self.client_secret = token_url, client_id, client_secret
        self.scopes = scopes
        self.timeout_s = timeout_s
        self._token: str | None = None
        self._expires = 0.0
        self._lock = threading.Lock()

    def get(self) -> str:
        with self._lock:
            if self._token and time.monotonic() < self._expires:
                return self._token
            if not self.token_url:
                raise DependencyUnavailable("PMS_PLATFORM_TOKEN_URL is not configured")
            form = urllib.parse.urlencode({
                "grant_type": "client_credentials", "client_id": self.client_id,
                "client_secret": self.client_secret, "scope": " ".join(self.scopes)}).encode()
            request = urllib.request.Request(self.token_url, data=form, method="POST", headers={
                "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as resp:
                    body = json.loads(resp.read(65536))
            except (OSError, ValueError) as exc:
                raise DependencyUnavailable("the platform token endpoint failed") from exc
            self._token = str(body["access_token"])
            self._expires = time.monotonic() + max(int(body.get("expires_in", 300)) - 30, 5)
            return self._token

    def invalidate(self) -> None:
        with self._lock:
            self._token = None


class GatewayHttp:
    """JSON calls to `{base}/proxy/{service}/v1/...` with the machine token and a timeout."""

    def __init__(self, base_url: str, service: str, token: MachineToken,
                 timeout_s: float = 5.0, unavailable: type[DependencyUnavailable] = DependencyUnavailable
                 ) -> None:
        self.base = f"{base_url.rstrip('/')}/proxy/{service}/v1"
        self.token = token
        self.timeout_s = timeout_s
        self.unavailable = unavailable

    def call(self, method: str, path: str, body: dict[str, Any] | None, *,
             idempotency_key: str | None = None, retry_auth: bool = True,
             env_id: str | None = None, holder_id: str | None = None,
             not_found: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON answer; `env_id`/`holder_id` go as X-Platform-Env-Id/-Holder-Id headers;
        with `not_found`, a 404 answers that instead of raising."""
        try:
            bearer = self.token.get()
        except DependencyUnavailable as exc:
            raise self.unavailable(f"no machine token for {path}: {exc.detail}") from exc
        headers = {"Authorization": f"Bearer {bearer}", "Accept": "application/json",
                   "Content-Type": "application/json"}
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        traceparent = trace.current()  # the request (or event) that caused this call
        if traceparent:
            headers["traceparent"] = traceparent
        if env_id:
            headers["X-Platform-Env-Id"] = env_id
        if holder_id:
            headers["X-Platform-Holder-Id"] = holder_id
        data = json.dumps(body, default=str).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as resp:
                return dict(json.loads(resp.read(1024 * 1024) or b"{}"))
        except urllib.error.HTTPError as exc:
            if exc.code == 401 and retry_auth:
                self.token.invalidate()
                return self.call(method, path, body, idempotency_key=idempotency_key,
                                 retry_auth=False, env_id=env_id, holder_id=holder_id,
                                 not_found=not_found)
            if exc.code == 404 and not_found is not None:
                return not_found
            payload = _json_or_empty(exc)
            if exc.code == 402 or payload.get("status") == DECLINED:
                return payload  # a decline answer carries the result body
            raise self.unavailable(f"{method} {path} answered {exc.code}",
                                   status_code=exc.code) from exc
        except (OSError, ValueError) as exc:  # URLError, timeouts, refused, bad JSON
            raise self.unavailable(f"{method} {path} failed: {type(exc).__name__}") from exc


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _number(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _json_or_empty(exc: urllib.error.HTTPError) -> dict[str, Any]:
    try:
        return dict(json.loads(exc.read(65536) or b"{}"))
    except (OSError, ValueError, TypeError):
        return {}


class HttpPayments:
    """The payments service through the gateway (`/proxy/payments/v1/...`)."""

    def __init__(self, http: GatewayHttp) -> None:
        self.http = http

    def payment_method(self, payment_method_id: str, *, env_id: str) -> PaymentMethodInfo:
        quoted = urllib.parse.quote(payment_method_id, safe="")
        body = self.http.call("GET", f"/payment-methods/{quoted}", None, env_id=env_id,
                              not_found={})
        owner = body.get("holder_id")
        card = body.get("card") if isinstance(body.get("card"), dict) else {}
        return PaymentMethodInfo(holder_id=str(owner) if owner else None,
                                 brand=_text(card.get("brand")), last4=_text(card.get("last4")),
                                 exp_month=_number(card.get("exp_month")),
                                 exp_year=_number(card.get("exp_year")))

    def create_intent(self, *, amount: Decimal, currency: str, payment_method_id: str,
                      idempotency_key: str, metadata: dict[str, str] | None = None,
                      env_id: str | None = None, holder_id: str | None = None
                      ) -> PaymentResult:
        return _result(self.http.call("POST", "/payment-intents", {
            "amount": to_wire(amount, currency), "currency": currency,
            "payment_method_id": payment_method_id,
            "capture_method": "manual", "confirmation_method": "manual",
            "metadata": caller_metadata(metadata, env_id, holder_id)},
            idempotency_key=idempotency_key, **_caller(env_id, holder_id)))

    def confirm_intent(self, intent_id: str, *, idempotency_key: str,
                       env_id: str | None = None, holder_id: str | None = None
                       ) -> PaymentResult:
        quoted = urllib.parse.quote(intent_id, safe="")
        return _result(self.http.call("POST", f"/payment-intents/{quoted}/confirm", {},
                                      idempotency_key=idempotency_key,
                                      **_caller(env_id, holder_id)))

    def charge(self, *, amount: Decimal, currency: str, idempotency_key: str,
               payment_method_id: str | None = None, intent_id: str | None = None,
               metadata: dict[str, str] | None = None, env_id: str | None = None,
               holder_id: str | None = None) -> PaymentResult:
        body: dict[str, Any] = {"amount": to_wire(amount, currency), "currency": currency,
                                "metadata": caller_metadata(metadata, env_id, holder_id)}
        if intent_id:
            body["payment_intent"] = intent_id
        if payment_method_id:
            body["payment_method_id"] = payment_method_id
        return _result(self.http.call("POST", "/charges", body, idempotency_key=idempotency_key,
                                      **_caller(env_id, holder_id)))

    def refund(self, *, charge_id: str, amount: Decimal, currency: str, idempotency_key: str,
               metadata: dict[str, str] | None = None, env_id: str | None = None,
               holder_id: str | None = None) -> PaymentResult:
        return _result(self.http.call("POST", "/refunds", {
            "charge": charge_id, "amount": to_wire(amount, currency), "currency": currency,
            "metadata": caller_metadata(metadata, env_id, holder_id)},
            idempotency_key=idempotency_key, **_caller(env_id, holder_id)))


def machine_token(settings: Settings, scopes: tuple[str, ...]) -> MachineToken:
    return MachineToken(settings.platform_token_url, settings.platform_client_id,
                        settings.platform_client_secret, scopes)


def build(settings: Settings) -> PaymentsClient:
    """The embedded sandbox, or the gateway client for a real `PMS_PLATFORM_URL`."""
    if settings.embedded_platform:
        return EmbeddedPayments()
    return HttpPayments(GatewayHttp(settings.platform_url, "payments",
                                    machine_token(settings, PAYMENT_SCOPES),
                                    unavailable=PaymentsUnavailable))
