"""The cashiering and night-audit transition tables, every (state, trigger) pair."""

from __future__ import annotations

import pytest

from pms.domain.states import (
    AUDIT_RUN_MACHINE,
    JOB_MACHINE,
    PAYMENT_MACHINE,
    VOUCHER_MACHINE,
    AuditRunStatus,
    JobStatus,
    PaymentStatus,
    VoucherStatus,
)
from pms.errors import InvalidTransition

P, V, A, J = PaymentStatus, VoucherStatus, AuditRunStatus, JobStatus

EXPECTED = {
    PAYMENT_MACHINE: {
        (P.PENDING, "capture"): P.CAPTURED, (P.PENDING, "authorize"): P.AUTHORIZED,
        (P.PENDING, "fail"): P.FAILED, (P.AUTHORIZED, "consume"): P.CONSUMED},
    VOUCHER_MACHINE: {(V.ACTIVE, "redeem_part"): V.ACTIVE, (V.ACTIVE, "redeem_all"): V.REDEEMED},
    AUDIT_RUN_MACHINE: {
        (A.RUNNING, "finish"): A.DONE, (A.RUNNING, "fail"): A.FAILED,
        (A.FAILED, "resume"): A.RUNNING, (A.RUNNING, "resume"): A.RUNNING},
    JOB_MACHINE: {
        (J.QUEUED, "start"): J.RUNNING, (J.RUNNING, "succeed"): J.SUCCEEDED,
        (J.RUNNING, "fail"): J.FAILED, (J.QUEUED, "fail"): J.FAILED},
}


@pytest.mark.parametrize("machine", list(EXPECTED), ids=lambda m: m.name)
def test_every_pair_answers_as_the_table_says(machine):
    table = EXPECTED[machine]
    for state in machine.states:
        for trigger in machine.triggers():
            if (state, trigger) in table:
                assert machine.transition(state, trigger) == table[(state, trigger)]
            else:
                with pytest.raises(InvalidTransition):
                    machine.transition(state, trigger)


def test_final_states_have_no_way_out():
    for state in (P.CAPTURED, P.FAILED, P.CONSUMED):
        assert not any(PAYMENT_MACHINE.can(state, t) for t in PAYMENT_MACHINE.triggers())
    assert not any(AUDIT_RUN_MACHINE.can(A.DONE, t) for t in AUDIT_RUN_MACHINE.triggers())
    assert not any(VOUCHER_MACHINE.can(V.REDEEMED, t) for t in VOUCHER_MACHINE.triggers())
