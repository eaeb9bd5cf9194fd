"""The admin console's server side: its static files at /admin/ (no token, no data),
the embedded default's gateway stand-in (the demo token for the console's calls from loopback,
never in a production configuration), the page index, the actions' body schemas and the LOV
search the console uses. The console itself runs in Chromium: tests/e2e/test_admin_console.py."""

from __future__ import annotations

import uuid

import falcon.testing
import pytest

from pms.api import admin_pages
from pms.api.console import console_files, console_gateway
from pms.app import create_app
from pms.devkeys import mint_token
from tests.api.recipes import World
from tests.helpers import assert_problem

MARK = {"X-PMS-Console": "1"}


def test_the_console_files_are_served_without_a_token(api):
    page = api.client.simulate_get("/admin/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/admin/console.js">' in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert api.client.simulate_get("/admin").text == page.text
    for name in ("console.js", "api.js", "forms.js"):
        got = api.client.simulate_get(f"/admin/{name}")
        assert got.status_code == 200 and "javascript" in got.headers["content-type"], name
    assert "text/css" in api.client.simulate_get("/admin/console.css").headers["content-type"]
    # only the shipped files: nothing else of the file system, no data
    assert set(console_files()) >= {"index.html", "console.js", "api.js", "forms.js"}
    for path in ("/admin/nope.js", "/admin/../setup.cfg", "/admin/%2e%2e/pms.db",
                 "/admin/static/admin/index.html"):
        assert api.client.simulate_get(path).status_code == 404, path
    assert api.client.simulate_post("/admin/", json={}).status_code == 405


def test_without_the_token_file_the_consoles_calls_need_a_bearer(api):
    """The test app is the embedded default but `serve` named no token file: nothing added."""
    resp = api.client.simulate_get("/v1/admin/ui", headers=MARK)
    assert_problem(resp, 401)
    assert resp.json["code"] == "missing_token"


@pytest.fixture
def token_file(tmp_path, settings, env_id):
    path = tmp_path / "demo-token"
    path.write_text(mint_token(settings, env_id=env_id) + "\n")
    return path


def _client(settings, database, clock, **changes):
    return falcon.testing.TestClient(create_app(settings.with_(**changes), db=database,
                                                clock=clock))


@pytest.mark.parametrize("production", [
    {"broker_url": "amqp://guest:guest@127.0.0.1:5672/%2F"},
    {"database_url": "postgresql://pms@127.0.0.1:5432/pms"},
    {"jwks_url": "https://idp.example.test/.well-known/jwks.json"},
], ids=["amqp", "postgres", "remote-jwks"])
def test_a_production_configuration_never_adds_a_token(settings, database, clock, token_file,
                                                       production):
    """PMS_CONSOLE_TOKEN_FILE set (by mistake) outside the embedded default: ignored."""
    changed = settings.with_(console_token_file=token_file, **production)
    assert console_gateway(changed) is None
    if "jwks_url" in production:
        return  # (an app with a remote key set would fetch it; the gate's choice is the point)
    client = _client(settings, database, clock, console_token_file=token_file, **production)
    resp = client.simulate_get("/v1/admin/ui", headers=MARK, remote_addr="127.0.0.1")
    assert_problem(resp, 401)
    assert resp.json["code"] == "missing_token"


def test_the_embedded_default_adds_the_demo_token_to_the_consoles_loopback_calls(
        settings, database, clock, token_file, env_id):
    client = _client(settings, database, clock, console_token_file=token_file)
    ok = client.simulate_get("/v1/admin/ui", headers=MARK, remote_addr="127.0.0.1",
                             host="127.0.0.1")
    assert ok.status_code == 200, ok.text
    assert [p["page"] for p in ok.json["data"]] == list(admin_pages.PAGES)
    assert client.simulate_get("/v1/admin/ui", headers=MARK, remote_addr="::1",
                               host="[::1]").status_code == 200
    refused = [
        client.simulate_get("/v1/admin/ui", remote_addr="127.0.0.1"),  # not the console's
        client.simulate_get("/v1/admin/ui", headers=MARK, remote_addr="192.0.2.7"),  # remote
        client.simulate_get("/v1/admin/ui", headers={**MARK, "Sec-Fetch-Site": "cross-site"},
                            remote_addr="127.0.0.1", host="127.0.0.1"),
    ]
    for resp in refused:
        assert_problem(resp, 401)
    # a caller's own bearer and env are never replaced
    narrow = mint_token(settings, env_id=env_id, scopes=["hotel:pms:profiles:read"])
    resp = client.simulate_get("/v1/admin/ui", remote_addr="127.0.0.1",
                               headers={**MARK, "Authorization": f"Bearer {narrow}",
                                        "X-Platform-Env-Id": str(env_id)})
    assert_problem(resp, 403)
    other = client.simulate_get("/v1/admin/ui", remote_addr="127.0.0.1", host="127.0.0.1",
                                headers={**MARK, "X-Platform-Env-Id": str(uuid.uuid4())})
    assert_problem(other, 403)
    assert other.json["code"] == "tenant_mismatch"


def test_the_page_index_lists_the_pages_the_caller_may_read(api):
    body = api.get("/v1/admin/ui").json
    assert [p["page"] for p in body["data"]] == list(admin_pages.PAGES)
    assert all(p["url"] == f"/v1/admin/ui/{p['page']}" for p in body["data"])
    token = mint_token(api.settings, env_id=api.env_id,
                       scopes=["hotel:pms:admin", "hotel:pms:profiles:read",
                               "hotel:pms:kiosk:read"])
    got = api.get("/v1/admin/ui", token=token).json["data"]
    assert [p["page"] for p in got] == ["profiles", "kiosk-config"]
    no_admin = mint_token(api.settings, env_id=api.env_id, scopes=["hotel:pms:profiles:read"])
    assert_problem(api.get("/v1/admin/ui", token=no_admin), 403)


def test_each_action_carries_its_bodys_schema_and_the_page_names_its_form(api):
    body = api.get("/v1/admin/ui/reservations").json
    actions = {a["name"]: a for a in body["actions"]}
    assert body["form_action"] == "create"
    assert actions["create"]["schema"] == body["schema"]
    profiles = api.get("/v1/admin/ui/profiles").json
    loyalty = next(a for a in profiles["actions"] if a["name"] == "set_loyalty_number")
    assert "loyalty_number" in loyalty["schema"]["properties"]
    rates = {a["name"]: a for a in api.get("/v1/admin/ui/rates").json["actions"]}
    assert rates["delete"]["schema"] is None  # no body
    assert api.get("/v1/admin/ui/frontdesk").json["form_action"] is None


def test_lov_search_keeps_the_matching_values_and_pages_them(api):
    world = World(api)
    base = f"/v1/properties/{world.property_id}/room-types"
    for code, name in (("KNG", "King Deluxe"), ("TWN", "Twin Deluxe"), ("SGL", "Single")):
        created = api.post(base, json={"code": code, "name": name})
        assert created.status_code == 201, created.text
    params = {"parent": world.property_id, "q": "deluxe", "limit": 1}
    first = api.get("/v1/lov/room-types", params=params)
    assert first.status_code == 200, first.text
    assert [i["name"] for i in first.json["data"]] == ["King Deluxe"]
    rest = api.get("/v1/lov/room-types", params={**params, "cursor": first.json["next_cursor"]})
    assert [i["name"] for i in rest.json["data"]] == ["Twin Deluxe"]
    assert rest.json["next_cursor"] is None
    assert api.get("/v1/lov/room-types", params={"parent": world.property_id,
                                                 "q": "ngl"}).json["data"][0]["name"] == "Single"
    assert_problem(api.get("/v1/lov/reservation-sources", params={"q": "x" * 65}), 422)
    assert api.get("/v1/lov/reservation-sources", params={"q": "zzzz-none"}).json["data"] == []
