"""The API reference a person can browse: the OpenAPI document rendered by Redoc at
`/reference/`, no token needed.

`ReferenceFilesMiddleware` sits before authentication, as the console's files do, and answers
`GET|HEAD /reference/` (index.html) and `/reference/<file>` from `pms/static/reference/`. The
page holds no data: Redoc reads `GET /v1/openapi.json`, which needs no token either. It stays
outside the route table, so the route-table walks (policy, rate fence, cursors) never meet it.

`redoc.standalone.js` is the `redoc` npm package's `bundles/redoc.standalone.js` (version 2.5.4,
MIT, `LICENSE.redoc.txt` and `redoc.standalone.js.LICENSE.txt` beside it) with its source-map
comment removed, since the map is not shipped. Nothing is loaded from another origin: the
Content-Security-Policy allows only this server, plus the inline styles Redoc writes and the
`blob:` worker its search runs in (the footer's remote logo is blocked and Redoc hides it).
"""

from __future__ import annotations

from pathlib import Path

import falcon

REFERENCE_PREFIX = "/reference"
STATIC_DIR = Path(__file__).resolve().parents[1] / "static" / "reference"
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".txt": "text/plain; charset=utf-8"}
_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; worker-src 'self' blob:; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}


def reference_files() -> dict[str, Path]:
    """The page's files by name (a fixed set read once: no path from a request reaches the
    file system)."""
    if not STATIC_DIR.is_dir():
        return {}
    return {p.name: p for p in sorted(STATIC_DIR.iterdir())
            if p.is_file() and p.suffix in _TYPES}


class ReferenceFilesMiddleware:
    """`GET|HEAD /reference/` and `/reference/<file>`; no token needed, no data inside."""

    def __init__(self) -> None:
        self.files = reference_files()

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        path = req.path  # the trailing slash is stripped (req_options)
        if path != REFERENCE_PREFIX and not path.startswith(REFERENCE_PREFIX + "/"):
            return
        if req.method not in ("GET", "HEAD"):
            resp.status = falcon.HTTP_405
            resp.set_header("Allow", "GET, HEAD")
        else:
            found = self.files.get(path[len(REFERENCE_PREFIX) + 1:] or "index.html")
            if found is None:
                resp.status = falcon.HTTP_404
                resp.content_type = "text/plain; charset=utf-8"
                resp.text = "no such reference file\n"
            else:
                resp.content_type = _TYPES[found.suffix]
                resp.data = found.read_bytes()
                for key, value in _HEADERS.items():
                    resp.set_header(key, value)
        resp.complete = True
