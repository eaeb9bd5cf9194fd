"""What an entry point wires in, built once at start-up in this one visible place: the hooks
run after a commit that emitted events (a relay nudge), and the TEST-ONLY switches of the
concurrency control runs. Nothing here runs at import; nothing else registers hooks.

Entry points: `get_app()` installs `for_web(os.environ)`; the worker runtime adds its relay
nudge with `add_after_emit(hook)` at process boot; tests use `installed(Wiring(...))`.

NOTE(h2): the two test switches are still applied to `pms.db.locking.LOCKING_ENABLED` and
`pms.services.inventory.set_pause_after_check` (read by inventory, stays and the control tests);
moving their readers onto `current()` is the next step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

log = logging.getLogger("pms.wiring")

AfterEmit = Callable[[list[Any]], None]


@dataclass(frozen=True)
class Wiring:
    """The dependencies of one process's entry point."""

    after_emit: tuple[AfterEmit, ...] = ()
    locking_enabled: bool = True  # TEST-ONLY: False in the concurrency control runs
    pause_after_check: Callable[[], None] | None = None  # TEST-ONLY: widen the race window

    def with_after_emit(self, hook: AfterEmit) -> Wiring:
        return self if hook in self.after_emit else replace(
            self, after_emit=(*self.after_emit, hook))


_current = Wiring()


def current() -> Wiring:
    return _current


def install(wiring: Wiring) -> Wiring:
    """Make `wiring` the process's wiring; returns the previous one."""
    global _current
    from pms.db import locking, uow
    from pms.services import inventory

    previous, _current = _current, wiring
    uow.set_after_emit_hooks(wiring.after_emit)
    locking.LOCKING_ENABLED = wiring.locking_enabled
    inventory.set_pause_after_check(wiring.pause_after_check)
    return previous


@contextmanager
def installed(wiring: Wiring) -> Iterator[Wiring]:
    previous = install(wiring)
    try:
        yield wiring
    finally:
        install(previous)


def add_after_emit(hook: AfterEmit) -> None:
    """Add a post-commit hook (the worker runtime's relay nudge) to the current wiring."""
    install(_current.with_after_emit(hook))


def clear_after_emit() -> None:
    install(replace(_current, after_emit=()))


def for_web(environ: Mapping[str, str]) -> Wiring:
    """The web process's wiring. TEST-ONLY knobs for tests/concurrency, never set in
    production: PMS_TEST_DISABLE_LOCKING=1 turns row locking and the guarded sold update off
    (the control test shows the oversell); PMS_TEST_PAUSE_AFTER_CHECK_MS widens the window
    between the availability check and the write (pretix's sleep-after-quota-check)."""
    locking_enabled = environ.get("PMS_TEST_DISABLE_LOCKING") != "1"
    if not locking_enabled:
        log.warning("TEST-ONLY: row locking is disabled (PMS_TEST_DISABLE_LOCKING=1)")
    pause_ms = int(environ.get("PMS_TEST_PAUSE_AFTER_CHECK_MS", "0") or 0)
    pause = None
    if pause_ms > 0:
        log.warning("TEST-ONLY: pausing %s ms after the availability check", pause_ms)

        def pause() -> None:
            time.sleep(pause_ms / 1000)

    return Wiring(locking_enabled=locking_enabled, pause_after_check=pause)
