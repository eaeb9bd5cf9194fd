"""msgspec-backed JSON for Falcon: Decimal as "129.00", UUID, dates and datetimes as strings."""

from __future__ import annotations

from typing import Any

import falcon
import falcon.media
import msgspec

_encoder = msgspec.json.Encoder(decimal_format="string")
_decoder = msgspec.json.Decoder()


def dumps(obj: Any) -> bytes:
    return _encoder.encode(obj)


def loads(raw: bytes | str) -> Any:
    return _decoder.decode(raw)


class MsgspecJSONHandler(falcon.media.BaseHandler):
    def serialize(self, media: Any, content_type: str | None = None) -> bytes:
        return _encoder.encode(media)

    def deserialize(self, stream: Any, content_type: str | None, content_length: int | None) -> Any:
        data = stream.read()
        if not data:
            raise falcon.MediaNotFoundError("JSON")
        try:
            return _decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise falcon.MediaMalformedError("JSON") from exc

    exhaust_stream = True
