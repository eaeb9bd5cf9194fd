"""Assertions that encode the contract, and unique references."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pms.context import Ctx
from pms.db.scope import tenant_scope
from pms.db.uow import read_scope
from pms.models import AuditEntry, OutboxEvent


def random_ref(prefix: str = "ref") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def assert_problem(resp: Any, status: int, code: str | None = None) -> dict[str, Any]:
    assert resp.status_code == status, (resp.status_code, resp.text)
    assert resp.headers.get("content-type", "").startswith("application/problem+json"), resp.headers
    body = resp.json
    for key in ("type", "title", "status", "detail", "code"):
        assert key in body, (key, body)
    assert body["status"] == status
    assert body["detail"]
    if code is not None:
        assert body["code"] == code, body
    return body


@contextmanager
def wire_tally(log: bool = True) -> Iterator[Any]:
    """Count what goes over the wire to PostgreSQL from here on: round trips, statements and
    commits (bench.statements.Tally; with `log`, every SQL text). The pool's connections are
    closed first and after, so only fresh connections, which count, are used in the block."""
    from bench.statements import Tally, counting_connection_factory
    from pms.db.database import db

    database = db.obj
    tally = Tally(log=[] if log else None)
    database.close_all()
    database.connect_params["connection_factory"] = counting_connection_factory(tally)
    try:
        yield tally
    finally:
        database.close_all()
        database.connect_params.pop("connection_factory", None)


# Issue 35: every change of what can be sold adds `hotel:pms:ari:updated` events beside the
# change's own event; these helpers speak of the changes' own events (the ARI events have
# their own tests: tests/services/test_ari_*.py), `ari=True` includes them.
ARI_TYPE = "hotel:pms:ari:updated"


def _events(ari: bool) -> Any:
    query = OutboxEvent.select()
    return query if ari else query.where(OutboxEvent.type != ARI_TYPE)


def outbox_types(ctx: Ctx, *, ari: bool = False) -> list[str]:
    with read_scope(ctx):
        return [e.type for e in _events(ari).order_by(OutboxEvent.created_at)]


def outbox_rows(ctx: Ctx, *, ari: bool = False) -> list[OutboxEvent]:
    with read_scope(ctx):
        return list(_events(ari).order_by(OutboxEvent.created_at))


def audit_actions(ctx: Ctx) -> list[str]:
    with read_scope(ctx):
        return [a.action for a in AuditEntry.select().order_by(AuditEntry.created_at)]


def counts(ctx: Ctx, *, ari: bool = False) -> tuple[int, int]:
    """(outbox rows, audit rows) of the env (the ARI events only with `ari`)."""
    with read_scope(ctx):
        return _events(ari).count(), AuditEntry.select().count()


__all__ = ["assert_problem", "audit_actions", "counts", "outbox_rows", "outbox_types",
           "random_ref", "tenant_scope", "wire_tally"]


class RawBody:
    """A request body that is not JSON (a multipart form), or JSON sent with extra headers
    (If-Match), as a recipe's body: `Api.request` sends it as given (issue 32)."""

    def __init__(self, data: bytes | None = None, *, content_type: str | None = None,
                 json: Any = None, headers: dict[str, str] | None = None) -> None:
        self.data, self.json = data, json
        self.headers = dict(headers or {})
        if content_type:
            self.headers["Content-Type"] = content_type


def multipart(fields: dict[str, Any], boundary: str = "pms-test-boundary") -> RawBody:
    """A multipart/form-data body: bytes values are files (`file.bin`), others text."""
    out = b""
    for name, value in fields.items():
        if isinstance(value, bytes):
            out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; "
                    f"filename=\"upload.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                    ).encode() + value + b"\r\n"
        else:
            out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n"
                    f"{value}\r\n").encode()
    out += f"--{boundary}--\r\n".encode()
    return RawBody(out, content_type=f"multipart/form-data; boundary={boundary}")


# Minimal valid images' first bytes (what the upload checks), padded.
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 64
WEBP = b"RIFF\x40\x00\x00\x00WEBPVP8 " + b"\x00" * 64
