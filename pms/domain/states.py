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


# -- reservations ---------------------------------------------------------------------

class ReservationStatus(StrEnum):
    CONFIRMED = "CONFIRMED"
    CHECKED_IN = "CHECKED_IN"
    CHECKED_OUT = "CHECKED_OUT"
    CANCELLED = "CANCELLED"
    NO_SHOW = "NO_SHOW"


RESERVATION_MACHINE = Machine(ReservationStatus, {
    (ReservationStatus.CONFIRMED, "edit"): ReservationStatus.CONFIRMED,
    (ReservationStatus.CHECKED_IN, "edit"): ReservationStatus.CHECKED_IN,
    (ReservationStatus.CONFIRMED, "check_in"): ReservationStatus.CHECKED_IN,
    (ReservationStatus.CHECKED_IN, "check_out"): ReservationStatus.CHECKED_OUT,
    (ReservationStatus.CONFIRMED, "cancel"): ReservationStatus.CANCELLED,
    (ReservationStatus.CONFIRMED, "no_show"): ReservationStatus.NO_SHOW,
    (ReservationStatus.CHECKED_IN, "revert_check_in"): ReservationStatus.CONFIRMED,
    (ReservationStatus.CHECKED_OUT, "revert_check_out"): ReservationStatus.CHECKED_IN,
    (ReservationStatus.CONFIRMED, "split"): ReservationStatus.CONFIRMED,
    (ReservationStatus.CHECKED_IN, "split"): ReservationStatus.CHECKED_IN,
    (ReservationStatus.CONFIRMED, "assign_room"): ReservationStatus.CONFIRMED,
    (ReservationStatus.CHECKED_IN, "move_room"): ReservationStatus.CHECKED_IN,
    (ReservationStatus.CONFIRMED, "pre_check_in"): ReservationStatus.CONFIRMED,
})

RESERVATION_TERMINAL = frozenset({ReservationStatus.CANCELLED, ReservationStatus.CHECKED_OUT,
                                  ReservationStatus.NO_SHOW})
# A new reservation is born CONFIRMED (create and walk-in: SPEC "(none) -> CONFIRMED").
RESERVATION_INITIAL = ReservationStatus.CONFIRMED


class FolioStatus(StrEnum):
    OPEN = "OPEN"
    CLOSED = "CLOSED"


FOLIO_MACHINE = Machine(FolioStatus, {
    (FolioStatus.OPEN, "close"): FolioStatus.CLOSED,
    (FolioStatus.CLOSED, "reopen"): FolioStatus.OPEN,  # revert check-out only
})
FOLIO_INITIAL = FolioStatus.OPEN


class MessageStatus(StrEnum):
    RECEIVED = "RECEIVED"   # incoming
    QUEUED = "QUEUED"       # outgoing, waiting for the notifications actor
    SENT = "SENT"
    FAILED = "FAILED"


MESSAGE_MACHINE = Machine(MessageStatus, {
    (MessageStatus.QUEUED, "send"): MessageStatus.SENT,
    (MessageStatus.QUEUED, "fail"): MessageStatus.FAILED,
    (MessageStatus.FAILED, "retry"): MessageStatus.QUEUED,
    (MessageStatus.FAILED, "send"): MessageStatus.SENT,
})
MESSAGE_INITIAL = {"incoming": MessageStatus.RECEIVED, "outgoing": MessageStatus.QUEUED}


class ServiceRequestStatus(StrEnum):
    OPEN = "OPEN"
    IN_PROGRESS = "IN_PROGRESS"
    DONE = "DONE"
    CANCELLED = "CANCELLED"


SERVICE_REQUEST_MACHINE = Machine(ServiceRequestStatus, {
    (ServiceRequestStatus.OPEN, "start"): ServiceRequestStatus.IN_PROGRESS,
    (ServiceRequestStatus.OPEN, "complete"): ServiceRequestStatus.DONE,
    (ServiceRequestStatus.IN_PROGRESS, "complete"): ServiceRequestStatus.DONE,
    (ServiceRequestStatus.OPEN, "cancel"): ServiceRequestStatus.CANCELLED,
    (ServiceRequestStatus.IN_PROGRESS, "cancel"): ServiceRequestStatus.CANCELLED,
})
SERVICE_REQUEST_INITIAL = ServiceRequestStatus.OPEN


