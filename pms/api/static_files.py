"""Static pages served before authentication: a fixed set of files under one path prefix.

The console (`/admin/`) and the API reference (`/reference/`) are such pages: they hold no data
(every call they make goes to the gated `/v1` routes), so they need no token and stay outside
the route table, where the route-table walks (policy, rate fence, cursors) never meet them.
The files are read once at start by name: no path from a request reaches the file system.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import falcon

TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml",
         ".txt": "text/plain; charset=utf-8"}
BASE_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "same-origin"}


def files_in(directory: Path, suffixes: frozenset[str]) -> dict[str, Path]:
    """The directory's files by name, only those of the given suffixes."""
    if not directory.is_dir():
        return {}
    return {p.name: p for p in sorted(directory.iterdir())
            if p.is_file() and p.suffix in suffixes}


class StaticFilesMiddleware:
    """`GET|HEAD <prefix>/` (index.html) and `<prefix>/<file>`; other methods 405, unknown
    names 404 (plain text: the page has no problem+json reader)."""

    def __init__(self, prefix: str, directory: Path, *, suffixes: frozenset[str],
                 policy: str, what: str, extra: Mapping[str, str] | None = None) -> None:
        self.prefix = prefix
        self.files = files_in(directory, suffixes)
        self.what = what
        self.headers = {**BASE_HEADERS, "Content-Security-Policy": policy, **(extra or {})}

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        path = req.path  # the trailing slash is stripped (req_options)
        if path != self.prefix and not path.startswith(self.prefix + "/"):
            return
        if req.method not in ("GET", "HEAD"):
            resp.status = falcon.HTTP_405
            resp.set_header("Allow", "GET, HEAD")
        else:
            found = self.files.get(path[len(self.prefix) + 1:] or "index.html")
            if found is None:
                resp.status = falcon.HTTP_404
                resp.content_type = "text/plain; charset=utf-8"
                resp.text = f"no such {self.what} file\n"
            else:
                resp.content_type = TYPES[found.suffix]
                resp.data = found.read_bytes()
                for key, value in self.headers.items():
                    resp.set_header(key, value)
        resp.complete = True
