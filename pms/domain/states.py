"""Every lifecycle's states and its transition table. A status value only ever comes from
`<MACHINE>.transition()`; code review rejects status assignments from literals.

Each table is data: (from, trigger) -> to. Add new lifecycles below, one block each.
"""

from __future__ import annotations

from enum import StrEnum

from pms.domain.machine import Machine


class RoomStatus(StrEnum):
    VACANT = "VACANT"
    OCCUPIED = "OCCUPIED"


ROOM_MACHINE = Machine(RoomStatus, {
    (RoomStatus.VACANT, "occupy"): RoomStatus.OCCUPIED,
    (RoomStatus.OCCUPIED, "vacate"): RoomStatus.VACANT,
})


# -- cashiering and night audit (issue 5) ---------------------------------------------------------

class PaymentStatus(StrEnum):
    PENDING = "PENDING"        # recorded, payments service not (yet) answered
    AUTHORIZED = "AUTHORIZED"  # pre-authorization confirmed, not captured
    CAPTURED = "CAPTURED"      # money taken (counts against the balance)
    CONSUMED = "CONSUMED"      # a pre-authorization that was captured by a payment
    FAILED = "FAILED"          # declined; no money moved


PAYMENT_MACHINE = Machine(PaymentStatus, {
    (PaymentStatus.PENDING, "capture"): PaymentStatus.CAPTURED,
    (PaymentStatus.PENDING, "authorize"): PaymentStatus.AUTHORIZED,
    (PaymentStatus.PENDING, "fail"): PaymentStatus.FAILED,
    (PaymentStatus.AUTHORIZED, "consume"): PaymentStatus.CONSUMED,
})
PAYMENT_INITIAL = PaymentStatus.PENDING


class VoucherStatus(StrEnum):
    ACTIVE = "ACTIVE"
    REDEEMED = "REDEEMED"


VOUCHER_MACHINE = Machine(VoucherStatus, {
    (VoucherStatus.ACTIVE, "redeem_part"): VoucherStatus.ACTIVE,
    (VoucherStatus.ACTIVE, "redeem_all"): VoucherStatus.REDEEMED,
})
VOUCHER_INITIAL = VoucherStatus.ACTIVE


class AuditRunStatus(StrEnum):
    RUNNING = "RUNNING"
    DONE = "DONE"
    FAILED = "FAILED"


AUDIT_RUN_MACHINE = Machine(AuditRunStatus, {
    (AuditRunStatus.RUNNING, "finish"): AuditRunStatus.DONE,
    (AuditRunStatus.RUNNING, "fail"): AuditRunStatus.FAILED,
    (AuditRunStatus.FAILED, "resume"): AuditRunStatus.RUNNING,
    (AuditRunStatus.RUNNING, "resume"): AuditRunStatus.RUNNING,  # after a crash mid-run
})
AUDIT_RUN_INITIAL = AuditRunStatus.RUNNING


class JobStatus(StrEnum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


JOB_MACHINE = Machine(JobStatus, {
    (JobStatus.QUEUED, "start"): JobStatus.RUNNING,
    (JobStatus.RUNNING, "succeed"): JobStatus.SUCCEEDED,
    (JobStatus.RUNNING, "fail"): JobStatus.FAILED,
    (JobStatus.QUEUED, "fail"): JobStatus.FAILED,
})
JOB_INITIAL = JobStatus.QUEUED
