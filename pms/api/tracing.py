"""The request's `traceparent` (as the auth layer accepted it into `ctx`) made current for
everything the request calls, after commit included (pms/platform/trace.py)."""

from __future__ import annotations

from typing import Any

import falcon

from pms.platform import trace


class TraceMiddleware:
    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        ctx = getattr(req.context, "ctx", None)
        traceparent = getattr(ctx, "traceparent", None)
        if traceparent:
            req.context.trace_token = trace.set_current(traceparent)

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         req_succeeded: bool) -> None:
        token = getattr(req.context, "trace_token", None)
        if token is not None:
            req.context.trace_token = None
            trace.reset(token)
