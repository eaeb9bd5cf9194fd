"""Transition tables, read side by side with their tests: every (state, trigger) pair."""

from __future__ import annotations

import pytest

from pms.domain.states import (
    FOLIO_MACHINE,
    MESSAGE_MACHINE,
    RESERVATION_MACHINE,
    RESERVATION_TERMINAL,
    FolioStatus,
    MessageStatus,
    ReservationStatus,
)
from pms.errors import InvalidTransition, ReservationNotEditable

# -- reservation ------------------------------------------------------------------------

R = ReservationStatus
RESERVATION_EXPECTED = {
    (R.CONFIRMED, "edit"): R.CONFIRMED,
    (R.CHECKED_IN, "edit"): R.CHECKED_IN,
    (R.CONFIRMED, "check_in"): R.CHECKED_IN,
    (R.CHECKED_IN, "check_out"): R.CHECKED_OUT,
    (R.CONFIRMED, "cancel"): R.CANCELLED,
    (R.CONFIRMED, "no_show"): R.NO_SHOW,
    (R.CHECKED_IN, "revert_check_in"): R.CONFIRMED,
    (R.CHECKED_OUT, "revert_check_out"): R.CHECKED_IN,
    (R.CONFIRMED, "split"): R.CONFIRMED,
    (R.CHECKED_IN, "split"): R.CHECKED_IN,
    (R.CONFIRMED, "assign_room"): R.CONFIRMED,
    (R.CHECKED_IN, "move_room"): R.CHECKED_IN,
    (R.CONFIRMED, "pre_check_in"): R.CONFIRMED,
}


@pytest.mark.parametrize("state", list(R))
@pytest.mark.parametrize("trigger", sorted(RESERVATION_MACHINE.triggers()))
def test_reservation_table(state, trigger):
    expected = RESERVATION_EXPECTED.get((state, trigger))
    if expected is None:
        with pytest.raises(InvalidTransition):
            RESERVATION_MACHINE.transition(state, trigger)
    else:
        assert RESERVATION_MACHINE.transition(state, trigger) == expected


@pytest.mark.parametrize("state", sorted(RESERVATION_TERMINAL))
def test_edit_of_a_terminal_reservation_is_not_editable(state):
    with pytest.raises(ReservationNotEditable) as err:
        RESERVATION_MACHINE.transition(state, "edit", error=ReservationNotEditable)
    assert err.value.code == "reservation_not_editable" and err.value.status == 409


def test_terminal_reservations_have_no_way_out_but_revert_check_out():
    for state in RESERVATION_TERMINAL:
        allowed = {t for t in RESERVATION_MACHINE.triggers() if RESERVATION_MACHINE.can(state, t)}
        assert allowed == ({"revert_check_out"} if state == R.CHECKED_OUT else set())


def test_folio_table():
    assert FOLIO_MACHINE.transition(FolioStatus.OPEN, "close") == FolioStatus.CLOSED
    assert FOLIO_MACHINE.transition(FolioStatus.CLOSED, "reopen") == FolioStatus.OPEN
    for state, trigger in [(FolioStatus.CLOSED, "close"), (FolioStatus.OPEN, "reopen")]:
        with pytest.raises(InvalidTransition):
            FOLIO_MACHINE.transition(state, trigger)


def test_message_table():
    assert MESSAGE_MACHINE.transition(MessageStatus.QUEUED, "send") == MessageStatus.SENT
    assert MESSAGE_MACHINE.transition(MessageStatus.FAILED, "retry") == MessageStatus.QUEUED
    with pytest.raises(InvalidTransition):
        MESSAGE_MACHINE.transition(MessageStatus.RECEIVED, "send")
