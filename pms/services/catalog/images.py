"""Property images: upload (type from the bytes' magic numbers, never the file name), list,
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


def sniff(data: bytes) -> tuple[str, str]:
    """(content type, extension) from the magic numbers: JPEG, PNG or WebP; else 422."""
    if data[:3] == b"\xff\xd8\xff":
        return "image/jpeg", "jpg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png", "png"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp", "webp"
    raise ValidationFailed("the file is not a JPEG, PNG or WebP image",
                           code="unsupported_image_type",
                           errors=[{"field": "file", "message": "not JPEG, PNG or WebP"}])


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
