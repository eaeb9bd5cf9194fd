"""The API reference a person can browse: the OpenAPI document rendered by Redoc at
`/reference/`, no token needed.

`reference_files_middleware()` sits before authentication, as the console's files do, and answers
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

from pms.api.static_files import StaticFilesMiddleware

REFERENCE_PREFIX = "/reference"
STATIC_DIR = Path(__file__).resolve().parents[1] / "static" / "reference"
POLICY = ("default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
          "worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; "
          "form-action 'none'")


def reference_files_middleware() -> StaticFilesMiddleware:
    """`GET|HEAD /reference/` and `/reference/<file>`; no token needed, no data inside."""
    return StaticFilesMiddleware(REFERENCE_PREFIX, STATIC_DIR,
                                 suffixes=frozenset({".html", ".js", ".txt"}), policy=POLICY,
                                 what="reference")
