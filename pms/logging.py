"""Structured (JSON lines) logs for every process.

One JSON object per line: `ts` (UTC, ISO 8601), `level`, `logger`, `msg`, then every `extra=`
field of the call (`request_id`, `method`, `path`, `status`, ... for the access log), and `exc`
with the traceback when there is one.

PERF: the web process writes one access line per request, so that line skips `logging`'s
record machinery (`FastLine`) and msgspec encodes every line.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from datetime import UTC, datetime
from typing import Any

import msgspec

from pms.db.failures import redacted_traceback

_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message", "asctime", "taskName"}


def _fallback(value: Any) -> Any:
    return str(value)


_encode = msgspec.json.Encoder(enc_hook=_fallback).encode


def _line(at: datetime, level: str, logger: str, msg: str) -> dict[str, Any]:
    """The fields every line starts with."""
    return {"ts": at.isoformat(), "level": level, "logger": logger, "msg": msg,
            "pid": os.getpid()}


_SECOND: tuple[int, str] = (-1, "")  # (a UTC second, its "YYYY-MM-DDTHH:MM:SS")


def _utc_iso(at: float) -> str:
    """`datetime.fromtimestamp(at, UTC).isoformat()`, the date and time formatted once per
    second (PERF: the access line's timestamp)."""
    global _SECOND
    frac, whole = math.modf(at)  # as datetime.fromtimestamp rounds
    second, fraction = int(whole), round(frac * 1_000_000)
    if fraction >= 1_000_000:
        second, fraction = second + 1, fraction - 1_000_000
    known, text = _SECOND
    if known != second:
        text = datetime.fromtimestamp(second, UTC).isoformat()[:19]
        _SECOND = (second, text)
    return f"{text}.{fraction:06d}+00:00" if fraction else f"{text}+00:00"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = _line(datetime.fromtimestamp(record.created, UTC), record.levelname.lower(),
                        record.name, record.getMessage())
        for key, value in record.__dict__.items():
            if key not in _STANDARD and key[0] != "_":
                payload[key] = value
        if record.exc_info and record.exc_info[1] is not None:
            # database messages hold the statement's values: redacted (pms.db.failures)
            payload["exc"] = redacted_traceback(record.exc_info[1])
        try:
            return _encode(payload).decode()
        except (TypeError, ValueError, OverflowError):  # e.g. a dict with non-string keys
            return _encode({k: (v if isinstance(v, str | int | float | bool | None) else repr(v))
                            for k, v in payload.items()}).decode()


class FastLine:
    """One INFO line of a hot logger (the per-request access line) written the way the JSON
    stream handler would write it, without building a LogRecord (PERF: `logging` spent more
    time on the record, its dispatch and locks than on the line itself).

    The shortcut is taken only while the logger is in the shape `configure_logging` leaves it:
    no handlers or filters of its own, propagating to a root whose handlers are all plain
    JSON stream handlers without filters. Any other configuration (a capture handler in
    tests, a file handler, a filter) gets an ordinary `logger.info(msg, extra=fields)`.
    """

    def __init__(self, name: str, msg: str) -> None:
        self.logger = logging.getLogger(name)
        self.msg = msg

    def _direct_handlers(self) -> list[logging.StreamHandler] | None:
        logger = self.logger
        if logger.handlers or logger.filters or not logger.propagate:
            return None
        root = logger.parent
        if root is not logging.root or root.filters or not root.handlers:
            return None
        handlers = root.handlers
        for handler in handlers:
            if (type(handler) is not logging.StreamHandler or handler.filters
                    or type(handler.formatter) is not JsonFormatter
                    or handler.level > logging.INFO):
                return None
        return handlers

    def write(self, fields: dict[str, Any]) -> None:
        logger = self.logger
        if not logger.isEnabledFor(logging.INFO):
            return
        handlers = self._direct_handlers()
        if handlers is None:
            logger.info(self.msg, extra=fields)
            return
        payload = {"ts": _utc_iso(time.time()), "level": "info", "logger": logger.name,
                   "msg": self.msg, "pid": os.getpid(), **fields}  # as _line(...) + fields
        try:
            line = _encode(payload).decode() + "\n"
        except (TypeError, ValueError, OverflowError):
            logger.info(self.msg, extra=fields)
            return
        for handler in handlers:
            handler.acquire()
            try:
                handler.stream.write(line)
                handler.stream.flush()
            except Exception:  # noqa: BLE001 - as Handler.handleError: logging never breaks a request
                handler.handleError(logging.makeLogRecord({"msg": line}))
            finally:
                handler.release()


def configure_logging(level: str = "INFO") -> None:
    root = logging.getLogger()
    if any(isinstance(h.formatter, JsonFormatter) for h in root.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("pika").setLevel(logging.WARNING)
