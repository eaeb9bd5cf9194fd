"""Answers that need no token: the OpenAPI document. It holds no tenant data, and a
client generator (`openapi-python-client generate --url ...`) must be able to read it.

`PublicDocumentMiddleware` sits before authentication and answers `GET /v1/openapi.json` itself
(`resp.complete`), with the document `pms.api.openapi` derives from the app's route table. The
route stays in the table, so the document lists itself (with `security: []`).
"""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.openapi_rules import PUBLIC_PATHS


class PublicDocumentMiddleware:
    def __init__(self, deps: Any) -> None:
        self.deps = deps
        self._document: dict[str, Any] | None = None

    def document(self) -> dict[str, Any]:
        if self._document is None:  # built once per process, from the route table
            from pms.api.openapi import build_document

            self._document = build_document(self.deps.routes)
        return self._document

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        if req.path in PUBLIC_PATHS and req.method in ("GET", "HEAD"):
            resp.media = self.document()
            resp.complete = True
