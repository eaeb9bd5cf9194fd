"""Explicit wiring: an entry point builds its hooks and TEST-ONLY switches once, in
pms.wiring, and installs them; nothing is registered at import, and the switches' readers ask
the wiring when they decide (no module attribute to assign, no copy that could disagree)."""

from __future__ import annotations

import uuid

import pytest

from pms import wiring
from pms.context import system_ctx
from pms.db import locking, uow
from pms.services.cashiering import cashiering, refunds
from pms.services.inventory import inventory
from pms.services.reservations import stays


def test_importing_the_service_registers_nothing():
    assert wiring.current().locking_enabled and wiring.current().pause_after_check is None
    assert wiring.current().pause_after_pick is None
    assert wiring.current().pause_after_open_check is None
    assert wiring.current().pause_after_credit_check is None
    assert wiring.current().after_emit == ()
    assert locking.locking_enabled() is True


@pytest.mark.parametrize(("module", "name"), [
    (locking, "LOCKING_ENABLED"), (inventory, "set_pause_after_check"),
    (inventory, "_pause_after_check"), (inventory, "LOCK_TIMEOUT_MS"),
    (stays, "PICK_UNDER_LOCK"), (stays, "set_pause_after_pick"), (stays, "_pause_after_pick"),
    (cashiering, "set_pause_after_open_check"), (cashiering, "_pause_after_open_check"),
    (refunds, "set_pause_after_credit_check"), (refunds, "_pause_after_credit_check"),
])
def test_the_test_only_switches_live_in_the_wiring_only(module, name):
    """A module-level switch could be assigned by a test and disagree with the wiring."""
    assert not hasattr(module, name)


@pytest.mark.parametrize("name", [
    "_after_emit_hooks", "set_after_emit_hooks", "register_after_emit", "clear_after_emit_hooks",
])
def test_the_after_emit_hooks_have_one_registry_the_wiring(name):
    """The unit of work keeps no list of its own that install() must copy into (or a caller
    could register into behind the wiring's back)."""
    assert not hasattr(uow, name)


def _run_after_commit_with_one_event() -> None:
    unit = uow.UnitOfWork(system_ctx(uuid.uuid4(), sub="test"))
    unit.events.append(object())  # type: ignore[arg-type]  # what is emitted is not read here
    unit.run_after_commit()


def test_the_unit_of_work_runs_the_after_emit_hooks_of_the_current_wiring():
    calls: list[str] = []

    def first(events):  # noqa: ANN001, ANN202
        calls.append(f"first:{len(events)}")

    def second(events):  # noqa: ANN001, ANN202
        calls.append(f"second:{len(events)}")

    with wiring.installed(after_emit=(first,)):
        _run_after_commit_with_one_event()
        wiring.add_after_emit(second)
        _run_after_commit_with_one_event()
        wiring.remove_after_emit(first)
        _run_after_commit_with_one_event()
    _run_after_commit_with_one_event()  # the previous wiring again: no hooks
    assert calls == ["first:1", "first:1", "second:1", "second:1"]


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
        assert locking.locking_enabled() is False
        assert wiring.current().pause_after_check is pause
        assert wiring.current().after_emit == (hook,)
    assert locking.locking_enabled() is True and wiring.current().pause_after_check is None
    assert wiring.current().after_emit == ()


def test_installed_with_changes_keeps_the_rest_of_the_current_wiring():
    def hook(events):  # noqa: ANN001, ANN202
        return None

    with wiring.installed(wiring.Wiring(after_emit=(hook,))):
        with wiring.installed(locking_enabled=False) as changed:
            assert changed.after_emit == (hook,) and changed.locking_enabled is False
            assert wiring.current() is changed
        assert wiring.current().locking_enabled is True
        assert wiring.current().after_emit == (hook,)


def test_installed_restores_the_wiring_when_the_block_raises():
    before = wiring.current()
    with pytest.raises(RuntimeError), wiring.installed(locking_enabled=False):
        raise RuntimeError("boom")
    assert wiring.current() is before and locking.locking_enabled() is True


def test_add_after_emit_records_the_hook_in_the_wiring():
    def hook(events):  # noqa: ANN001, ANN202
        return None

    previous = wiring.current()
    try:
        wiring.add_after_emit(hook)
        wiring.add_after_emit(hook)
        assert wiring.current().after_emit == (*previous.after_emit, hook)
        wiring.remove_after_emit(hook)
        assert wiring.current().after_emit == previous.after_emit
    finally:
        wiring.install(previous)
