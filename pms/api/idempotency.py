"""`Idempotency-Key` on POST (CONTRACT §3, pretix's middleware adapted).

The key is claimed per env in its own short transaction, with a fingerprint of method, path and
body. A finished record with the same fingerprint replays the stored status and body with
`Idempotent-Replayed: true`; another fingerprint is 422 `idempotency_key_mismatch`; a record still
running is 409 `idempotency_key_in_use` (see Recovery below). Responses that a retry could
change are not stored and free the key: every 5xx, and 409/429 (a conflict such as "sold out"
may clear). Records are kept 72 h; expired ones are treated as absent and purged by the
periodic job.

PERF: the claim and the stored response commit without waiting for the WAL flush
(`synchronous_commit = off`): a request with a key made three commits, the claim, the change
and the response, and waited for three flushes. Losing the claim in a database crash is
harmless: the change's own (synchronous) commit flushes every earlier record of the WAL, and
without the change there is nothing to protect. Losing the stored response leaves the key
`running`: retries get 409 `idempotency_key_in_use`, then `idempotency_response_lost` (never a
second execution): the same outcome as the process dying between the two commits.

One-transaction routes (IN_TRANSACTION_ROUTES: the booking and the profile create; PostgreSQL):
the request's own transaction is opened here and the use case's unit of work joins it
(pms.db.uow.RequestTransaction). The key is claimed IN that transaction's first round trip, in
front of the use case's first statement (a prelude, pms.db.database; the function of migration
011): a transaction-level advisory lock taken without waiting and a look for a live record. A
concurrent twin finds the lock taken (409 at once: it would wait on the first one's uncommitted
row otherwise); a key with a live record stops the message before the use case's statement
runs, and the request goes the general way below (replay, 422, 409). The record is written
`done`, with the response, in the same transaction as the change: one commit, no claim or store
transactions, no round trip of its own, and a crash leaves neither the change nor the record.
An answer given before any statement ran (a 422 of the body) never sent the claim: it is stored
through the general claim, so a stored answer is still replayed and a twin still waits.

Recovery: a `running` record older than ABANDONED_AFTER (2 min) was abandoned by a request that
died. The claim's record id, made by the server, is the request's claim (`Ctx.idempotency_claim`):
the first unit of work that commits a change in that request marks the record `changed` with
its target in the same transaction (pms.db.uow). A `changed` record answers 409
`idempotency_response_lost` naming the target (`target_type`, `target_id`) so the client reads
it instead of repeating it; a record still `running` changed nothing and the key is claimed
again. (this used to look for an audit row carrying the claimant's request id, which
is the client's `X-Platform-Request-Id` when it sends one: any change made under the same id
passed for the claimant's.)

Keys belong to their caller: the stored key is `caller_key(ctx, key)`, the client's
key prefixed with a digest of the token's `sub` and `holder_id` (records are per env already),
so another caller's same key is a different key and runs fresh. The route gate
(pms.api.gate) runs before this middleware: a refused request never looks a key up or stores
anything.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import falcon
import peewee

from pms.db.database import PreludeRefused, commit_without_waiting, db, is_postgres
from pms.db.scope import tenant_scope
from pms.db.uow import RequestTransaction, read_scope
from pms.errors import (
    BadRequest,
    CommitOutcomeUnknown,
    IdempotencyKeyInUse,
    IdempotencyKeyMismatch,
    IdempotencyResponseLost,
    PmsError,
)
from pms.models.platform import IdempotencyRecord
from pms.services.idempotency import purge_expired

__all__ = ["IdempotencyMiddleware", "fingerprint", "purge_expired"]

log = logging.getLogger("pms.idempotency")

HEADER = "Idempotency-Key"
# A `running` record older than this belongs to a request that died (none lives this long).
ABANDONED_AFTER = timedelta(minutes=2)
MAX_KEY_LENGTH = 255
NOT_STORED = frozenset({409, 429})


def no_store(resp: falcon.Response) -> bool:
    """An answer marked `Cache-Control: no-store` (the kiosk lookup's, which holds a
    session token; secrets are never stored, SPEC rule 3) is not kept for replay: a retry with
    the key runs again."""
    return "no-store" in (resp.get_header("Cache-Control") or "")
# Routes whose use case is ONE transaction: on PostgreSQL their key is claimed in that
# transaction and its record commits with the change (IdempotencyMiddleware._open). Routes that
# call a platform between transactions (payments: intent, call, outcome) keep the separate
# claim and store.
IN_TRANSACTION_ROUTES = frozenset({"/v1/properties/{property_id:uuid}/reservations",
                                   "/v1/properties/{property_id:uuid}/profiles"})

# the claim in the first round trip (migration 011): SQLSTATEs it raises
CLAIM_PRELUDE = "SELECT pms_claim_idempotency_key(%s, %s, %s)"
KEY_IN_USE = "PMI01"
# a claim's states before its answer is stored: RUNNING, then CHANGED once a change committed
RUNNING, CHANGED = "running", "changed"
KEY_HAS_RECORD = "PMI02"


def caller_key(ctx: Any, key: str) -> str:
    """The stored form of a client's key: its caller's digest (`sub`, `holder_id`) and the key
    (at most 33 + MAX_KEY_LENGTH characters; the column holds 300 since migration 023)."""
    holder = ctx.holder_id.hex if ctx.holder_id is not None else ""
    caller = hashlib.sha256(f"{ctx.sub}\x00{holder}".encode()).hexdigest()[:32]
    return f"{caller}:{key}"


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
        key = caller_key(ctx, key)
        fp = fingerprint(req)
        if req.uri_template in IN_TRANSACTION_ROUTES and is_postgres() and self._open(
                req, ctx, key, fp):
            return
        claim = uuid.uuid4()
        record = self._claim(ctx, key, fp, claim)
        if record is None:
            req.context.idempotency = (key, fp)
            # the server's id of the claim: the request's first committed change marks it
            req.context.ctx = ctx.with_(idempotency_claim=claim)
            return
        self._answer_from(record, fp, resp)
        resp.complete = True

    @staticmethod
    def _answer_from(record: IdempotencyRecord, fp: str, resp: falcon.Response) -> None:
        """The answer for a key that has a record: its stored response (replayed), or 422 for
        another request's key, or 409 while its request is still running."""
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

    @staticmethod
    def _open(req: falcon.Request, ctx: Any, key: str, fp: str) -> bool:
        """Open the request's transaction with the key's claim as its prelude (see the module
        docstring): the claim goes out with the use case's first statement."""
        txn = RequestTransaction(ctx).open()
        db.obj.prelude(CLAIM_PRELUDE, (ctx.env_id.hex, key, ctx.now))
        req.context.idempotency_txn = (key, fp, txn)
        return True

    def claim_refused(self, req: falcon.Request, resp: falcon.Response, ex: PreludeRefused,
                      params: dict[str, Any]) -> None:
        """Falcon error handler: the claim in the first round trip refused the key, so the use
        case ran nothing. Roll back, then answer as the general path would: 409 while another
        request holds the key, else from the key's record (replay, 422, 409, or the abandoned
        claim's recovery)."""
        from pms.api import problems

        in_txn = getattr(req.context, "idempotency_txn", None)
        if in_txn is None:  # not our prelude: a bug, answered as one
            problems.handle_unexpected(req, resp, ex, params)
            return
        req.context.idempotency_txn = None
        key, fp, txn = in_txn
        txn.finish(commit=False)
        try:
            if ex.sqlstate != KEY_HAS_RECORD:
                raise IdempotencyKeyInUse(
                    f"a request with this {HEADER} is still being processed")
            ctx = req.context.ctx
            record = self._claim(ctx, key, fp)
            if record is None:
                # the record was an abandoned claim, now ours: the use case did not run here,
                # so free the key again and let the client's retry run it
                self._release(ctx, key)
                raise IdempotencyKeyInUse(
                    f"a request with this {HEADER} was abandoned; retry to run it")
            self._answer_from(record, fp, resp)
        except PmsError as error:
            problems.handle_pms_error(req, resp, error, params)

    @staticmethod
    def _release(ctx: Any, key: str) -> None:
        with tenant_scope(ctx.env_id), commit_without_waiting(), db.atomic():
            IdempotencyRecord.delete().where(IdempotencyRecord.key == key).execute()

    def _claim(self, ctx: Any, key: str, fp: str,
               claim: uuid.UUID | None = None) -> IdempotencyRecord | None:
        """Insert a running record (its id `claim`, made here when not given); return the
        existing one if the key is taken."""
        claim = claim or uuid.uuid4()
        with tenant_scope(ctx.env_id):
            try:
                with commit_without_waiting(), db.atomic():
                    IdempotencyRecord.create(id=claim, key=key, fingerprint=fp, state="running",
                                             expires_at=ctx.now + self.ttl, created_at=ctx.now,
                                             request_id=ctx.request_id)
                return None
            except peewee.IntegrityError:
                pass
            with read_scope(ctx):
                existing = IdempotencyRecord.get_or_none(IdempotencyRecord.key == key)
            if existing is not None and (existing.expires_at <= ctx.now
                                         or self._abandoned_unchanged(ctx, existing, fp)):
                with db.atomic():
                    IdempotencyRecord.delete().where(IdempotencyRecord.id == existing.id).execute()
                return self._claim(ctx, key, fp, claim)
            if existing is None:  # freed between our insert and read: try once more
                return self._claim(ctx, key, fp, claim)
            return existing

    @staticmethod
    def _abandoned_unchanged(ctx: Any, record: IdempotencyRecord, fp: str) -> bool:
        """Whether a record was abandoned before its request changed anything (the key may be
        claimed again); raises IdempotencyResponseLost when its request did change something.
        Only a record older than ABANDONED_AFTER can be abandoned: no request lives that long
        (gunicorn's timeout is 30 s). The request's first committed change marked its claim
        `changed` with the target, in the change's own transaction (pms.db.uow), so the
        server's claim id, never a request id the client chose, tells the two apart."""
        if (record.state not in (RUNNING, CHANGED) or record.fingerprint != fp
                or _aware(record.created_at) > ctx.now - ABANDONED_AFTER):
            return False
        if record.state == RUNNING:
            log.warning("reclaiming an abandoned Idempotency-Key", extra={
                "request_id": ctx.request_id, "abandoned_by": record.request_id})
            return True
        target = record.response_headers or {}
        raise IdempotencyResponseLost(
            f"the request that first used this {HEADER} made its change but its response was "
            "lost; read the resource instead of retrying",
            target_type=target.get("target_type"), target_id=target.get("target_id"),
            original_request_id=record.request_id)

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        in_txn = getattr(req.context, "idempotency_txn", None)
        if in_txn is not None:
            req.context.idempotency_txn = None
            self._finish(req, resp, *in_txn)
            return
        claim = getattr(req.context, "idempotency", None)
        if claim is None:
            return
        req.context.idempotency = None
        key, fp = claim
        ctx = req.context.ctx
        status = resp.status_code
        if status == CommitOutcomeUnknown.status and isinstance(resp.media, dict) and \
                resp.media.get("code") == CommitOutcomeUnknown.code:
            # the change may have committed: the claim stays `running`, so a retry
            # is 409 while it is fresh, and its recovery then reads the audit row to tell
            return
        with tenant_scope(ctx.env_id), commit_without_waiting(), db.atomic():
            query = IdempotencyRecord.key == key
            if status >= 500 or status in NOT_STORED or no_store(resp):
                IdempotencyRecord.delete().where(query).execute()
                return
            body, headers = self._response(resp)
            IdempotencyRecord.update(
                state="done", response_status=status, response_body=body,
                response_headers=headers,
            ).where(query).execute()

    def _response(self, resp: falcon.Response) -> tuple[str, dict[str, str]]:
        body = resp.text
        if body is None and resp.media is not None:
            body = resp.text = self.dumps(resp.media).decode()  # serialised once, for both
        headers = {"content-type": resp.content_type}
        if resp.location:
            headers["location"] = resp.location
        return body or "", headers

    def _finish(self, req: falcon.Request, resp: falcon.Response, key: str, fp: str,
                txn: RequestTransaction) -> None:
        """End the request's transaction: a stored answer of a clean change commits with its
        record; anything else rolls back, and a stored answer (a 422, or a fold after a failed
        unit of work) is then kept in a short transaction of its own, as the general path
        does. 5xx, 409 and 429 are not stored: the key is free again."""
        ctx = req.context.ctx
        status = resp.status_code
        stored = status < 500 and status not in NOT_STORED and not no_store(resp)
        if not stored or txn.failed or status >= 400:
            claimed = not db.obj.sent_nothing()  # the claim went out with a statement
            txn.finish(commit=False)
            if stored:
                self._store_after(req, resp, ctx, key, fp, claimed=claimed)
            return
        body, headers = self._response(resp)
        try:
            record = self._record(ctx, key, fp, status, body, headers, send=False)
        except BaseException:
            txn.finish(commit=False)
            raise
        # the record, the unit of work's outbox and audit rows and the COMMIT: one round trip
        txn.finish(commit=True, last=[record] if record is not None else [])

    def _store_after(self, req: falcon.Request, resp: falcon.Response, ctx: Any, key: str,
                     fp: str, *, claimed: bool) -> None:
        """Store an answer whose transaction rolled back (a 4xx, a fold), in a short transaction
        of its own. An answer given before any statement never sent the claim: the key is
        claimed the general way first, and if it has a record that record answers instead
        (a replay of the same stored answer, or 422/409)."""
        if not claimed:
            record = self._claim(ctx, key, fp)
            if record is not None:
                from pms.api import problems

                resp.media = None
                resp.location = None
                try:
                    self._answer_from(record, fp, resp)
                except PmsError as error:
                    problems.handle_pms_error(req, resp, error, {})
                return
            req.context.idempotency = (key, fp)  # ours now: stored by the general path
            self.process_response(req, resp, None, True)
            return
        body, headers = self._response(resp)
        try:
            with tenant_scope(ctx.env_id), commit_without_waiting(), db.atomic():
                self._record(ctx, key, fp, status=resp.status_code, body=body, headers=headers)
        except peewee.IntegrityError:
            # a twin stored its answer first (the lock went with our rollback): theirs stands
            log.info("Idempotency-Key answer already stored by a concurrent request",
                     extra={"request_id": ctx.request_id})

    def _record(self, ctx: Any, key: str, fp: str, status: int, body: str,
                headers: dict[str, str], *, send: bool = True) -> tuple[str, list[Any]] | None:
        """Write the done record (or, with send=False, return its compiled INSERT to go out
        with the commit; written at once where it cannot be compiled so)."""
        record = IdempotencyRecord.build(key=key, fingerprint=fp, state="done",
                                   response_status=status, response_body=body,
                                   response_headers=headers, expires_at=ctx.now + self.ttl,
                                   created_at=ctx.now, request_id=ctx.request_id)
        statement = None if send else record.insert_statement()
        if statement is None:
            record.save(force_insert=True)
        return statement


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


