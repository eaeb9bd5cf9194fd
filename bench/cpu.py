"""CPU accounting from /proc for the benchmark: the server's process tree (a gunicorn master and
its workers) and the database's backends (and PgBouncer), sampled before and after a run.

Why CPU and not only req/s: on a shared 2-core machine req/s moves by tens of percent with the
neighbours' load, while CPU per request hardly does. Two sources, each where it is exact:

- **/proc/<pid>/stat** (utime + stime, in clock ticks) covers every thread of a process, live
  or exited, so it suits gunicorn's threaded workers. A root's cutime + cstime holds the CPU of
  the children it has reaped, so a worker that exits during a run is still counted (its CPU
  moves from "live child" to the master's cutime).
- **/proc/<pid>/schedstat** (nanoseconds on the CPU) is exact but per thread; a PostgreSQL
  backend or PgBouncer is one thread, so it suits them. Falls back to stat when missing.

Per-pid deltas: a backend that appeared during the run counts from zero (its start-up is part
of the run's cost); one that vanished during the run cannot be read any more and is counted as
lost (`lost` in the delta) instead of silently subtracting its earlier figure.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Stat:
    """What the benchmark reads from /proc/<pid>/stat, in seconds."""

    ppid: int
    own: float  # utime + stime
    reaped: float  # cutime + cstime: children waited for


def parse_stat(text: str, ticks: int = TICKS) -> Stat:
    """Parse /proc/<pid>/stat. The command name (field 2) may hold spaces and parentheses, so
    the fields are counted from the last ')'."""
    fields = text.rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3 of proc(5)); ppid is field 4, utime..cstime fields 14-17
    return Stat(ppid=int(fields[1]), own=(int(fields[11]) + int(fields[12])) / ticks,
                reaped=(int(fields[13]) + int(fields[14])) / ticks)


def parse_schedstat(text: str) -> float:
    """Seconds on the CPU from /proc/<pid>/schedstat ("<ns on cpu> <ns waiting> <slices>")."""
    return int(text.split()[0]) / 1e9


def _read(path: str) -> str | None:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:  # the process is gone (or never was)
        return None


def stat(pid: int, proc: str = "/proc") -> Stat | None:
    text = _read(f"{proc}/{pid}/stat")
    return parse_stat(text) if text else None


def single_thread_seconds(pid: int) -> float | None:
    """CPU seconds of a one-thread process (a PostgreSQL backend, PgBouncer), exact to the ns."""
    text = _read(f"/proc/{pid}/schedstat")
    if text:
        return parse_schedstat(text)
    found = stat(pid)
    return found.own if found else None


def tree_seconds(root: int, *, proc: str = "/proc") -> float:
    """CPU seconds of a process, the children it reaped, and its live children."""
    total = 0.0
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        pid = int(entry)
        found = stat(pid, proc)
        if found is None:
            continue
        if pid == root:
            total += found.own + found.reaped
        elif found.ppid == root:
            total += found.own
    return total


def pids_seconds(pids: Iterable[int]) -> dict[int, float]:
    """CPU seconds of each one-thread process still alive."""
    out = {}
    for pid in pids:
        seconds = single_thread_seconds(pid)
        if seconds is not None:
            out[pid] = seconds
    return out


def delta(before: dict[int, float], after: dict[int, float]) -> tuple[float, int]:
    """CPU spent between two `pids_seconds` samples, and how many pids vanished in between
    (their last stretch of CPU is unknown, so the figure is a lower bound when that is > 0)."""
    spent = 0.0
    for pid, seconds in after.items():
        spent += max(0.0, seconds - before.get(pid, 0.0))
    lost = sum(1 for pid in before if pid not in after)
    return spent, lost
