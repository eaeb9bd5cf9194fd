"""Explicit wiring (issue 16): an entry point builds its hooks and TEST-ONLY switches once, in
pms.wiring, and installs them; nothing is registered at import."""

from __future__ import annotations

from pms import wiring
from pms.db import locking, uow
from pms.services import inventory


def test_importing_the_service_registers_nothing():
    assert wiring.current().locking_enabled and wiring.current().pause_after_check is None
    assert locking.LOCKING_ENABLED is True


def test_the_web_wiring_reads_the_test_only_switches_from_the_environment():
    assert wiring.for_web({}) == wiring.Wiring()
    switched = wiring.for_web({"PMS_TEST_DISABLE_LOCKING": "1",
                               "PMS_TEST_PAUSE_AFTER_CHECK_MS": "5"})
    assert switched.locking_enabled is False and switched.pause_after_check is not None


def test_installing_wires_every_switch_and_hook_in_one_place_and_restores_them():
    calls: list[int] = []

    def hook(events):  # noqa: ANN001, ANN202
        calls.append(len(events))

    def pause() -> None:
        return None

    with wiring.installed(wiring.Wiring(after_emit=(hook,), locking_enabled=False,
                                        pause_after_check=pause)):
        assert locking.LOCKING_ENABLED is False
        assert inventory._pause_after_check is pause
        assert uow._after_emit_hooks == [hook]
    assert locking.LOCKING_ENABLED is True and inventory._pause_after_check is None
    assert uow._after_emit_hooks == []


def test_add_after_emit_records_the_hook_in_the_wiring():
    def hook(events):  # noqa: ANN001, ANN202
        return None

    previous = wiring.current()
    try:
        wiring.add_after_emit(hook)
        wiring.add_after_emit(hook)
        assert wiring.current().after_emit == (*previous.after_emit, hook)
        assert uow._after_emit_hooks[-1] is hook
    finally:
        wiring.install(previous)
