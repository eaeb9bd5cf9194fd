"""The embedded default's one-shot commands wait for the messages they enqueued, but not for
ever: a message that keeps failing retries with backoff, and the wait ends after its bound
with a warning (a command never holds the terminal until the retries run out)."""

from __future__ import annotations

import logging
import time

import dramatiq
import pytest

from pms.config import Settings
from workers import runtime


def test_a_message_that_keeps_failing_ends_the_wait_at_its_bound(monkeypatch, caplog,
                                                                 base_settings: Settings):
    from workers import actors
    from workers.broker import is_stub

    if not is_stub(base_settings):
        pytest.skip("the embedded default's broker only")
    runs = []

    @dramatiq.actor(broker=actors.broker, queue_name="embedded-join-test", max_retries=50,
                    min_backoff=60_000, max_backoff=60_000)
    def always_fails() -> None:
        runs.append(time.monotonic())
        raise RuntimeError("the reaction's service is down")

    monkeypatch.setattr(runtime, "EMBEDDED_JOIN_SECONDS", 2)
    caplog.set_level(logging.WARNING, logger="pms.runtime")
    try:
        with runtime.embedded_worker(base_settings) as join:
            always_fails.send()
            started = time.monotonic()
            join()
            waited = time.monotonic() - started
        assert runs, "the message ran once before the wait ended"
        assert waited < 30  # the bound, not the message's retries (a minute each)
        assert any("still unfinished" in r.getMessage() for r in caplog.records)
    finally:
        actors.broker.flush_all()


def test_a_message_that_succeeds_is_waited_for(monkeypatch, base_settings: Settings):
    """Control: the wait is for the message's end, not the bound."""
    from workers import actors
    from workers.broker import is_stub

    if not is_stub(base_settings):
        pytest.skip("the embedded default's broker only")
    done = []

    @dramatiq.actor(broker=actors.broker, queue_name="embedded-join-test-ok")
    def slow_success() -> None:
        time.sleep(0.5)
        done.append(True)

    monkeypatch.setattr(runtime, "EMBEDDED_JOIN_SECONDS", 20)
    with runtime.embedded_worker(base_settings) as join:
        slow_success.send()
        join()
        assert done == [True]


def test_the_next_command_after_one_left_a_failing_message_runs_its_own(monkeypatch,
                                                                       base_settings: Settings):
    """One process, two embedded commands in a row (as the CLI tests run them): the first
    stops while its message waits for a retry; the second's new queue still gets its messages
    run (a stopped worker keeps no consumer on the broker), and once the leftover is flushed
    the second's wait returns at once (the stopped worker's delivery is not counted
    unfinished for ever)."""
    from workers import actors
    from workers.broker import is_stub

    if not is_stub(base_settings):
        pytest.skip("the embedded default's broker only")
    ran, done = [], []

    @dramatiq.actor(broker=actors.broker, queue_name="embedded-join-left", max_retries=50,
                    min_backoff=60_000, max_backoff=60_000)
    def left_failing() -> None:
        ran.append(True)
        raise RuntimeError("down")

    monkeypatch.setattr(runtime, "EMBEDDED_JOIN_SECONDS", 1)
    with runtime.embedded_worker(base_settings):
        left_failing.send()
        deadline = time.monotonic() + 30
        while not ran and time.monotonic() < deadline:
            time.sleep(0.05)
    assert ran
    actors.broker.flush_all()  # what the suite does between tests

    @dramatiq.actor(broker=actors.broker, queue_name="embedded-join-next")
    def next_one() -> None:
        done.append(True)

    monkeypatch.setattr(runtime, "EMBEDDED_JOIN_SECONDS", 30)
    with runtime.embedded_worker(base_settings) as join:
        next_one.send()
        started = time.monotonic()
        join()
        assert done == [True]
        assert time.monotonic() - started < 20  # no wait on the first command's leftover
