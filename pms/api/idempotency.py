"""`Idempotency-Key` on POST (CONTRACT §3, pretix's middleware adapted).

The key is claimed per env in its own short transaction, with a fingerprint of method, path and
body. A finished record with the same fingerprint replays the stored status and body with
`Idempotent-Replayed: true`; another fingerprint is 422 `idempotency_key_mismatch`; a record still
running is 409 `idempotency_key_in_use`. Responses that a retry could change are not stored and
free the key: every 5xx, and 409/429 (a conflict such as "sold out" may clear). Records are kept
72 h; expired ones are treated as absent and purged by the periodic job.

PERF: the claim and the stored response commit without waiting for the WAL flush
(`synchronous_commit = off`): a request with a key made three commits, the claim, the change
and the response, and waited for three flushes. Losing the claim in a database crash is
harmless: the change's own (synchronous) commit flushes every earlier record of the WAL, and
without the change there is nothing to protect. Losing the stored response leaves the key
`running`, so retries get 409 `idempotency_key_in_use` (never a second execution) until the
record expires: the same outcome as the process dying between the two commits.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

import falcon
import peewee

from pms.db.database import commit_without_waiting, db
from pms.db.scope import tenant_scope
from pms.db.uow import read_scope
from pms.errors import BadRequest, IdempotencyKeyInUse, IdempotencyKeyMismatch
from pms.models.platform import IdempotencyRecord

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255
NOT_STORED = frozenset({409, 429})


def fingerprint(req: falcon.Request) -> str:
    body = getattr(req.context, "raw_body", b"") or b""
    digest = hashlib.sha256(body).hexdigest()
    return hashlib.sha256(f"{req.method} {req.path} {digest}".encode()).hexdigest()


class IdempotencyMiddleware:
    def __init__(self, ttl_hours: int, dumps: Any) -> None:
        self.ttl = timedelta(hours=ttl_hours)
        self.dumps = dumps

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         params: dict[str, Any]) -> None:
        if req.method != "POST" or resource is None:
            return
        key = req.get_header(HEADER)
        if key is None:
            return
        if not key.strip() or len(key) > MAX_KEY_LENGTH:
            raise BadRequest(f"{HEADER} must be 1 to {MAX_KEY_LENGTH} characters",
                             code="invalid_idempotency_key")
        ctx = req.context.ctx
        fp = fingerprint(req)
        record = self._claim(ctx, key, fp)
        if record is None:
            req.context.idempotency = (key, fp)
            return
        if record.fingerprint != fp:
            raise IdempotencyKeyMismatch(
                f"{HEADER} was already used for a different request")
        if record.state != "done":
            raise IdempotencyKeyInUse(f"a request with this {HEADER} is still being processed")
        resp.status = record.response_status
        headers = record.response_headers or {}
        resp.content_type = headers.get("content-type", falcon.MEDIA_JSON)
        if headers.get("location"):
            resp.location = headers["location"]
        resp.text = record.response_body
        resp.set_header("Idempotent-Replayed", "true")
        resp.complete = True

    def _claim(self, ctx: Any, key: str, fp: str) -> IdempotencyRecord | None:
        """Insert a running record; return the existing one if the key is taken."""
        with tenant_scope(ctx.env_id):
            db.connect(reuse_if_open=True)
            try:
                with commit_without_waiting(), db.atomic():
                    IdempotencyRecord.create(key=key, fingerprint=fp, state="running",
                                             expires_at=ctx.now + self.ttl, created_at=ctx.now)
                return None
            except peewee.IntegrityError:
                pass
            with read_scope(ctx):
                existing = IdempotencyRecord.get_or_none(IdempotencyRecord.key == key)
            if existing is not None and existing.expires_at <= ctx.now:
                with db.atomic():
                    IdempotencyRecord.delete().where(IdempotencyRecord.id == existing.id).execute()
                return self._claim(ctx, key, fp)
            if existing is None:  # freed between our insert and read: try once more
                return self._claim(ctx, key, fp)
            return existing

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        claim = getattr(req.context, "idempotency", None)
        if claim is None:
            return
        req.context.idempotency = None
        key, fp = claim
        ctx = req.context.ctx
        status = resp.status_code
        with tenant_scope(ctx.env_id):
            db.connect(reuse_if_open=True)
            with commit_without_waiting(), db.atomic():
                query = IdempotencyRecord.key == key
                if status >= 500 or status in NOT_STORED:
                    IdempotencyRecord.delete().where(query).execute()
                    return
                body = resp.text
                if body is None and resp.media is not None:
                    body = self.dumps(resp.media).decode()
                headers = {"content-type": resp.content_type}
                if resp.location:
                    headers["location"] = resp.location
                IdempotencyRecord.update(
                    state="done", response_status=status, response_body=body or "",
                    response_headers=headers,
                ).where(query).execute()


def purge_expired(ctx: Any) -> int:
    """Delete the env's expired records (periodic job, run per env)."""
    with tenant_scope(ctx.env_id):
        db.connect(reuse_if_open=True)
        with db.atomic():
            return IdempotencyRecord.delete().where(
                IdempotencyRecord.expires_at <= ctx.now).execute()


