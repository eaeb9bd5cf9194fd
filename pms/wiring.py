"""What an entry point wires in, built once at start-up in this one visible place: the hooks
run after a commit that emitted events (a relay nudge), and the TEST-ONLY switches of the
concurrency control runs. Nothing here runs at import; nothing else registers hooks.

Entry points: `get_app()` installs `for_web(os.environ)`; the worker runtime adds its relay
nudge with `add_after_emit(hook)` at process boot; tests use `installed(Wiring(...))`.

Readers ask `current()` at the moment they decide (`pms.db.locking.for_update`, the inventory's
take, the check-in's room pick, a posting's and a refund's checks, and `pms.db.uow` for the
after-emit hooks it runs after commit, the calendar horizon of room type creation and the night
audit), so there is no module attribute to assign and no copy that could disagree with the
wiring. A leaf: this module imports nothing of pms but `pms.config` (itself a leaf).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from pms.config import DEFAULT_CALENDAR_HORIZON_DAYS, calendar_horizon_days

log = logging.getLogger("pms.wiring")

AfterEmit = Callable[[list[Any]], None]


@dataclass(frozen=True)
class Wiring:
    """The dependencies of one process's entry point."""

    after_emit: tuple[AfterEmit, ...] = ()
    # TEST-ONLY (pretix's skip-locking flag), never False in production: the concurrency
    # control runs turn off row locks (`for_update`), the inventory's guarded sold update and
    # the check-in's locked room pick, to show that the race they guard against is real.
    locking_enabled: bool = True
    # TEST-ONLY (pretix's sleep-after-quota-check): widen a race window. Run after the
    # inventory's availability check, before its write; and after check-in picked a room.
    pause_after_check: Callable[[], None] | None = None
    pause_after_pick: Callable[[], None] | None = None
    # TEST-ONLY, likewise: after a posting saw its folio OPEN (cashiering; the window a
    # concurrent check-out would need) and after a refund read the folio's credit (refunds;
    # the window a concurrent refund would need).
    pause_after_open_check: Callable[[], None] | None = None
    pause_after_credit_check: Callable[[], None] | None = None
    # TEST-ONLY, likewise: after a key issue counted the stay's live keys, before
    # it writes the new one (the window a concurrent issue for the same stay would need).
    pause_after_key_count: Callable[[], None] | None = None
    # TEST-ONLY, likewise: after a holder's booking counted the holder's future reservations
    # (booking limits), and after a feedback submission read its stay's row (feedback).
    pause_after_guest_count: Callable[[], None] | None = None
    pause_after_feedback_read: Callable[[], None] | None = None
    # TEST-ONLY, likewise: after a kiosk lookup read its terminal's failure budget,
    # before it records the outcome (the window concurrent misses of one terminal would need).
    pause_after_lookup_budget: Callable[[], None] | None = None
    # Days of calendar rows kept ahead per room type (Settings.calendar_horizon_days,
    # PMS_CALENDAR_HORIZON_DAYS): read by room type creation and the night audit.
    calendar_horizon_days: int = DEFAULT_CALENDAR_HORIZON_DAYS

    def with_after_emit(self, hook: AfterEmit) -> Wiring:
        return self if hook in self.after_emit else replace(
            self, after_emit=(*self.after_emit, hook))

    def without_after_emit(self, hook: AfterEmit) -> Wiring:
        return replace(self, after_emit=tuple(h for h in self.after_emit if h is not hook))


_current = Wiring()


def current() -> Wiring:
    return _current


def install(wiring: Wiring) -> Wiring:
    """Make `wiring` the process's wiring; returns the previous one."""
    global _current
    previous, _current = _current, wiring
    return previous


@contextmanager
def installed(wiring: Wiring | None = None, **changes: Any) -> Iterator[Wiring]:
    """`wiring` (default: the current one) with `changes` for the block, then the previous
    wiring again (tests: `installed(locking_enabled=False)`). Process-wide, so the threads a
    test starts see it too."""
    wiring = replace(wiring if wiring is not None else _current, **changes)
    previous = install(wiring)
    try:
        yield wiring
    finally:
        install(previous)


def add_after_emit(hook: AfterEmit) -> None:
    """Add a post-commit hook (the embedded runtime's relay nudge) to the current wiring; the
    unit of work runs `current().after_emit` after every commit that emitted events."""
    install(_current.with_after_emit(hook))


def remove_after_emit(hook: AfterEmit) -> None:
    """Take one hook out again (the runtime's shutdown: its relay is gone)."""
    install(_current.without_after_emit(hook))


def set_calendar_horizon(days: int) -> None:
    """The process's calendar horizon (from its Settings: the worker boot, a CLI command)."""
    install(replace(_current, calendar_horizon_days=days))


def for_web(environ: Mapping[str, str]) -> Wiring:
    """The web process's wiring. TEST-ONLY knobs for tests/concurrency, never set in
    production: PMS_TEST_DISABLE_LOCKING=1 turns row locking and the guarded sold update off
    (the control test shows the oversell); PMS_TEST_PAUSE_AFTER_CHECK_MS widens the window
    between the availability check and the write (pretix's sleep-after-quota-check);
    PMS_TEST_PAUSE_AFTER_LOOKUP_BUDGET_MS the kiosk lookup's, between its read of the terminal's
    failure budget and its write."""
    locking_enabled = environ.get("PMS_TEST_DISABLE_LOCKING") != "1"
    if not locking_enabled:
        log.warning("TEST-ONLY: row locking is disabled (PMS_TEST_DISABLE_LOCKING=1)")
    pause_ms = int(environ.get("PMS_TEST_PAUSE_AFTER_CHECK_MS", "0") or 0)
    pause = None
    if pause_ms > 0:
        log.warning("TEST-ONLY: pausing %s ms after the availability check", pause_ms)

        def pause() -> None:
            time.sleep(pause_ms / 1000)

    lookup_ms = int(environ.get("PMS_TEST_PAUSE_AFTER_LOOKUP_BUDGET_MS", "0") or 0)
    lookup_pause = None
    if lookup_ms > 0:  # the kiosk lookup's budget read and write
        log.warning("TEST-ONLY: pausing %s ms after the kiosk lookup's budget read", lookup_ms)

        def lookup_pause() -> None:
            time.sleep(lookup_ms / 1000)

    return Wiring(locking_enabled=locking_enabled, pause_after_check=pause,
                  pause_after_lookup_budget=lookup_pause,
                  calendar_horizon_days=calendar_horizon_days(
                      environ.get("PMS_CALENDAR_HORIZON_DAYS")))
