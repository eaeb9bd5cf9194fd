"""Property images: multipart upload to the object store (type from the bytes, up to
10 MiB on this route only), one primary per property (the database's rule), list and delete;
our row keeps the object key and checksum, never the bytes."""

from __future__ import annotations

import hashlib
import uuid

import peewee
import pytest

from pms.app import create_app
from pms.db.database import db
from pms.db.scope import tenant_scope
from pms.errors import DependencyUnavailable
from pms.models.settings import PropertyImage
from pms.platform import build_platform
from pms.platform.storage import LocalObjectStore
from tests.api.recipes import World
from tests.api.test_unit_of_work import fail_after_outbox  # noqa: F401 (fixture)
from tests.conftest import Api
from tests.helpers import JPEG, PNG, WEBP, assert_problem, multipart, outbox_types, png

MiB = 1024 * 1024


def _store(api) -> LocalObjectStore:
    return LocalObjectStore(api.settings.home / "storage")


def _url(world: World) -> str:
    return f"/v1/properties/{world.property_id}/images"


def test_upload_stores_the_object_and_keeps_key_and_checksum_only(api):
    world = World(api)
    data = png(b"picture" * 100)
    resp = api.post(_url(world), multipart({"file": data, "caption": "Lobby"}))
    assert resp.status_code == 201, resp.text
    image = resp.json
    assert image["content_type"] == "image/png" and image["size_bytes"] == len(data)
    assert image["sha256"] == hashlib.sha256(data).hexdigest()
    assert image["caption"] == "Lobby" and image["primary"] is False
    assert resp.headers["location"].endswith(image["id"])
    assert _store(api).get(image["object_key"]) == data
    assert image["object_key"].startswith(f"{api.env_id}/properties/{world.property_id}/")
    # no column of the row can hold the bytes
    assert not any(isinstance(f, peewee.BlobField) for f in PropertyImage._meta.sorted_fields)
    assert "hotel:pms:property_image:created" in outbox_types(api_ctx(api))
    listed = api.get(_url(world)).json["data"]
    assert [i["id"] for i in listed] == [image["id"]]


def api_ctx(api):
    from pms.context import Ctx
    return Ctx(env_id=api.env_id)


@pytest.mark.parametrize("data,kind", [(PNG, "image/png"), (JPEG, "image/jpeg"),
                                       (WEBP, "image/webp")])
def test_type_comes_from_the_content_not_the_name(api, data, kind):
    world = World(api)
    # the form names every file upload.bin with application/octet-stream
    resp = api.post(_url(world), multipart({"file": data}))
    assert resp.status_code == 201 and resp.json["content_type"] == kind


def test_a_file_that_is_not_an_image_is_refused_whatever_its_name(api):
    world = World(api)
    body = (b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"photo.png\"\r\n"
            b"Content-Type: image/png\r\n\r\nGIF89a not really\r\n--b--\r\n")
    from tests.helpers import RawBody

    resp = api.post(_url(world), RawBody(body, content_type="multipart/form-data; boundary=b"))
    assert_problem(resp, 422, "unsupported_image_type")
    assert_problem(api.post(_url(world), multipart({"caption": "no file"})), 422)
    assert_problem(api.post(_url(world), {"file": "aGVsbG8="}), 415)
    assert_problem(api.post(_url(world), RawBody(b"--x\r\ngarbage",
                                                 content_type="multipart/form-data; boundary=b")),
                   400)
    assert api.get(_url(world)).json["data"] == []


def test_ten_mib_is_accepted_on_this_route_only(api):
    world = World(api)
    big = png(size=10 * MiB)
    resp = api.post(_url(world), multipart({"file": big}))
    assert resp.status_code == 201, resp.text[:300]
    assert resp.json["size_bytes"] == 10 * MiB
    too_big = png(size=10 * MiB + 200 * 1024)
    assert_problem(api.post(_url(world), multipart({"file": too_big})), 413,
                   "payload_too_large")
    # every other route keeps the 1 MiB limit
    padding = "x" * (2 * MiB)
    assert_problem(api.post(f"/v1/properties/{world.property_id}/room-types",
                            {"code": "BIG", "name": padding}), 413, "payload_too_large")


def test_one_primary_image_per_property(api):
    world = World(api)
    first = api.post(_url(world), multipart({"file": PNG, "primary": "true"})).json
    second = api.post(_url(world), multipart({"file": JPEG, "primary": "true"})).json
    assert first["primary"] and second["primary"]
    listed = {i["id"]: i["primary"] for i in api.get(_url(world)).json["data"]}
    assert listed == {first["id"]: False, second["id"]: True}
    types = outbox_types(api_ctx(api))
    assert types.count("hotel:pms:property_image:updated") == 1  # the demoted one