# -- housekeeping ---------------------------------------------------------------------

class HkStatus(StrEnum):
    CLEAN = "CLEAN"
    DIRTY = "DIRTY"
    INSPECTED = "INSPECTED"
    OUT_OF_ORDER = "OUT_OF_ORDER"
    OUT_OF_SERVICE = "OUT_OF_SERVICE"


# Triggers are named after the mark asked for (PUT .../housekeeping/{room_number} sends the
# target hk_status; HK_TRIGGER maps it). Out-of-order/out-of-service rooms come back DIRTY.
HK_MACHINE = Machine(HkStatus, {
    (HkStatus.CLEAN, "dirty"): HkStatus.DIRTY,
    (HkStatus.INSPECTED, "dirty"): HkStatus.DIRTY,
    (HkStatus.DIRTY, "dirty"): HkStatus.DIRTY,
    (HkStatus.OUT_OF_ORDER, "dirty"): HkStatus.DIRTY,
    (HkStatus.OUT_OF_SERVICE, "dirty"): HkStatus.DIRTY,
    (HkStatus.DIRTY, "clean"): HkStatus.CLEAN,
    (HkStatus.CLEAN, "clean"): HkStatus.CLEAN,
    (HkStatus.CLEAN, "inspect"): HkStatus.INSPECTED,
    (HkStatus.INSPECTED, "inspect"): HkStatus.INSPECTED,
    (HkStatus.CLEAN, "out_of_order"): HkStatus.OUT_OF_ORDER,
    (HkStatus.DIRTY, "out_of_order"): HkStatus.OUT_OF_ORDER,
    (HkStatus.INSPECTED, "out_of_order"): HkStatus.OUT_OF_ORDER,
    (HkStatus.OUT_OF_SERVICE, "out_of_order"): HkStatus.OUT_OF_ORDER,
    (HkStatus.OUT_OF_ORDER, "out_of_order"): HkStatus.OUT_OF_ORDER,
    (HkStatus.CLEAN, "out_of_service"): HkStatus.OUT_OF_SERVICE,
    (HkStatus.DIRTY, "out_of_service"): HkStatus.OUT_OF_SERVICE,
    (HkStatus.INSPECTED, "out_of_service"): HkStatus.OUT_OF_SERVICE,
    (HkStatus.OUT_OF_ORDER, "out_of_service"): HkStatus.OUT_OF_SERVICE,
    (HkStatus.OUT_OF_SERVICE, "out_of_service"): HkStatus.OUT_OF_SERVICE,
})
HK_TRIGGER = {HkStatus.CLEAN: "clean", HkStatus.DIRTY: "dirty", HkStatus.INSPECTED: "inspect",
              HkStatus.OUT_OF_ORDER: "out_of_order", HkStatus.OUT_OF_SERVICE: "out_of_service"}


class HkTaskKind(StrEnum):
    DEPARTURE_CLEAN = "DEPARTURE_CLEAN"
    STAYOVER = "STAYOVER"
    INSPECTION = "INSPECTION"
    TURNDOWN = "TURNDOWN"
    DEEP_CLEAN = "DEEP_CLEAN"


class HkTaskStatus(StrEnum):
    OPEN = "OPEN"
    IN_PROGRESS = "IN_PROGRESS"
    DONE = "DONE"
    CANCELLED = "CANCELLED"


HK_TASK_MACHINE = Machine(HkTaskStatus, {
    (HkTaskStatus.OPEN, "start"): HkTaskStatus.IN_PROGRESS,
    (HkTaskStatus.IN_PROGRESS, "start"): HkTaskStatus.IN_PROGRESS,
    (HkTaskStatus.IN_PROGRESS, "release"): HkTaskStatus.OPEN,
    (HkTaskStatus.OPEN, "release"): HkTaskStatus.OPEN,
    (HkTaskStatus.OPEN, "complete"): HkTaskStatus.DONE,
    (HkTaskStatus.IN_PROGRESS, "complete"): HkTaskStatus.DONE,
    (HkTaskStatus.DONE, "complete"): HkTaskStatus.DONE,
    (HkTaskStatus.OPEN, "cancel"): HkTaskStatus.CANCELLED,
    (HkTaskStatus.IN_PROGRESS, "cancel"): HkTaskStatus.CANCELLED,
    (HkTaskStatus.CANCELLED, "cancel"): HkTaskStatus.CANCELLED,
})
HK_TASK_TRIGGER = {HkTaskStatus.IN_PROGRESS: "start", HkTaskStatus.OPEN: "release",
                   HkTaskStatus.DONE: "complete", HkTaskStatus.CANCELLED: "cancel"}
