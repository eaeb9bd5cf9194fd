"""Client of the email service: transactional mail (confirmation, pre-arrival, receipt).

The `EmailClient` protocol; `EmbeddedEmail`, the sandbox of the embedded default, which keeps
what it "sent" in the `sandbox_email` table so `pms-cli email list` shows it from any process;
and `HttpEmail`, which calls `POST /proxy/email/v1/send` through the gateway with a machine token
and an Idempotency-Key. Both are idempotent by key: a retried send delivers once. Never call
`send` inside a unit of work (it is an external call); the notifications actor calls it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Protocol

import peewee

from pms.config import Settings
from pms.errors import DependencyUnavailable
from pms.platform.payments import GatewayHttp, machine_token

EMAIL_SCOPES = ("platform:email:send",)


class EmailUnavailable(DependencyUnavailable):
    """Raised when the email service cannot be reached or fails."""

    code = "email_unavailable"


@dataclass(frozen=True)
class SentEmail:
    id: str
    idempotency_key: str


class EmailClient(Protocol):
    def send(self, env_id: uuid.UUID, *, to: str, subject: str, body: str,
             idempotency_key: str, template: str | None = None,
             meta: dict[str, Any] | None = None) -> SentEmail: ...


class EmbeddedEmail:
    """Sandbox: records the message in `sandbox_email` (one row per idempotency key)."""

    def send(self, env_id: uuid.UUID, *, to: str, subject: str, body: str,
             idempotency_key: str, template: str | None = None,
             meta: dict[str, Any] | None = None) -> SentEmail:
        from pms.db.database import db, write_begin_args
        from pms.db.scope import tenant_scope
        from pms.models.environment import SandboxEmail

        with tenant_scope(env_id):
            existing = None
            try:
                with db.atomic(**write_begin_args()):
                    row = SandboxEmail.create(
                        message_id=uuid.uuid4().hex, idempotency_key=idempotency_key, to=to,
                        subject=subject[:300], body=body, template=template, meta=meta)
            except peewee.IntegrityError:
                with db.atomic():
                    existing = SandboxEmail.get(SandboxEmail.idempotency_key == idempotency_key)
            row = existing or row
        return SentEmail(id=row.message_id, idempotency_key=idempotency_key)

    def sent(self, env_id: uuid.UUID, *, limit: int = 50) -> list[dict[str, Any]]:
        """What the sandbox sent in `env_id`, newest first."""
        from pms.db.database import db
        from pms.db.scope import tenant_scope
        from pms.models.environment import SandboxEmail

        with tenant_scope(env_id), db.atomic():
            rows = SandboxEmail.select().order_by(SandboxEmail.created_at.desc()).limit(limit)
            return [{"id": r.message_id, "to": r.to, "subject": r.subject, "body": r.body,
                     "template": r.template, "meta": r.meta,
                     "idempotency_key": r.idempotency_key,
                     "sent_at": r.created_at.isoformat()} for r in rows]


class HttpEmail:
    """The email service through the gateway (`POST /proxy/email/v1/send`)."""

    def __init__(self, http: GatewayHttp) -> None:
        self.http = http

    def send(self, env_id: uuid.UUID, *, to: str, subject: str, body: str,
             idempotency_key: str, template: str | None = None,
             meta: dict[str, Any] | None = None) -> SentEmail:
        answer = self.http.call("POST", "/send", {
            "to": [to], "subject": subject, "text": body, "template": template,
            "metadata": {"env_id": str(env_id), **(meta or {})},
        }, idempotency_key=f"{env_id}:{idempotency_key}")
        return SentEmail(id=str(answer.get("id", "")), idempotency_key=idempotency_key)


def build(settings: Settings) -> EmailClient:
    """The embedded sandbox, or the gateway client for a real `PMS_PLATFORM_URL`."""
    if settings.embedded_platform:
        return EmbeddedEmail()
    return HttpEmail(GatewayHttp(settings.platform_url, "email",
                                 machine_token(settings, EMAIL_SCOPES),
                                 unavailable=EmailUnavailable))