def test_the_database_refuses_a_second_primary_image(api):
    world = World(api)
    values = dict(property=world.property_id, object_key="k", sha256="0" * 64,
                  content_type="image/png", size_bytes=1, is_primary=True, version=1)
    with tenant_scope(api.env_id), db.atomic():
        PropertyImage.create(**values)
    with pytest.raises(peewee.IntegrityError):
        with tenant_scope(api.env_id), db.atomic():
            PropertyImage.create(**values)
    # non-primary images are not limited
    with tenant_scope(api.env_id), db.atomic():
        PropertyImage.create(**{**values, "is_primary": False})
        PropertyImage.create(**{**values, "is_primary": False})


def test_delete_removes_the_row_and_the_object(api):
    world = World(api)
    image = api.post(_url(world), multipart({"file": PNG})).json
    assert _store(api).get(image["object_key"]) is not None
    resp = api.delete(f"{_url(world)}/{image['id']}")
    assert resp.status_code == 204
    assert api.get(_url(world)).json["data"] == []
    assert _store(api).get(image["object_key"]) is None
    assert_problem(api.delete(f"{_url(world)}/{image['id']}"), 404)
    assert "hotel:pms:property_image:deleted" in outbox_types(api_ctx(api))


def test_unknown_property_answers_404_before_anything_is_stored(api):
    before = sorted(p.name for p in (api.settings.home / "storage").rglob("*") if p.is_file()) \
        if (api.settings.home / "storage").exists() else []
    resp = api.post(f"/v1/properties/{uuid.uuid4()}/images", multipart({"file": PNG}))
    assert_problem(resp, 404)
    after = sorted(p.name for p in (api.settings.home / "storage").rglob("*") if p.is_file()) \
        if (api.settings.home / "storage").exists() else []
    assert after == before


def test_card_numbers_in_the_caption_are_refused_but_image_bytes_are_not_scanned(api):
    world = World(api)
    resp = api.post(_url(world), multipart({"file": PNG, "caption": "4111 1111 1111 1111"}))
    assert_problem(resp, 422, "card_data_refused")
    digits = png(b"4111111111111111" + b"\x00" * 16)
    assert api.post(_url(world), multipart({"file": digits})).status_code == 201


def test_a_failed_transaction_deletes_the_stored_object(api, request):
    world = World(api)
    store = _store(api)
    root = store.root / str(api.env_id)

    def objects():
        return {str(p) for p in root.rglob("*") if p.is_file()} if root.exists() else set()

    kept = api.post(_url(world), multipart({"file": PNG})).json
    before = objects()
    assert store.get(kept["object_key"]) is not None
    # Given every transaction of this env fails once it wrote its outbox row
    request.getfixturevalue("fail_after_outbox")
    # When an upload stores its object and then its transaction fails
    resp = api.post(_url(world), multipart({"file": JPEG, "primary": "true"}))
    assert resp.status_code == 500
    # Then no row and no object is left of it
    assert objects() == before


class DownStore:
    def put(self, key, data, *, content_type, sha256):
        raise DependencyUnavailable("storage down", code="storage_unavailable")

    def get(self, key):
        return None

    def delete(self, key):
        raise DependencyUnavailable("storage down", code="storage_unavailable")


def test_storage_outage_is_503_and_records_nothing(settings, database, clock, env_id):
    platform = build_platform(settings)
    platform.clients["storage"] = DownStore()
    import falcon.testing

    api = Api(falcon.testing.TestClient(create_app(settings, db=database, clock=clock,
                                                   platform=platform)), settings, env_id)
    world = World(api)
    assert_problem(api.post(_url(world), multipart({"file": PNG})), 503, "storage_unavailable")
    assert api.get(_url(world)).json["data"] == []


def test_nul_or_bad_text_in_a_form_field_is_422_naming_it(api):
    world = World(api)
    problem = assert_problem(api.post(_url(world), multipart({"file": PNG, "caption": "a\x00b"})),
                             422)
    assert [e["field"] for e in problem["errors"]] == ["caption"]
    problem = assert_problem(api.post(_url(world), multipart({"file": PNG, "primary": "maybe"})),
                             422)
    assert problem["errors"][0]["field"] == "primary"
    assert_problem(api.post(_url(world), multipart({"file": PNG, "caption": "x" * 501})), 422)
    assert_problem(api.post(_url(world), multipart({"file": PNG, "extra": "x"})), 422)
    assert api.get(_url(world)).json["data"] == []


def test_an_upload_retried_with_its_idempotency_key_is_replayed_once(api):
    world = World(api)
    form = multipart({"file": PNG, "caption": "Pool"})
    key = {"Idempotency-Key": "upload-" + uuid.uuid4().hex}
    first = api.request("POST", _url(world), json=form, headers=key)
    again = api.request("POST", _url(world), json=form, headers=key)
    assert first.status_code == again.status_code == 201
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json["id"] == first.json["id"]
    assert len(api.get(_url(world)).json["data"]) == 1