HK_TASK_INITIAL = HkTaskStatus.OPEN


# -- cashiering and night audit ---------------------------------------------------------

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


# -- digital keys ----------------------------------------------------------------------

class DigitalKeyStatus(StrEnum):
    INACTIVE = "INACTIVE"
    ACTIVE = "ACTIVE"
    REVOKED = "REVOKED"   # terminal: check-out, room move, revert of the check-in
    EXPIRED = "EXPIRED"   # terminal: past valid_until (the sweeper writes it)


# deactivate is a suspension (ACTIVE -> INACTIVE, reversible by activate); REVOKED and EXPIRED
# are terminal: activate/deactivate there answer 409 key_not_active.
DIGITAL_KEY_MACHINE = Machine(DigitalKeyStatus, {
    (DigitalKeyStatus.INACTIVE, "activate"): DigitalKeyStatus.ACTIVE,
    (DigitalKeyStatus.ACTIVE, "activate"): DigitalKeyStatus.ACTIVE,
    (DigitalKeyStatus.ACTIVE, "deactivate"): DigitalKeyStatus.INACTIVE,
    (DigitalKeyStatus.INACTIVE, "deactivate"): DigitalKeyStatus.INACTIVE,
    (DigitalKeyStatus.INACTIVE, "revoke"): DigitalKeyStatus.REVOKED,
    (DigitalKeyStatus.ACTIVE, "revoke"): DigitalKeyStatus.REVOKED,
    (DigitalKeyStatus.INACTIVE, "expire"): DigitalKeyStatus.EXPIRED,
    (DigitalKeyStatus.ACTIVE, "expire"): DigitalKeyStatus.EXPIRED,
    (DigitalKeyStatus.INACTIVE, "extend"): DigitalKeyStatus.INACTIVE,
    (DigitalKeyStatus.ACTIVE, "extend"): DigitalKeyStatus.ACTIVE,
})
DIGITAL_KEY_INITIAL = DigitalKeyStatus.INACTIVE
DIGITAL_KEY_LIVE = frozenset({DigitalKeyStatus.INACTIVE, DigitalKeyStatus.ACTIVE})


class LockState(StrEnum):
    """What the lock knows of a key's last command, apart from its intended status."""

    PENDING = "pending"      # command recorded, not yet acknowledged by the lock service
    SENT = "sent"            # the lock service acknowledged the command (not proof)
    CONFIRMED = "confirmed"  # the lock itself reported the state (event or read-back)
    FAILED = "failed"        # gave up after the retries; the desk must act (still retried)


LOCK_STATE_MACHINE = Machine(LockState, {
    (LockState.PENDING, "command"): LockState.PENDING,
    (LockState.SENT, "command"): LockState.PENDING,
    (LockState.CONFIRMED, "command"): LockState.PENDING,
    (LockState.FAILED, "command"): LockState.PENDING,
    (LockState.PENDING, "ack"): LockState.SENT,
    (LockState.FAILED, "ack"): LockState.SENT,
    (LockState.SENT, "confirm"): LockState.CONFIRMED,
    (LockState.PENDING, "fail"): LockState.FAILED,
    (LockState.FAILED, "fail"): LockState.FAILED,
})
LOCK_STATE_INITIAL = LockState.PENDING
# -- company payment methods ---------------------------------------------------------

class CompanyPaymentMethodStatus(StrEnum):
    PENDING = "PENDING"
    POSTPAY = "POSTPAY"
    BILL_TO_COMPANY = "BILL_TO_COMPANY"
    REJECTED = "REJECTED"


