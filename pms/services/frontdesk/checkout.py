"""Check-out: end an early stay on the business date, post the room nights not yet charged,
refuse while the folio has a balance (409 folio_not_closable: the guest is sent to the desk;
409 folio_credit_balance: refund the credit first), otherwise close the folio, run the check-out
hooks (`CHECK_OUT_HOOKS`, one visible list), free the room and mark it dirty. All in one unit of work.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import partial
from typing import Any

from pms.context import Ctx
from pms.db.locking import lock_errors
from pms.db.uow import UnitOfWork, unit_of_work
from pms.domain.states import RESERVATION_MACHINE, ROOM_MACHINE
from pms.models import Reservation
from pms.schemas import reservations as s
from pms.schemas.common import to_data
from pms.services.cashiering import departure_documents, invoices
from pms.services.cashiering.folios import last_night_due, settle_for_check_out
from pms.services.corporate import company_direct_bill
from pms.services.frontdesk import desk_writes, stay_reads
from pms.services.keys import stay_hooks
from pms.services.kiosk import kiosk_sessions
from pms.services.reservations import stays
from pms.services.reservations.reservations import record
from pms.services.reservations.stays import mark_dirty, shorten_stay

CheckOutHook = Callable[[UnitOfWork, Reservation], None]

# The work every check-out does besides its own, inside its transaction, listed here and nowhere
# else: no registry filled by import side effects, and no import attempted (and an ImportError
# swallowed) on each call, which would silently switch off a security step such as revoking the
# stay's digital keys. A capability that must run at check-out adds its hook to this tuple;
# callers and tests may pass their own `hooks`. The digital keys' hook revokes every live key of
# the stay (ACTIVE and INACTIVE) in the check-out's transaction.
CHECK_OUT_HOOKS: tuple[CheckOutHook, ...] = (stay_hooks.check_out_hook,
                                              departure_documents.check_out_hook)

# The work a revert of a check-out does besides its own: a direct bill moved to the
# company's receivable account goes back (the ledger posting reversed through the outbox).
REVERT_CHECK_OUT_HOOKS: tuple[Callable[..., None], ...] = (
    company_direct_bill.reverse_direct_bill,)


def revert(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID, body: s.RevertIn, *,
           ledger: Any = None) -> Reservation:
    """`pms.services.reservations.stays.revert` with the front desk's check-out revert hooks
    (`REVERT_CHECK_OUT_HOOKS`; `ledger`: the client the reversed postings are sent with after
    commit, else the reconciler sends them), then the credit note that cancels the invoice of
    the folio the revert reopens (with the revert's reason)."""
    return stays.revert(ctx, property_id, reservation_id, body, check_out_hooks=[
        *(partial(hook, ledger=ledger) for hook in REVERT_CHECK_OUT_HOOKS),
        partial(invoices.credit_reverted_check_out, reason=body.reason)])


def check_out(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID, *,
              hooks: Sequence[CheckOutHook] = CHECK_OUT_HOOKS, payments: Any = None,
              ledger: Any = None, payment_method_id: str | None = None) -> Reservation:
    """Check a CHECKED_IN guest out.

    Args:
        hooks: run in order inside the check-out's unit of work (default `CHECK_OUT_HOOKS`);
            an exception from one rolls the whole check-out back.
        payments, ledger: the platform clients the settlement of a stay billed to a company
            uses after commit (`company_direct_bill.settle_at_check_out`; without them
            the PENDING rows wait for the reconcilers).

    A stay billed to a company settles the company's share first (BILL_TO_COMPANY: moved to
    its receivable account, 409 credit_limit_exceeded over its limit; POSTPAY: its card
    charged after commit); the guest's part must be paid as for any stay.

    An early check-out (before the booked departure) ends the stay on the business date: the
    departure, nights, nightly prices and totals are cut to the nights stayed (at least one),
    and the unused nights go back to inventory, so the night audit counts the departure.

    PERF: the reservation, its room, then its folios are locked (the order of
    check-in and revert) and the folios read, with the business date, in one statement on
    PostgreSQL (pms.services.frontdesk.stay_reads); the room-night lines, the ledger posting, the folios' closing,
    the room's vacate and the released holds go with the COMMIT on PostgreSQL (nothing in the
    check-out, hooks included, reads them back).

    Raises:
        NotFound. InvalidTransition (409): not CHECKED_IN.
        KioskLocked, KioskModeDisabled (409), KioskSessionInvalid (403): a kiosk token
            without CHECK_OUT or without its session for this stay.
        A kiosk token first pays what the guest owes (pms.services.kiosk.kiosk_folio:
            the stay's AUTHORIZED pre-authorization captured, or `payment_method_id`
            charged; 402 payment_declined naming the desk, 409 company_billed_stay), and
            its session ends with the check-out.
        FolioNotClosable (409 folio_not_closable, with `balance` and `currency`): the folio,
            including the room nights posted now, has a balance; nothing is written.
            (409 folio_credit_balance: the folio holds a credit; refund it first.)
    """
    kiosk = kiosk_sessions.is_kiosk(ctx)
    if kiosk:  # the kiosk's payment loop (SPEC rule 8), each step its own transaction
        from pms.services.kiosk import kiosk_folio

        kiosk_folio.settle_before_check_out(ctx, property_id, reservation_id,
                                            payments=payments, ledger=ledger,
                                            payment_method_id=payment_method_id)
    with lock_errors(), unit_of_work(ctx) as uow:
        kiosk_sessions.admit(ctx, property_id, reservation_id, kiosk_sessions.CHECK_OUT)
        # the stay, its room (read for the "before" image anyway) and its folios, locked
        row, today, room, state = stay_reads.check_out_read(uow, ctx, property_id,
                                                            reservation_id)
        status = RESERVATION_MACHINE.transition(row.status, "check_out")
        if room is not None:
            row.room = room
        before = to_data(s.reservation_out(row))
        row.__rel__.pop("room", None)  # (the row saves by its compiled statement: no relations)
        last_night = last_night_due(row, today)
        if last_night + timedelta(days=1) < row.departure_date:
            shorten_stay(row, last_night + timedelta(days=1))
        settle_for_check_out(uow, row, last_night, today=today, now=ctx.now, state=state,
                             settle=partial(company_direct_bill.settle_at_check_out,
                                            payments=payments, ledger=ledger))
        for hook in hooks:
            hook(uow, row)
        if room is not None:
            room.status = ROOM_MACHINE.transition(room.status, "vacate").value
            mark_dirty(room)
        desk_writes.vacate(uow, row, room, ctx.now)
        row.status = status.value
        row.checked_out_at = ctx.now
        row.checked_out_business_date = today
        uow.save(row)
        if room is not None:
            row.room = room  # (the answer reads its number without a query)
        record(uow, row, "checked_out", before=before)
        if kiosk:  # the stay is over: so is the terminal's session for it
            kiosk_sessions.end_session(ctx, property_id)
    return row

