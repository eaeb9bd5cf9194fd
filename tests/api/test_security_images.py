"""An image's type is judged by the whole file, not its first bytes: a JPEG, PNG or WebP
header followed by anything but the rest of a well-formed image (HTML, trailing bytes, a cut
file, a bad checksum, markup hidden in a comment) is 422 `unsupported_image_type`, and nothing
is stored."""

from __future__ import annotations

import pytest

from tests.api.recipes import World
from tests.helpers import JPEG, PNG, WEBP, RawBody, assert_problem, multipart, png

HTML = b"<html><script>alert(document.domain)</script></html>"

POLYGLOTS = {
    "jpeg_header_then_html": b"\xff\xd8\xff" + HTML,
    "jpeg_app0_then_html": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + HTML,
    "png_signature_then_html": b"\x89PNG\r\n\x1a\n" + HTML,
    "webp_header_then_html": b"RIFF\x40\x00\x00\x00WEBPVP8 " + HTML,
    "jpeg_then_html": JPEG + HTML,
    "png_then_html": PNG + HTML,
    "webp_then_html": WEBP + HTML,
    "jpeg_cut_short": JPEG[:-2],
    "png_cut_short": PNG[:-12],
    "png_bad_checksum": PNG[:-1] + bytes([PNG[-1] ^ 1]),
    "png_html_in_a_comment": png(HTML),
}


def _url(world: World) -> str:
    return f"/v1/properties/{world.property_id}/images"


@pytest.mark.parametrize("name", sorted(POLYGLOTS))
def test_a_header_followed_by_something_else_is_refused(api, name):
    world = World(api)
    body = (b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"evil.html\"\r\n"
            b"Content-Type: text/html\r\n\r\n" + POLYGLOTS[name] + b"\r\n--b--\r\n")
    resp = api.post(_url(world), RawBody(body, content_type="multipart/form-data; boundary=b"))
    problem = assert_problem(resp, 422, "unsupported_image_type")
    assert problem["errors"][0]["field"] == "file"
    assert api.get(_url(world)).json["data"] == []


def test_whole_images_pass(api):
    world = World(api)
    for data, kind in ((PNG, "image/png"), (JPEG, "image/jpeg"), (WEBP, "image/webp"),
                       (png(b"Lobby, north side"), "image/png")):
        resp = api.post(_url(world), multipart({"file": data}))
        assert resp.status_code == 201, resp.text
        assert resp.json["content_type"] == kind and resp.json["size_bytes"] == len(data)