_CPM = CompanyPaymentMethodStatus
COMPANY_PAYMENT_METHOD_MACHINE = Machine(CompanyPaymentMethodStatus, {
    (_CPM.PENDING, "approve_postpay"): _CPM.POSTPAY,              # staff
    (_CPM.PENDING, "approve_bill_to_company"): _CPM.BILL_TO_COMPANY,  # staff
    (_CPM.PENDING, "reject"): _CPM.REJECTED,                     # staff, with a reason
    (_CPM.BILL_TO_COMPANY, "approve_postpay"): _CPM.POSTPAY,      # staff re-classification
    (_CPM.POSTPAY, "approve_bill_to_company"): _CPM.BILL_TO_COMPANY,
    (_CPM.POSTPAY, "suspend"): _CPM.REJECTED,                    # staff, with a reason
    (_CPM.BILL_TO_COMPANY, "suspend"): _CPM.REJECTED,
    (_CPM.REJECTED, "resubmit"): _CPM.PENDING,                   # company ADMIN (or staff)
})
# A new method is born PENDING (submitted by a company ADMIN or staff); the corporate checkout
# offers only the approved ones.
COMPANY_PAYMENT_METHOD_INITIAL = _CPM.PENDING
COMPANY_PAYMENT_METHOD_USABLE = frozenset({_CPM.POSTPAY, _CPM.BILL_TO_COMPANY})


class CreditOverrideStatus(StrEnum):
    REQUESTED = "REQUESTED"
    ACTIVE = "ACTIVE"
    DECLINED = "DECLINED"
    REVOKED = "REVOKED"


CREDIT_OVERRIDE_MACHINE = Machine(CreditOverrideStatus, {
    (CreditOverrideStatus.REQUESTED, "approve"): CreditOverrideStatus.ACTIVE,  # a second staff
    (CreditOverrideStatus.REQUESTED, "decline"): CreditOverrideStatus.DECLINED,
    (CreditOverrideStatus.ACTIVE, "revoke"): CreditOverrideStatus.REVOKED,
})
CREDIT_OVERRIDE_INITIAL = CreditOverrideStatus.REQUESTED



# -- banquet events --------------------------------------------------------------------

class EventStatus(StrEnum):
    INQUIRY = "INQUIRY"
    TENTATIVE = "TENTATIVE"
    DEFINITE = "DEFINITE"
    ACTUAL = "ACTUAL"
    CLOSED = "CLOSED"
    CANCELLED = "CANCELLED"
    LOST = "LOST"


EVENT_MACHINE = Machine(EventStatus, {
    (EventStatus.INQUIRY, "tentative"): EventStatus.TENTATIVE,
    (EventStatus.INQUIRY, "definite"): EventStatus.DEFINITE,
    (EventStatus.TENTATIVE, "definite"): EventStatus.DEFINITE,
    (EventStatus.DEFINITE, "actual"): EventStatus.ACTUAL,
    (EventStatus.ACTUAL, "close"): EventStatus.CLOSED,
    (EventStatus.INQUIRY, "cancel"): EventStatus.CANCELLED,
    (EventStatus.TENTATIVE, "cancel"): EventStatus.CANCELLED,
    (EventStatus.DEFINITE, "cancel"): EventStatus.CANCELLED,
    (EventStatus.INQUIRY, "lose"): EventStatus.LOST,
    (EventStatus.TENTATIVE, "lose"): EventStatus.LOST,
    (EventStatus.INQUIRY, "edit"): EventStatus.INQUIRY,
    (EventStatus.TENTATIVE, "edit"): EventStatus.TENTATIVE,
    (EventStatus.DEFINITE, "edit"): EventStatus.DEFINITE,
    (EventStatus.ACTUAL, "edit"): EventStatus.ACTUAL,
})
EVENT_INITIAL = EventStatus.INQUIRY
# The states whose event holds its space (and its resources' stock): one row per element space.
EVENT_DEDUCTING = frozenset({EventStatus.TENTATIVE, EventStatus.DEFINITE, EventStatus.ACTUAL})


# -- room blocks -----------------------------------------------------------------------

class BlockStatus(StrEnum):
    INQUIRY = "INQUIRY"
    TENTATIVE = "TENTATIVE"
    DEFINITE = "DEFINITE"
    ACTUAL = "ACTUAL"
    CANCELLED = "CANCELLED"
    LOST = "LOST"


