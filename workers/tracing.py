"""Dramatiq middleware: an actor message carries the `traceparent` current where it was sent
(a request, an outbox reaction, another actor) and runs with it current, so the platform calls
the actor makes carry it too (pms/platform/trace.py)."""

from __future__ import annotations

import threading
from typing import Any

import dramatiq

from pms.platform import trace

OPTION = "traceparent"


class TraceMessages(dramatiq.Middleware):
    def __init__(self) -> None:
        self._local = threading.local()

    def before_enqueue(self, broker: Any, message: Any, delay: Any) -> None:
        current = trace.current()
        if current and OPTION not in message.options:
            message.options[OPTION] = current

    def before_process_message(self, broker: Any, message: Any) -> None:
        tokens = self._local.__dict__.setdefault("tokens", [])
        tokens.append(trace.set_current(message.options.get(OPTION)))

    def _done(self) -> None:
        tokens = self._local.__dict__.get("tokens")
        if tokens:
            trace.reset(tokens.pop())

    def after_process_message(self, broker: Any, message: Any, *, result: Any = None,
                              exception: Any = None) -> None:
        self._done()

    def after_skip_message(self, broker: Any, message: Any) -> None:
        self._done()
