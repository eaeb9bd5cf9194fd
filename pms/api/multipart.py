"""`multipart/form-data` request bodies (image uploads), parsed from the bytes the body
middleware read (`req.context.raw_body`) with Falcon's own multipart parser.

`form_fields` returns {name: value}: a part with a filename gives its bytes, any other part its
text (UTF-8). A body that is not valid multipart is 400 `malformed_multipart`; a field given twice
or text that is not UTF-8 is 422.
"""

from __future__ import annotations

import io
from typing import Any

import falcon
from falcon.media.multipart import MultipartFormHandler, MultipartParseOptions

from pms.errors import BadRequest, ValidationFailed

MULTIPART = "multipart/form-data"
_OPTIONS = MultipartParseOptions()
_OPTIONS.max_body_part_count = 16
_HANDLER = MultipartFormHandler(_OPTIONS)


def is_multipart(content_type: str | None) -> bool:
    return (content_type or "").split(";", 1)[0].strip().lower() == MULTIPART


def form_parts(raw: bytes, content_type: str) -> list[tuple[str, str | None, bytes]]:
    """(field name, filename or None, bytes) of every part."""
    try:
        form = _HANDLER.deserialize(io.BytesIO(raw), content_type, len(raw))
        return [(part.name or "", part.filename, part.stream.read()) for part in form]
    except (falcon.MediaMalformedError, falcon.HTTPBadRequest, falcon.HTTPError,
            ValueError) as exc:
        raise BadRequest("the request body is not valid multipart/form-data",
                         code="malformed_multipart") from exc


def form_fields(raw: bytes, content_type: str) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, filename, data in form_parts(raw, content_type):
        if name in fields:
            raise ValidationFailed(f"the form field {name} is given twice",
                                   errors=[{"field": name, "message": "given twice"}])
        if filename is not None:
            fields[name] = data
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationFailed(f"the form field {name} is not UTF-8 text",
                                   errors=[{"field": name, "message": "not UTF-8"}]) from exc
        if "\x00" in text or "\x00" in name:  # as in JSON bodies: PostgreSQL text has no NUL
            raise ValidationFailed("form fields must not contain NUL", errors=[
                {"field": name.replace("\x00", "\\u0000"), "message": "must not contain NUL"}])
        fields[name] = text
    return fields


def text_parts(raw: bytes, content_type: str) -> list[tuple[str, str]]:
    """(name, text) of the parts that are not files (for the card-data guard)."""
    return [(name, data.decode("utf-8", errors="replace"))
            for name, filename, data in form_parts(raw, content_type) if filename is None]
