"""Property images: upload (type from the bytes judged whole, never the file name), list,
delete. The bytes go to the object-storage service (pms/platform/storage.py); our row keeps the
object key, size and sha256 checksum only.

Order of an upload: the property is checked, the object is stored, then one unit of work writes
the row (demoting the previous primary image when this one is primary), its audit and outbox
rows. If that transaction fails the stored object is deleted again (best effort: an object left
behind when even that fails is an orphan no row points to, logged with its key). A delete
removes the row first and the object after the commit (best effort, logged).
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from typing import Any

import peewee

from pms.context import Ctx
from pms.db.locking import for_update
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope, unit_of_work
from pms.errors import Conflict, DependencyUnavailable, NotFound, ValidationFailed
from pms.models import Property
from pms.models.settings import PropertyImage
from pms.schemas.common import to_data
from pms.schemas.settings import ImageUpload, image_out

log = logging.getLogger("pms.images")

MAX_IMAGE_BYTES = 10 * 1024 * 1024


def _not_an_image(why: str) -> ValidationFailed:
    return ValidationFailed(f"the file is not a well-formed JPEG, PNG or WebP image ({why})",
                            code="unsupported_image_type",
                            errors=[{"field": "file", "message": f"not a whole image: {why}"}])


def _png_whole(data: bytes) -> None:
    """Every chunk of a PNG, its CRC included, from IHDR to IEND and nothing after it."""
    import struct
    import zlib

    pos, first, seen = 8, True, set()
    while True:
        if pos + 12 > len(data):
            raise _not_an_image("PNG cut short")
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        end = pos + 12 + length
        if length > 2**31 - 1 or end > len(data):
            raise _not_an_image("PNG chunk overruns the file")
        body = data[pos + 8:end - 4]
        if zlib.crc32(kind + body) != struct.unpack(">I", data[end - 4:end])[0]:
            raise _not_an_image("PNG chunk checksum")
        if first and (kind != b"IHDR" or length != 13):
            raise _not_an_image("PNG without IHDR")
        if not all(65 <= c <= 90 or 97 <= c <= 122 for c in kind):
            raise _not_an_image("PNG chunk name")
        first = False
        seen.add(kind)
        pos = end
        if kind == b"IEND":
            break
    if b"IDAT" not in seen:
        raise _not_an_image("PNG without image data")
    if pos != len(data):
        raise _not_an_image("bytes after the PNG's end")


# JPEG markers that stand alone (no length): TEM, RST0-7
_JPEG_STANDALONE = {0x01, *range(0xD0, 0xD8)}
_JPEG_FRAMES = {*range(0xC0, 0xD0)} - {0xC4, 0xC8, 0xCC}


def _jpeg_scan_end(data: bytes, pos: int) -> int:
    """Where a scan's entropy-coded data ends: its first marker that is neither a stuffed
    0xFF00 nor a restart marker."""
    while True:
        pos = data.find(b"\xff", pos)
        if pos < 0 or pos + 1 >= len(data):
            raise _not_an_image("JPEG scan without an end")
        follow = data[pos + 1]
        if follow != 0x00 and not 0xD0 <= follow <= 0xD7:
            return pos
        pos += 2


def _jpeg_whole(data: bytes) -> None:
    """Every marker segment of a JPEG and its entropy-coded scans, from SOI to EOI and
    nothing after it; a frame header and a scan are required."""
    pos, frame, scan = 2, False, False
    n = len(data)
    while True:
        if pos >= n or data[pos] != 0xFF:
            raise _not_an_image("JPEG segment expected")
        while pos < n and data[pos] == 0xFF:  # fill bytes
            pos += 1
        if pos >= n:
            raise _not_an_image("JPEG cut short")
        marker = data[pos]
        pos += 1
        if marker == 0xD9:  # EOI
            break
        if marker in _JPEG_STANDALONE:
            continue
        if marker in (0x00, 0xD8) or pos + 2 > n:
            raise _not_an_image("JPEG marker")
        length = int.from_bytes(data[pos:pos + 2], "big")
        if length < 2 or pos + length > n:
            raise _not_an_image("JPEG segment overruns the file")
        frame |= marker in _JPEG_FRAMES
        pos += length
        if marker == 0xDA:  # SOS: entropy-coded data up to the next marker
            if not frame:
                raise _not_an_image("JPEG scan before its frame")
            scan = True
            pos = _jpeg_scan_end(data, pos)
    if not (frame and scan):
        raise _not_an_image("JPEG without a frame or a scan")
    if pos != n:
        raise _not_an_image("bytes after the JPEG's end")


def _webp_whole(data: bytes) -> None:
    """A WebP's RIFF container: its size is the file's, its chunks fill it exactly, and the
    first one is a VP8, VP8L or VP8X header with its signature."""
    size = int.from_bytes(data[4:8], "little")
    if size + 8 != len(data) or size % 2:
        raise _not_an_image("WebP size is not the file's")
    pos, first = 12, True
    while pos < len(data):
        if pos + 8 > len(data):
            raise _not_an_image("WebP cut short")
        kind, length = data[pos:pos + 4], int.from_bytes(data[pos + 4:pos + 8], "little")
        body = data[pos + 8:pos + 8 + length]
        if len(body) != length:
            raise _not_an_image("WebP chunk overruns the file")
        if first and not ((kind == b"VP8 " and length >= 10 and body[3:6] == b"\x9d\x01\x2a")
                          or (kind == b"VP8L" and length >= 5 and body[0] == 0x2F
                              and body[4] >> 5 == 0)
                          or (kind == b"VP8X" and length == 10)):
            raise _not_an_image("WebP without an image header")
        first = False
        pos += 8 + length + (length % 2)
    if first or pos != len(data):
        raise _not_an_image("WebP chunks do not fill the file")


# Markup a browser would render if it ever sniffed the file (a polyglot's payload).
# (Tags of five bytes or more: a shorter one turns up by chance in compressed pixels.)
_MARKUP = (b"<html", b"<script", b"<iframe", b"<!doctype")


def sniff(data: bytes) -> tuple[str, str]:
    """(content type, extension) of a JPEG, PNG or WebP image judged whole: its magic numbers,
    then its container parsed to its end (chunk checksums, segment lengths, nothing after the
    end), and no markup anywhere in it. Anything else is 422 unsupported_image_type."""
    if data[:3] == b"\xff\xd8\xff":
        found, check = ("image/jpeg", "jpg"), _jpeg_whole
    elif data[:8] == b"\x89PNG\r\n\x1a\n":
        found, check = ("image/png", "png"), _png_whole
    elif len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        found, check = ("image/webp", "webp"), _webp_whole
    else:
        raise ValidationFailed("the file is not a JPEG, PNG or WebP image",
                               code="unsupported_image_type",
                               errors=[{"field": "file", "message": "not JPEG, PNG or WebP"}])
    check(data)
    lowered = data.lower()
    if any(tag in lowered for tag in _MARKUP):
        raise _not_an_image("markup inside")
    return found


def _property(property_id: uuid.UUID, *, lock: bool = False) -> Property:
    query = Property.select().where(Property.id == property_id)
    row = (for_update(query) if lock else query).first()
    if row is None:
        raise NotFound("no such property")
    return row


def upload_image(ctx: Ctx, property_id: uuid.UUID, upload: ImageUpload, *,
                 store: Any) -> PropertyImage:
    """Store an image of a property and record it.

    Raises:
        NotFound: no such property. ValidationFailed: empty, too large or not an image.
        StorageUnavailable (503): the object store failed (nothing recorded).
        Conflict: another primary image was recorded at the same moment (retry).
    """
    data = upload.file
    if not data:
        raise ValidationFailed("the file is empty", errors=[{"field": "file", "message": "empty"}])
    if len(data) > MAX_IMAGE_BYTES:
        raise ValidationFailed("images are limited to 10 MiB",
                               errors=[{"field": "file", "message": "over 10 MiB"}])
    content_type, ext = sniff(data)
    with read_scope(ctx):
        _property(property_id)
    image_id = uuid.uuid4()
    digest = hashlib.sha256(data).hexdigest()
    key = f"{ctx.env_id}/properties/{property_id}/images/{image_id}.{ext}"
    store.put(key, data, content_type=content_type, sha256=digest)
    try:
        with unit_of_work(ctx) as uow:
            _property(property_id, lock=upload.primary)
            if upload.primary:
                for old in PropertyImage.select().where(
                        (PropertyImage.property == property_id) & PropertyImage.is_primary):
                    before = to_data(image_out(old))
                    old.is_primary = False
                    old.save()
                    uow.record("property_image", "updated", old, to_data(image_out(old)),
                               before=before)
            row = PropertyImage(id=image_id, env_id=ctx.env_id, property=property_id,
                                object_key=key, sha256=digest, content_type=content_type,
                                size_bytes=len(data), caption=upload.caption or None,
                                is_primary=upload.primary, version=1)
            row.save(force_insert=True)
            uow.record("property_image", "created", row, to_data(image_out(row)))
    except BaseException as exc:
        _forget(store, key)
        if isinstance(exc, peewee.IntegrityError) and _one_primary_violated(exc):
            raise Conflict("another primary image was recorded at the same time: retry",
                           code="primary_image_conflict") from exc
        raise
    return row


def _one_primary_violated(exc: peewee.IntegrityError) -> bool:
    """The partial unique index of migration 026 (PostgreSQL names it; SQLite names columns)."""
    text = str(exc)
    return ("property_image_one_primary" in text
            or "UNIQUE constraint failed: property_image.env_id, property_image.property_id" in text)


def _forget(store: Any, key: str) -> None:
    try:
        store.delete(key)
    except DependencyUnavailable:
        log.warning("image object left without a row (orphan)", extra={"object_key": key})


def list_images(ctx: Ctx, property_id: uuid.UUID, *, limit: int, cursor: str | None) -> Page[Any]:
    """A property's images, oldest first. Raises NotFound (no such property)."""
    with read_scope(ctx):
        _property(property_id)
        query = PropertyImage.select().where(PropertyImage.property == property_id)
        return paginate(query, PropertyImage, limit=limit, cursor=cursor)


def delete_image(ctx: Ctx, property_id: uuid.UUID, image_id: uuid.UUID, *, store: Any) -> None:
    """Remove an image's row, then (after the commit) its object. Raises NotFound."""
    with unit_of_work(ctx) as uow:
        row = for_update(PropertyImage.select().where(
            (PropertyImage.id == image_id) & (PropertyImage.property == property_id))).first()
        if row is None:
            raise NotFound("no such image")
        out = to_data(image_out(row))
        uow.record("property_image", "deleted", row, out, before=out)
        row.delete_instance()
        key = row.object_key
        uow.after_commit(lambda: _forget(store, key))
