"""The W3C `traceparent` of the work in progress, carried to every outbound call it causes
.

One context variable per thread of work: the API sets it for a request from `ctx.traceparent`
(pms/api/tracing.py), the relay for each outbox event's reactions (its stored traceparent,
pms/relay/dispatch.py), and the Dramatiq middleware workers/tracing.py for each actor
message (the traceparent of whatever sent it). `GatewayHttp.call` (payments, ledger, email)
sends it as the `traceparent` header, so a call made in a request, after its commit or from the
outbox carries the trace of the request that caused it. Validating an incoming value is the
auth layer's job; this module only carries what it is given.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

_TRACEPARENT: ContextVar[str | None] = ContextVar("pms_traceparent", default=None)


def current() -> str | None:
    return _TRACEPARENT.get()


@contextlib.contextmanager
def use(traceparent: str | None) -> Iterator[None]:
    """`traceparent` is the current trace inside the block (None: no trace)."""
    token = _TRACEPARENT.set(traceparent)
    try:
        yield
    finally:
        _TRACEPARENT.reset(token)


def set_current(traceparent: str | None) -> object:
    """Set it until `reset(token)` (for hooks that open and close in two calls)."""
    return _TRACEPARENT.set(traceparent)


def reset(token: object) -> None:
    _TRACEPARENT.reset(token)  # type: ignore[arg-type]
