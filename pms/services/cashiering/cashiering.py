"""Cashiering use cases on a folio: post a charge by transaction code (with its tax lines),
correct a line (reversal lines, never an edit or a delete), move a line to another open folio of
the stay, grant an allowance, open an extra folio for split billing, and issue the numbered
invoice of a closed folio.

Each is one unit of work that locks the folio row first (so a concurrent check-out either sees
the new line or the poster sees the folio CLOSED: 409 folio_closed), writes the lines, a PENDING
ledger posting, one outbox event and one audit row. The ledger is called after commit.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from pms import wiring
from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.money import exact, quantize
from pms.domain.states import FOLIO_INITIAL, FolioStatus, ReservationStatus
from pms.domain.tax import split_taxes
from pms.errors import Conflict, FolioClosed, NotFound, ValidationFailed
from pms.models import Folio, FolioCharge, Property, Reservation
from pms.models.cashiering import LedgerPosting, TransactionCode
from pms.schemas import cashiering as cs
from pms.schemas.common import to_data
from pms.schemas.folios import FolioOut
from pms.services.cashiering.folio_state import (
    FolioState,
    posting_row,
    read_state,
    write_with_commit,
)
from pms.services.cashiering.folios import render, render_state
from pms.services.cashiering.ledger_postings import (
    CATEGORY_ACCOUNTS,
    record_posting,
    revenue_lines,
    send_postings,
)
from pms.services.cashiering.transaction_codes import load_code, rules_of, unknown_code
from pms.services.corporate import company_billing
from pms.services.references import body_reference
from pms.services.reservations.reservations import business_date

REVERSIBLE = ("charge", "room", "package", "no_show", "allowance")
MAX_AMOUNT = Decimal("1000000")

class ChargeAlreadyReversed(Conflict):
    """Raised when correcting or moving a line that was reversed already."""

    code = "charge_already_reversed"


def load_folio(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID, *,
               lock: bool = False) -> Folio:
    """The property's folio (guest sessions: only their own stay's), else NotFound.

    With `lock`, the stay's reservation row is locked first and then the folio row: the order
    check-out takes them in, so a posting and a check-out serialize instead of deadlocking (a
    charge's foreign key would otherwise wait on the reservation check-out holds).
    """
    query = Folio.select().where((Folio.id == folio_id) & (Folio.property == property_id))
    if ctx.holder_id is not None:
        query = (query.join(Reservation, on=(Folio.reservation == Reservation.id))
                 .where(Reservation.guest_profile == ctx.holder_id))
    row = query.first()
    if row is None:
        raise NotFound("no such folio")
    if lock:
        if row.reservation_id is not None:  # (a block's master folio has no stay)
            for_update(Reservation.select(Reservation.id).where(
                Reservation.id == row.reservation_id)).first()
        row = for_update(Folio.select().where(Folio.id == row.id)).get()
    return row


def require_open(folio: Folio) -> None:
    if folio.status != FolioStatus.OPEN:
        raise FolioClosed("the folio is closed and accepts no posting", folio_id=str(folio.id))


def check_amount(amount: Decimal, field: str = "amount") -> None:
    if not amount.is_finite() or amount <= 0 or amount > MAX_AMOUNT:
        raise ValidationFailed(f"{field} must be a positive amount up to {MAX_AMOUNT}",
                               errors=[{"field": field, "message": "must be > 0"}])


def get_folio(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID) -> FolioOut:
    """One folio with its lines, payments and balance. Raises NotFound."""
    with read_scope(ctx):
        return render(load_folio(ctx, property_id, folio_id), now=ctx.now)


def list_stay_folios(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID
                     ) -> list[FolioOut]:
    """Every folio of a stay (guest folio first). Raises NotFound."""
    from pms.services.reservations.reservations import load_reservation

    with read_scope(ctx):
        res = load_reservation(ctx, property_id, reservation_id)
        rows = Folio.select().where(Folio.reservation == res.id).order_by(
            (Folio.folio_type == "GUEST").desc(), Folio.created_at)
        return [render(f, now=ctx.now) for f in rows]


def record_change(uow: UnitOfWork, folio: Folio, action: str, *,
                  reason: str | None = None, state: FolioState | None = None) -> FolioOut:
    """The one audit row and the one outbox row of a folio change (rendered from `state` when
    the caller holds one: nothing read again)."""
    out = render_state(state) if state is not None else render(folio, now=uow.ctx.now)
    uow.record("folio", action, folio, to_data(out), reason=reason, property_id=folio.property_id)
    return out


def _today(folio: Folio, ctx: Ctx) -> Any:
    return business_date(Property.get_by_id(folio.property_id), ctx.now)


def _insert_lines(folio: Folio, ctx: Ctx, code: TransactionCode | None, gross: Decimal, *,
                  quantity: int, description: str, kind: str, category: str,
                  reversal_of: FolioCharge | None = None, reason: str | None = None,
                  moved_from: uuid.UUID | None = None) -> list[FolioCharge]:
    """A charge line and its tax lines for `gross` (negative for allowances)."""
    cur = folio.currency
    rules = rules_of(code) if code is not None else []
    split = split_taxes(gross, rules, cur, quantity=quantity)
    today = _today(folio, ctx)
    main = FolioCharge.create(
        folio=folio.id, reservation=folio.reservation_id, property_id=folio.property_id, category=category,
        description=description[:200], amount=split.net, currency=cur, quantity=quantity,
        business_date=today, kind=kind, transaction_code=code.code if code else None,
        reversal_of=reversal_of.id if reversal_of else None, reason=reason,
        moved_from_folio=moved_from)
    taxes = [FolioCharge.create(
        folio=folio.id, reservation=folio.reservation_id, property_id=folio.property_id, category="tax",
        description=(t.name or t.code)[:200], amount=t.amount, currency=cur, quantity=1,
        business_date=today, kind="tax", transaction_code=t.code, parent_id=main.id,
        reason=reason, moved_from_folio=moved_from) for t in split.taxes]
    return [main, *taxes]


def _ledger(folio: Folio, lines: list[FolioCharge], key: str, memo: str,
            account: str | None) -> uuid.UUID | None:
    amounts: dict[str, Decimal] = {}
    for line in lines:
        acct = CATEGORY_ACCOUNTS["tax"] if line.kind == "tax" else (
            account or CATEGORY_ACCOUNTS.get(line.category, "other_revenue"))
        amounts[acct] = amounts.get(acct, Decimal(0)) + Decimal(str(line.amount))
    row = record_posting(folio.property_id, key, folio.currency, revenue_lines(amounts), memo)
    return row.id if row is not None else None


def post_lines_with_tax(folio: Folio, ctx: Ctx, code: TransactionCode | None, gross: Decimal,
                        *, quantity: int, description: str, kind: str, category: str,
                        reason: str | None, ledger_key: str, memo: str) -> list[FolioCharge]:
    """Post `gross` (negative for an allowance) to an open folio the caller holds locked,
    inside the caller's unit of work: the charge line and its tax lines by the code's tax
    rules, and their ledger posting keyed `<ledger_key>:<the charge line's id>`. For a use case
    of another package that bills a folio (a banquet event's resources); the caller records
    the folio's change (`record_change`) once its lines are all posted."""
    lines = _insert_lines(folio, ctx, code, gross, quantity=quantity, description=description,
                          kind=kind, category=category, reason=reason)
    _ledger(folio, lines, f"{ledger_key}:{lines[0].id}", memo,
            code.ledger_account if code else None)
    return lines


def send_posting_after_commit(uow: UnitOfWork, ledger: Any, posting: Any) -> None:
    """Send the change's posting (its id, or the row written with the commit) after commit."""
    if posting is not None and ledger is not None:
        ctx = uow.ctx
        uow.after_commit(lambda: send_postings(ctx, ledger, [posting]))


def post_charge(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID, body: cs.ChargeIn, *,
                ledger: Any = None) -> FolioOut:
    """Post a charge by transaction code; taxes become their own lines.

    One locked read of the folio (the stay's reservation and the folio locked first, then the
    folio's lines and the transaction code), the lines, the PENDING ledger posting, the audit
    and outbox rows written with the COMMIT (pms.services.cashiering.folio_state).

    Raises:
        NotFound. FolioClosed (409 folio_closed). ValidationFailed: unknown code, bad amount.
    """
    check_amount(body.amount)
    with lock_errors(), unit_of_work(ctx) as uow:
        state = read_state(folio_id, now=ctx.now, property_id=property_id,
                           holder_id=ctx.holder_id, lock=True, code=body.transaction_code)
        folio = state.folio
        require_open(folio)
        pause = wiring.current().pause_after_open_check
        if pause is not None:  # TEST-ONLY: widen the window a concurrent check-out would need
            pause()
        code = state.code
        if code is None:
            raise unknown_code(body.transaction_code)
        gross = quantize(exact(body.amount, folio.currency) * body.quantity, folio.currency)
        lines = _new_lines(folio, state.today, code, gross, quantity=body.quantity,
                           description=body.description or code.name, kind="charge",
                           category=code.category)
        before = state.balance()
        company_billing.check_charge(ctx, folio, before,
                                     before + sum((Decimal(x.amount) for x in lines), Decimal(0)),
                                     lines=lines)
        for line in lines:
            write_with_commit(uow, line)
        state.add_charges(lines)
        posting = _posting(folio, lines, f"charge:{lines[0].id}", f"{code.code} {folio.id}",
                           code.ledger_account)
        if posting is not None:
            write_with_commit(uow, posting)
        out = record_change(uow, folio, "charge_posted", state=state)
        send_posting_after_commit(uow, ledger, posting)
    return out


def _new_lines(folio: Folio, today: Any, code: Any, gross: Decimal, *, quantity: int,
               description: str, kind: str, category: str) -> list[FolioCharge]:
    """A charge line and its tax lines for `gross`, built (not inserted)."""
    cur = folio.currency
    split = split_taxes(gross, rules_of(code), cur, quantity=quantity)
    main = FolioCharge(
        folio=folio.id, reservation=folio.reservation_id, property_id=folio.property_id,
        category=category, description=description[:200], amount=split.net, currency=cur,
        quantity=quantity, business_date=today, kind=kind, transaction_code=code.code)
    main.id = uuid.uuid4()
    taxes = []
    for t in split.taxes:
        tax = FolioCharge(
            folio=folio.id, reservation=folio.reservation_id, property_id=folio.property_id,
            category="tax", description=(t.name or t.code)[:200], amount=t.amount, currency=cur,
            quantity=1, business_date=today, kind="tax", transaction_code=t.code,
            parent_id=main.id)
        tax.id = uuid.uuid4()
        taxes.append(tax)
    return [main, *taxes]


def _posting(folio: Folio, lines: list[FolioCharge], key: str, memo: str,
             account: str | None) -> LedgerPosting | None:
    """`_ledger`'s posting, built (not inserted)."""
    amounts: dict[str, Decimal] = {}
    for line in lines:
        acct = CATEGORY_ACCOUNTS["tax"] if line.kind == "tax" else (
            account or CATEGORY_ACCOUNTS.get(line.category, "other_revenue"))
        amounts[acct] = amounts.get(acct, Decimal(0)) + Decimal(str(line.amount))
    return posting_row(folio.property_id, key, folio.currency, revenue_lines(amounts), memo)


def _reversible(folio: Folio, charge_id: uuid.UUID) -> tuple[FolioCharge, list[FolioCharge]]:
    charge = FolioCharge.select().where((FolioCharge.id == charge_id)
                                        & (FolioCharge.folio == folio.id)).first()
    if charge is None:
        raise NotFound("no such charge on this folio")
    if charge.kind not in REVERSIBLE or charge.reversal_of is not None:
        raise ValidationFailed("only charge lines can be corrected (tax lines follow their charge)",
                               errors=[{"field": "charge_id", "message": "not a charge line"}])
    if FolioCharge.select().where(FolioCharge.reversal_of == charge.id).exists():
        raise ChargeAlreadyReversed("the charge was corrected or moved already")
    taxes = list(FolioCharge.select().where(FolioCharge.parent_id == charge.id))
    return charge, taxes


def _reverse(folio: Folio, ctx: Ctx, charge: FolioCharge, taxes: list[FolioCharge],
             reason: str) -> list[FolioCharge]:
    today = _today(folio, ctx)
    main = FolioCharge.create(
        folio=folio.id, reservation=folio.reservation_id, property_id=folio.property_id, category=charge.category,
        description=f"Correction: {charge.description}"[:200], amount=-charge.amount,
        currency=charge.currency, quantity=charge.quantity, business_date=today,
        kind="correction", transaction_code=charge.transaction_code, reversal_of=charge.id,
        reason=reason)
    out = [main]
    for tax in taxes:
        out.append(FolioCharge.create(
            folio=folio.id, reservation=folio.reservation_id, property_id=folio.property_id, category="tax",
            description=f"Correction: {tax.description}"[:200], amount=-tax.amount,
            currency=tax.currency, quantity=1, business_date=today, kind="tax",
            transaction_code=tax.transaction_code, parent_id=main.id, reversal_of=tax.id,
            reason=reason))
    return out


def correct_charge(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID,
                   charge_id: uuid.UUID, body: cs.CorrectionIn, *, ledger: Any = None
                   ) -> FolioOut:
    """Reverse a charge line and its taxes with negative lines (reason kept).

    Raises:
        NotFound. FolioClosed. ValidationFailed: not a charge line.
        ChargeAlreadyReversed (409 charge_already_reversed).
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        folio = load_folio(ctx, property_id, folio_id, lock=True)
        require_open(folio)
        charge, taxes = _reversible(folio, charge_id)
        lines = _reverse(folio, ctx, charge, taxes, body.reason)
        posting = _ledger(folio, [ln for ln in lines], f"correction:{charge.id}",
                          f"correction {charge.id}", None)
        out = record_change(uow, folio, "charge_corrected", reason=body.reason)
        send_posting_after_commit(uow, ledger, posting)
    return out


def move_charge(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID, charge_id: uuid.UUID,
                body: cs.MoveChargeIn) -> FolioOut:
    """Move a charge (with its taxes) to another open folio of the same stay (or block): reversal
    lines on this folio, copies on the target. Revenue is unchanged, so no ledger movement.

    Raises:
        NotFound. FolioClosed (either folio). ValidationFailed: same folio or another stay.
        ChargeAlreadyReversed.
    """
    if body.target_folio_id == folio_id:
        raise ValidationFailed("the target folio is this folio",
                               errors=[{"field": "target_folio_id", "message": "same folio"}])
    with lock_errors(), unit_of_work(ctx) as uow:
        first, second = sorted([folio_id, body.target_folio_id], key=str)
        locked = {}
        unknown_target = None
        for folio_key in (first, second):  # in id order (lock order); the target is the body's
            try:
                locked[folio_key] = load_folio(ctx, property_id, folio_key, lock=True)
            except NotFound as exc:
                if folio_key != body.target_folio_id:
                    raise
                unknown_target = exc  # the path's folio answers first (404), then the body's
        if unknown_target is not None:
            with body_reference("target_folio_id", "no such folio"):
                raise unknown_target
        folio, target = locked[folio_id], locked[body.target_folio_id]
        require_open(folio)
        require_open(target)
        if (target.reservation_id, target.block_id) != (folio.reservation_id, folio.block_id):
            raise ValidationFailed("charges move only between folios of the same stay",
                                   errors=[{"field": "target_folio_id",
                                            "message": "another stay's folio"}])
        charge, taxes = _reversible(folio, charge_id)
        reason = f"moved to folio {target.id}"
        _reverse(folio, ctx, charge, taxes, reason)
        today = _today(folio, ctx)
        copy = FolioCharge.create(
            folio=target.id, reservation=target.reservation_id, property_id=target.property_id, category=charge.category,
            description=charge.description, amount=charge.amount, currency=charge.currency,
            quantity=charge.quantity, business_date=today, kind=charge.kind,
            transaction_code=charge.transaction_code, night=None, moved_from_folio=folio.id,
            reason=f"moved from folio {folio.id}")
        for tax in taxes:
            FolioCharge.create(
                folio=target.id, reservation=target.reservation_id, property_id=target.property_id, category="tax",
                description=tax.description, amount=tax.amount, currency=tax.currency,
                quantity=1, business_date=today, kind="tax", transaction_code=tax.transaction_code,
                parent_id=copy.id, moved_from_folio=folio.id)
        out = record_change(uow, folio, "charge_moved", reason=reason)
    return out


def post_allowance(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID,
                   body: cs.AllowanceIn, *, ledger: Any = None) -> FolioOut:
    """A credit against a transaction code (its taxes reversed in proportion).

    Raises:
        NotFound. FolioClosed. ValidationFailed: unknown code, bad amount.
    """
    check_amount(body.amount)
    with lock_errors(), unit_of_work(ctx) as uow:
        folio = load_folio(ctx, property_id, folio_id, lock=True)
        require_open(folio)
        code = load_code(property_id, body.transaction_code)
        lines = _insert_lines(folio, ctx, code, -exact(body.amount, folio.currency),
                              quantity=1, description=f"Allowance: {code.name}",
                              kind="allowance", category=code.category, reason=body.reason)
        posting = _ledger(folio, lines, f"allowance:{lines[0].id}", f"allowance {folio.id}",
                          code.ledger_account)
        out = record_change(uow, folio, "allowance_posted", reason=body.reason)
        send_posting_after_commit(uow, ledger, posting)
    return out


def open_extra_folio(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID,
                     body: cs.ExtraFolioIn) -> FolioOut:
    """Open an extra folio of a stay for split billing.

    Raises:
        NotFound. Conflict (409 invalid_transition): the stay is over (checked out, cancelled,
            no-show).
    """
    from pms.services.reservations.reservations import load_reservation

    with lock_errors(), unit_of_work(ctx) as uow:
        res = load_reservation(ctx, property_id, reservation_id, lock=True)
        if res.status not in (ReservationStatus.CONFIRMED, ReservationStatus.CHECKED_IN):
            raise Conflict(f"a {res.status} stay gets no new folio", code="invalid_transition")
        folio = Folio.create(reservation=res.id, property=res.property_id,
                             room_number=None, status=FOLIO_INITIAL.value,
                             folio_type=body.folio_type, currency=res.currency)
        out = record_change(uow, folio, "created")
    return out
