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


def owned_method(holder: Any, suffix: str | None = None) -> str:
    """A sandbox payment method the payments sandbox reports as `holder`'s (a guest's or a
    company's profile id), unique unless `suffix` is given (`amex`, `visa`: its brand). Its
    digits are written as letters (pms.platform.payments.HOLDER_DIGITS): a uuid's hex may hold
    a digit run the card-data guard refuses as a card number."""
    from pms.platform.payments import HOLDER_DIGITS

    hex_ = uuid.UUID(str(holder)).hex.translate(HOLDER_DIGITS)
    return f"pm_holder_{hex_}_{suffix or uuid.uuid4().hex[:10].translate(HOLDER_DIGITS)}"


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


# every change of what can be sold adds `hotel:pms:ari:updated` events beside the
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
    (If-Match), as a recipe's body: `Api.request` sends it as given."""

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


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    import struct
    import zlib

    return (struct.pack(">I", len(body)) + kind + body
            + struct.pack(">I", zlib.crc32(kind + body)))


def png(comment: bytes = b"", *, size: int | None = None) -> bytes:
    """A whole 1x1 grey PNG (the upload parses it to its end); `comment` rides in a tEXt
    chunk, and `size` pads that chunk so the file is exactly `size` bytes."""
    import struct
    import zlib

    if size is not None:
        comment = b"\x00" * (size - len(png(b"")) - 12 - len(b"Comment\x00"))
    text = _png_chunk(b"tEXt", b"Comment\x00" + comment) if comment or size else b""
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
            + text + _png_chunk(b"IDAT", zlib.compress(b"\x00\x80")) + _png_chunk(b"IEND", b""))


def _jpeg_segment(marker: int, body: bytes) -> bytes:
    return b"\xff" + bytes([marker]) + (len(body) + 2).to_bytes(2, "big") + body


# Whole minimal images (the upload parses each to its end): a 1x1 PNG, a 1x1 baseline JPEG
# (JFIF, one quantization table, one-code Huffman tables, one scan), a 1x1 lossless WebP.
PNG = png()
JPEG = (b"\xff\xd8" + _jpeg_segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
        + _jpeg_segment(0xDB, b"\x00" + b"\x01" * 64)
        + _jpeg_segment(0xC0, b"\x08\x00\x01\x00\x01\x01\x01\x11\x00")
        + _jpeg_segment(0xC4, b"\x00\x01" + b"\x00" * 15 + b"\x00")
        + _jpeg_segment(0xC4, b"\x10\x01" + b"\x00" * 15 + b"\x00")
        + _jpeg_segment(0xDA, b"\x01\x01\x00\x00\x3f\x00") + b"\x3f" + b"\xff\xd9")
WEBP = (b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00"
        b"\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")


# The reason the tests give for a night audit that closes a business date the property's local
# date has not passed yet (back-to-back audits on the test clock's day).
EOD_OVERRIDE = "test: audits run back to back, ahead of the calendar"


# the tables a person's erasure keeps as issued (fiscal documents: their legal hold)
ERASURE_HELD_TABLES = frozenset({"invoice", "fiscal_journal"})


def rows_holding(ctx: Ctx, needles: list[str], *,
                 held: frozenset[str] = ERASURE_HELD_TABLES) -> dict[str, int]:
    """{table: rows} of every table's rows whose text holds one of `needles` (case-insensitive;
    the `held` tables apart): the scan behind "no stored row holds their data"."""
    from pms.models import Profile

    found: dict[str, int] = {}
    with read_scope(ctx):
        db = Profile._meta.database
        for table in db.get_tables():
            if table in held:
                continue
            for row in db.execute_sql(f'SELECT * FROM "{table}"').fetchall():
                text = " ".join(str(v) for v in row).lower()
                if any(n.lower() in text for n in needles):
                    found[table] = found.get(table, 0) + 1
    return found
