"""The API reference page at /reference/: the served OpenAPI document rendered by the Redoc
bundle shipped in the package, without a token, with nothing loaded from another origin."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from pms.api.reference import reference_files_middleware


class _Assets(HTMLParser):
    """Every URL the page makes the browser load or render: src, href and Redoc's spec-url."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "spec-url") and value:
                self.urls.append(value)


def _assets(html: str) -> list[str]:
    parser = _Assets()
    parser.feed(html)
    return parser.urls


def test_the_reference_is_served_without_a_token_and_renders_the_served_document(api):
    page = api.client.simulate_get("/reference/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert api.client.simulate_get("/reference").text == page.text
    assert re.search(r'<redoc\s+spec-url="/v1/openapi\.json"', page.text)
    # the document it names is the one served, also without a token
    document = api.client.simulate_get("/v1/openapi.json")
    assert document.status_code == 200 and document.json["openapi"].startswith("3.1")
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "http" not in csp


def test_every_asset_the_page_references_is_served_from_this_server(api):
    html = api.client.simulate_get("/reference/").text
    urls = _assets(html)
    assert "/reference/redoc.standalone.js" in urls and "/v1/openapi.json" in urls
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), url  # no other origin
        got = api.client.simulate_get(url)
        assert got.status_code == 200, url
    script = api.client.simulate_get("/reference/redoc.standalone.js")
    assert "javascript" in script.headers["content-type"]
    assert "e.Redoc=" in script.text and len(script.text) > 500_000  # the bundle, not a stub
    # no CDN anywhere in the page
    assert not re.search(r"https?://", html)


def test_the_asset_check_sees_an_external_url():
    """Control: the parser finds a CDN script, so the check above is not vacuous."""
    urls = _assets('<script src="https://cdn.example/redoc.js"></script><link href="/a.css">')
    assert urls == ["https://cdn.example/redoc.js", "/a.css"]


def test_only_the_shipped_files_and_only_reads(api):
    assert {"index.html", "redoc.standalone.js", "LICENSE.redoc.txt"} <= set(reference_files_middleware().files)
    assert api.client.simulate_get("/reference/LICENSE.redoc.txt").status_code == 200
    for path in ("/reference/nope.js", "/reference/../setup.cfg", "/reference/%2e%2e/pms.db",
                 "/reference/static/reference/index.html"):
        assert api.client.simulate_get(path).status_code == 404, path
    assert api.client.simulate_post("/reference/", json={}).status_code == 405


def test_an_installed_package_carries_the_page():
    """setup.cfg ships the page's files with the package, as the console's."""
    import configparser
    from pathlib import Path

    cfg = configparser.ConfigParser()
    cfg.read(Path(__file__).resolve().parents[2] / "setup.cfg")
    shipped = cfg["options.package_data"]["pms"].split()
    assert "static/reference/*" in shipped
