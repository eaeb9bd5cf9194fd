"""The in-flight request gauge and the draining flag, per instance.

`LocalInflight` counts one process. Under gunicorn, `pms/gunicorn_conf.py` gives every worker a
slot in a shared memory file (`PMS_INFLIGHT_FILE`, slot `PMS_INFLIGHT_SLOT`) so that
`/v1/health` reports the sum over all workers of the instance, and the master's SIGTERM handler
moves the instance through two phases there (the flag slot):

- DRAINING: `/v1/health` answers 503 `draining` so the load balancer takes the instance out of
  rotation, while every request that still arrives is served normally (the balancer has not
  noticed yet; refusing would only be safe if every client retried).
- STOPPING: after the drain time, gunicorn stops accepting and finishes what is in flight; a
  request that still arrives on a kept-alive connection is refused with 503 `draining` (the
  load balancer retries it elsewhere; nothing was done), so the shutdown budget only has to
  cover requests that were already running.
"""

from __future__ import annotations

import mmap
import os
import struct
import threading
from typing import Protocol

SLOT = struct.Struct("<q")
MAX_SLOTS = 256
FLAG_SLOT = 0  # slot 0 holds the draining flag; workers use 1..MAX_SLOTS-1
READY, DRAINING, STOPPING = 0, 1, 2  # values of the flag slot


class Inflight(Protocol):
    def enter(self) -> None: ...
    def leave(self) -> None: ...
    def total(self) -> int: ...
    def draining(self) -> bool: ...  # readiness is down (health answers 503)
    def refusing(self) -> bool: ...  # new requests are refused with 503


class LocalInflight:
    """One process's gauge (tests, `pms-cli serve --workers 1`, the embedded default)."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()
        self._draining = False

    def enter(self) -> None:
        with self._lock:
            self._count += 1

    def leave(self) -> None:
        with self._lock:
            self._count -= 1

    def total(self) -> int:
        return self._count

    def draining(self) -> bool:
        return self._draining

    def refusing(self) -> bool:
        return self._draining

    def start_draining(self) -> None:
        """Readiness down and new work refused at once: a single process has no load balancer
        in front whose health checks would need a drain window first."""
        self._draining = True


def create_shared_file(path: str) -> None:
    with open(path, "wb") as handle:
        handle.write(b"\0" * SLOT.size * MAX_SLOTS)


class SharedInflight:
    """A worker's view of the instance-wide gauge in a shared memory file."""

    def __init__(self, path: str, slot: int) -> None:
        if not 1 <= slot < MAX_SLOTS:
            raise ValueError("inflight slot out of range")
        self._fd = os.open(path, os.O_RDWR)
        self._map = mmap.mmap(self._fd, SLOT.size * MAX_SLOTS)
        self._slot = slot
        self._lock = threading.Lock()
        self._local = 0
        self._write(0)

    def _write(self, value: int) -> None:
        SLOT.pack_into(self._map, self._slot * SLOT.size, value)

    def enter(self) -> None:
        with self._lock:
            self._local += 1
            self._write(self._local)

    def leave(self) -> None:
        with self._lock:
            self._local -= 1
            self._write(self._local)

    def total(self) -> int:
        return sum(SLOT.unpack_from(self._map, i * SLOT.size)[0] for i in range(1, MAX_SLOTS))

    def _flag(self) -> int:
        return int(SLOT.unpack_from(self._map, FLAG_SLOT * SLOT.size)[0])

    def draining(self) -> bool:
        return self._flag() != READY

    def refusing(self) -> bool:
        return self._flag() >= STOPPING


def set_flag(path: str, value: int) -> None:
    with open(path, "r+b") as handle, mmap.mmap(handle.fileno(), SLOT.size * MAX_SLOTS) as m:
        SLOT.pack_into(m, FLAG_SLOT * SLOT.size, value)


def clear_slot(path: str, slot: int) -> None:
    with open(path, "r+b") as handle, mmap.mmap(handle.fileno(), SLOT.size * MAX_SLOTS) as m:
        SLOT.pack_into(m, slot * SLOT.size, 0)


def read_total(path: str) -> int:
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as m:
        return sum(SLOT.unpack_from(m, i * SLOT.size)[0] for i in range(1, MAX_SLOTS))


def from_environment() -> Inflight:
    path = os.environ.get("PMS_INFLIGHT_FILE")
    slot = os.environ.get("PMS_INFLIGHT_SLOT")
    if path and slot and os.path.exists(path):
        return SharedInflight(path, int(slot))
    return LocalInflight()