BLOCK_MACHINE = Machine(BlockStatus, {
    (BlockStatus.INQUIRY, "tentative"): BlockStatus.TENTATIVE,
    (BlockStatus.INQUIRY, "definite"): BlockStatus.DEFINITE,
    (BlockStatus.TENTATIVE, "definite"): BlockStatus.DEFINITE,
    (BlockStatus.DEFINITE, "release"): BlockStatus.TENTATIVE,  # only with nothing picked up
    (BlockStatus.DEFINITE, "actualize"): BlockStatus.ACTUAL,
    (BlockStatus.INQUIRY, "cancel"): BlockStatus.CANCELLED,
    (BlockStatus.TENTATIVE, "cancel"): BlockStatus.CANCELLED,
    (BlockStatus.DEFINITE, "cancel"): BlockStatus.CANCELLED,  # picked rooms: cancel_picked
    (BlockStatus.INQUIRY, "lose"): BlockStatus.LOST,
    (BlockStatus.TENTATIVE, "lose"): BlockStatus.LOST,
    # changes that keep the state (allocation, wash, pick-up, cut-off, edit)
    (BlockStatus.INQUIRY, "edit"): BlockStatus.INQUIRY,
    (BlockStatus.TENTATIVE, "edit"): BlockStatus.TENTATIVE,
    (BlockStatus.DEFINITE, "edit"): BlockStatus.DEFINITE,
    (BlockStatus.ACTUAL, "edit"): BlockStatus.ACTUAL,
    (BlockStatus.TENTATIVE, "pick"): BlockStatus.TENTATIVE,
    (BlockStatus.DEFINITE, "pick"): BlockStatus.DEFINITE,
    (BlockStatus.ACTUAL, "pick"): BlockStatus.ACTUAL,
    (BlockStatus.TENTATIVE, "cut_off"): BlockStatus.TENTATIVE,
    (BlockStatus.DEFINITE, "cut_off"): BlockStatus.DEFINITE,
    (BlockStatus.ACTUAL, "cut_off"): BlockStatus.ACTUAL,
}, name="block")
BLOCK_INITIAL = BlockStatus.INQUIRY
BLOCK_TRIGGERS = ("tentative", "definite", "release", "actualize", "cancel", "lose")
# States whose unpicked rooms are always held out of house inventory (TENTATIVE: per setting).
BLOCK_DEDUCTING = frozenset({BlockStatus.DEFINITE, BlockStatus.ACTUAL})


# -- fiscalization -----------------------------------------------------------------------

class FiscalState(StrEnum):
    PENDING = "PENDING"                      # issued, not yet (or again) sent to the provider
    SUBMITTED = "SUBMITTED"                  # a submission is under way (its outcome unknown)
    ACCEPTED = "ACCEPTED"                    # signed/registered: signature, counter, time kept
    REJECTED = "REJECTED"                    # refused by the provider; resent by command
    CORRECTION_NEEDED = "CORRECTION_NEEDED"  # the provider asks for a correcting document


FISCAL_MACHINE = Machine(FiscalState, {
    (FiscalState.PENDING, "submit"): FiscalState.SUBMITTED,
    # a submission whose outcome was lost (the worker died): sent again with the same key
    (FiscalState.SUBMITTED, "submit"): FiscalState.SUBMITTED,
    (FiscalState.SUBMITTED, "accept"): FiscalState.ACCEPTED,
    (FiscalState.SUBMITTED, "reject"): FiscalState.REJECTED,
    (FiscalState.SUBMITTED, "correct"): FiscalState.CORRECTION_NEEDED,
    (FiscalState.SUBMITTED, "unavailable"): FiscalState.PENDING,  # retried with backoff
    (FiscalState.PENDING, "resend"): FiscalState.PENDING,
    (FiscalState.SUBMITTED, "resend"): FiscalState.SUBMITTED,
    (FiscalState.REJECTED, "resend"): FiscalState.PENDING,
    (FiscalState.CORRECTION_NEEDED, "resend"): FiscalState.PENDING,
}, name="fiscalization")
FISCAL_INITIAL = FiscalState.PENDING
