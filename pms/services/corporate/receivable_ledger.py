"""The company's receivable ledger: every amount moved to or off a company is an item.

- DIRECT_BILL (check-out): which stay, which folio, which lines, which date; positive. Its
  `open_amount` is what is still owed of it: an open item.
- PAYMENT (a remittance) and REVERSAL (a check-out reverted): negative. Their `open_amount` is
  credit not yet applied; a REVERSAL first closes what is still open of the bill it reverses,
  and only what the company had already paid of it becomes credit.
- WRITE_OFF: negative, closes (part of) one open item.

An invoice groups open DIRECT_BILL items into a numbered document (`<series>-<property
code>-<n>`, gapless per property and series: the number is taken under the sequence row's
lock), due `payment_terms_days` (the account's, env-level) after its issue date: the due date
is frozen on the invoice, later terms never move it. A credit is applied to an invoice's open
items, oldest first (`CompanyArApplication`). What is open on invoices past their due date is
`overdue` (the account read, the aging report); the aging report ages by days since billed
or, with basis=due, by days past the due date.

The account's `open_balance` and `credit_balance` (`pms.services.corporate.receivables`) stay
what the credit check reads; the items explain them: Σ open DIRECT_BILL − Σ unapplied credit ==
open_balance − credit_balance == Σ amount == the ledger's `company_receivable:<company>`.
Every change is an event of the account (`hotel:pms:company_receivable_account:*`).
"""

from __future__ import annotations

import uuid
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import peewee

from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope, unit_of_work
from pms.domain.business_date import business_date
from pms.domain.money import exact, quantize
from pms.errors import Conflict, NotFound, ValidationFailed
from pms.models import (
    CompanyArApplication,
    CompanyArItem,
    CompanyInvoice,
    CompanyInvoiceSequence,
    CompanyReceivableAccount,
)
from pms.platform.ledger import LedgerLine
from pms.schemas import companies as s
from pms.schemas.common import to_data
from pms.schemas.companies import receivable_account_out
from pms.services.cashiering import fiscal_journal
from pms.services.cashiering.folio_state import posting_row, write_with_commit
from pms.services.cashiering.ledger_postings import send_postings
from pms.services.catalog.catalog import load_property
from pms.services.corporate.companies import company_access

DIRECT_BILL, PAYMENT, REVERSAL, WRITE_OFF = "DIRECT_BILL", "PAYMENT", "REVERSAL", "WRITE_OFF"
CREDITS = (PAYMENT, REVERSAL)
WRITE_OFF_ACCOUNT = "ar_write_off"  # the ledger's expense for what the hotel gives up


class ItemNotOpen(Conflict):
    """Raised when an item or invoice has nothing left to match (or is on another invoice)."""

    code = "receivable_item_not_open"


def _money(amount: Decimal) -> str:
    return f"{amount:.2f}"


def _new(ctx: Ctx, **values: Any) -> CompanyArItem:
    item = CompanyArItem(env_id=ctx.env_id, **values)
    item.id = uuid.uuid4()
    item.save(force_insert=True)
    return item


def post_credit(uow: Any, ctx: Ctx, ledger: Any, property_id: uuid.UUID, key: str,
                currency: str, company_id: uuid.UUID, debit_account: str, amount: Decimal,
                memo: str) -> None:
    """A PENDING ledger posting that takes `amount` off the company's receivable (credit
    `company_receivable:<company>`, debit `debit_account`), sent after commit (the reconciler
    re-sends it after a crash)."""
    posting = posting_row(property_id, key, currency,
                          [LedgerLine(debit_account, debit=amount),
                           LedgerLine(f"company_receivable:{company_id}", credit=amount)], memo)
    write_with_commit(uow, posting)
    if ledger is not None:
        uow.after_commit(lambda: send_postings(ctx, ledger, [posting]))


def account_of(company_id: uuid.UUID, *, lock: bool = False) -> CompanyReceivableAccount:
    """The company's receivable account (locked when asked); NotFound without one."""
    query = CompanyReceivableAccount.select().where(
        CompanyReceivableAccount.company_profile_id == company_id)
    row = (for_update(query) if lock else query).first()
    if row is None:
        raise NotFound("this company has no receivable account")
    return row


def take_back(account: CompanyReceivableAccount, amount: Decimal) -> Decimal:
    """An amount the company no longer owes (a reversal, a write-off) comes off open_balance,
    never below zero: what it had already paid of it is held as credit_balance. Returns that
    credited part."""
    owed = Decimal(account.open_balance or 0)
    credited = max(amount - owed, Decimal(0))
    account.open_balance = owed - (amount - credited)
    account.credit_balance = Decimal(account.credit_balance or 0) + credited
    return credited


# -- the entries the existing money movements write --------------------------------------------

def bill(ctx: Ctx, company_id: uuid.UUID, reservation: Any, folio: Any, payment: Any,
         share: Decimal, lines: list[Any], today: date) -> CompanyArItem:
    """The DIRECT_BILL item of a check-out's share (inside its unit of work)."""
    return _new(ctx, company_profile_id=company_id, property_id=reservation.property_id,
                kind=DIRECT_BILL, amount=share, open_amount=share, currency=folio.currency,
                business_date=today, reservation_id=reservation.id, folio_id=folio.id,
                folio_payment_id=payment.id, reference=reservation.confirmation_number,
                lines=[{"id": str(ln.id), "category": str(ln.category),
                        "transaction_code": ln.transaction_code or "",
                        "amount": _money(Decimal(str(ln.amount)))} for ln in lines])


def reverse(ctx: Ctx, company_id: uuid.UUID, reservation: Any, paid: Any, back: Any,
            amount: Decimal, today: date) -> CompanyArItem:
    """The REVERSAL item of a reverted direct bill: it closes what is open of the bill first;
    what the company had paid of it stays as credit (the item's open_amount)."""
    billed = for_update(CompanyArItem.select().where(
        CompanyArItem.folio_payment_id == paid.id, CompanyArItem.kind == DIRECT_BILL)).first()
    closed = Decimal(0)
    if billed is not None:
        closed = min(Decimal(billed.open_amount), amount)
        billed.open_amount = Decimal(billed.open_amount) - closed
        billed.save()
    return _new(ctx, company_profile_id=company_id, property_id=reservation.property_id,
                kind=REVERSAL, amount=-amount, open_amount=amount - closed,
                currency=paid.currency, business_date=today, reservation_id=reservation.id,
                folio_id=paid.folio_id, folio_payment_id=back.id,
                of_item_id=billed.id if billed is not None else None,
                reference=reservation.confirmation_number)


def receive(uow: Any, ctx: Ctx, company_id: uuid.UUID, prop: Any, amount: Decimal,
            currency: str, reference: str, invoice_id: uuid.UUID | None) -> CompanyArItem:
    """The PAYMENT item of a remittance, held as credit; with `invoice_id` applied to it."""
    item = _new(ctx, company_profile_id=company_id, property_id=prop.id, kind=PAYMENT,
                amount=-amount, open_amount=amount, currency=currency,
                business_date=business_date(prop, ctx.now), reference=reference)
    if invoice_id is not None:
        _apply(ctx, item, _invoice(company_id, invoice_id), None)
    return item


# -- invoices ----------------------------------------------------------------------------------

def _invoice(company_id: uuid.UUID, invoice_id: uuid.UUID) -> CompanyInvoice:
    row = CompanyInvoice.get_or_none(CompanyInvoice.id == invoice_id,
                                     CompanyInvoice.company_profile_id == company_id)
    if row is None:
        raise ValidationFailed("invoice_id is not an invoice of this company",
                               code="unknown_reference",
                               errors=[{"field": "invoice_id", "message": "not found"}])
    return row


def _number(ctx: Ctx, prop: Any, series: str) -> str:
    query = CompanyInvoiceSequence.select().where(CompanyInvoiceSequence.property_id == prop.id,
                                                  CompanyInvoiceSequence.series == series)
    seq = for_update(query).first()
    if seq is None:
        CompanyInvoiceSequence.create(property_id=prop.id, series=series, last_number=0)
        seq = for_update(query).get()
    seq.last_number += 1
    seq.save()
    return f"{series}-{prop.code}-{seq.last_number:06d}"


def _invoice_out(row: CompanyInvoice) -> s.InvoiceOut:
    items = list(CompanyArItem.select().where(CompanyArItem.invoice_id == row.id)
                 .order_by(CompanyArItem.business_date, CompanyArItem.created_at))
    open_ = sum((Decimal(i.open_amount) for i in items), Decimal(0))
    q = row.currency
    return s.InvoiceOut(id=row.id, company_profile_id=row.company_profile_id,
                        property_id=row.property_id, series=row.series, number=row.number,
                        issued_on=row.issued_on, due_on=row.due_on,
                        total=quantize(Decimal(row.total), q), open_amount=quantize(open_, q),
                        currency=q, status="OPEN" if open_ > 0 else "PAID",
                        items=[item_out(i) for i in items])


def _record(uow: Any, account: CompanyReceivableAccount, event: str, data: dict[str, Any],
            property_id: uuid.UUID, before: dict[str, Any] | None = None) -> None:
    account.save()  # the account's version moves with every change of its receivable
    after = to_data(receivable_account_out(account))
    uow.record("company_receivable_account", event, account, {**after, **data},
               before=before or after, property_id=property_id)


def issue_invoice(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                  body: s.InvoiceIn) -> s.InvoiceOut:
    """Group open DIRECT_BILL items not invoiced yet into a numbered invoice (staff); the
    items named, or every such item dated up to `through_date`. Audited, with its event
    `hotel:pms:company_receivable_account:invoice_issued`.

    Raises: NotFound; ValidationFailed (422: an item not the company's); ItemNotOpen (409: an
        item closed or already invoiced, or nothing to invoice)."""
    with lock_errors(), unit_of_work(ctx) as uow:
        company_access(ctx, property_id, company_id, lock=True)
        account = account_of(company_id, lock=True)
        prop = load_property(property_id)
        query = CompanyArItem.select().where(CompanyArItem.company_profile_id == company_id,
                                             CompanyArItem.kind == DIRECT_BILL)
        if body.item_ids is not None:
            items = list(for_update(query.where(CompanyArItem.id.in_(body.item_ids))))
            if len(items) != len(set(body.item_ids)):
                raise ValidationFailed("an item is not an open item of this company",
                                       code="unknown_reference",
                                       errors=[{"field": "item_ids", "message": "not found"}])
            taken = [str(i.id) for i in items if i.invoice_id is not None or i.open_amount <= 0]
            if taken:
                raise ItemNotOpen("items already invoiced or closed", item_ids=taken)
        else:
            query = query.where(CompanyArItem.invoice_id.is_null(),
                                CompanyArItem.open_amount > 0)
            if body.through_date is not None:
                query = query.where(CompanyArItem.business_date <= body.through_date)
            items = list(for_update(query))
        items = [i for i in items if i.property_id == prop.id]
        if not items:
            raise ItemNotOpen("no open item of this property to invoice")
        today = business_date(prop, ctx.now)
        terms = account.payment_terms_days if body.due_days is None else body.due_days
        row = CompanyInvoice(env_id=ctx.env_id, company_profile_id=company_id,
                             property_id=prop.id, series=body.series,
                             number=_number(ctx, prop, body.series), issued_on=today,
                             due_on=today + timedelta(days=terms),
                             total=sum((Decimal(i.open_amount) for i in items), Decimal(0)),
                             currency=account.currency)
        row.id = uuid.uuid4()
        row.save(force_insert=True)
        fiscal_journal.append_ar_invoice(prop.id, row, now=ctx.now)  # chained like any document
        CompanyArItem.update(invoice_id=row.id).where(
            CompanyArItem.id.in_([i.id for i in items])).execute()
        out = _invoice_out(row)
        _record(uow, account, "invoice_issued",
                {"invoice_id": str(row.id), "number": row.number,
                 "total": _money(Decimal(row.total)), "due_on": row.due_on.isoformat(),
                 "item_ids": [str(i.id) for i in items]}, prop.id)
        return out


def get_invoice(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                invoice_id: uuid.UUID) -> s.InvoiceOut:
    with read_scope(ctx):
        company_access(ctx, property_id, company_id)
        row = CompanyInvoice.get_or_none(CompanyInvoice.id == invoice_id,
                                         CompanyInvoice.company_profile_id == company_id)
        if row is None:
            raise NotFound("no such invoice")
        return _invoice_out(row)


def invoice_einvoice(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                     invoice_id: uuid.UUID) -> dict[str, Any]:
    """The e-invoice document of a receivable invoice (pms.services.cashiering.einvoice
    `collective_document`): its direct bills' folio lines as their stays' invoices froze them.

    Raises: NotFound; EInvoiceNeedsStayInvoices (409)."""
    from pms.models.cashiering import Invoice
    from pms.services.cashiering import einvoice

    with read_scope(ctx):
        company_access(ctx, property_id, company_id)
        row = CompanyInvoice.get_or_none(CompanyInvoice.id == invoice_id,
                                         CompanyInvoice.company_profile_id == company_id)
        if row is None:
            raise NotFound("no such invoice")
        items = list(CompanyArItem.select().where(CompanyArItem.invoice_id == row.id,
                                                  CompanyArItem.kind == DIRECT_BILL)
                     .order_by(CompanyArItem.business_date, CompanyArItem.created_at))
        folios = {i.folio_id for i in items if i.folio_id is not None}
        stay_invoices: dict[Any, list[Any]] = {}
        for doc in (Invoice.select().where(Invoice.folio_id.in_(list(folios)),
                                           Invoice.kind == "INVOICE")
                    .order_by(Invoice.generation) if folios else ()):
            stay_invoices.setdefault(doc.folio_id, []).append(doc)
        return einvoice.collective_document(row, items, stay_invoices)


def list_invoices(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID, *, limit: int,
                  cursor: str | None) -> Page[s.InvoiceOut]:
    with read_scope(ctx):
        company_access(ctx, property_id, company_id)
        page = paginate(CompanyInvoice.select().where(
            CompanyInvoice.company_profile_id == company_id), CompanyInvoice, limit=limit,
            cursor=cursor)
        return Page(items=[_invoice_out(r) for r in page.items], next_cursor=page.next_cursor)


# -- applying credit, writing off ---------------------------------------------------------------

def _apply(ctx: Ctx, credit: CompanyArItem, invoice: CompanyInvoice,
           amount: Decimal | None) -> Decimal:
    """Apply a credit to an invoice's open items, oldest first; returns what was applied."""
    items = list(for_update(CompanyArItem.select().where(
        CompanyArItem.invoice_id == invoice.id, CompanyArItem.open_amount > 0)
        .order_by(CompanyArItem.business_date, CompanyArItem.created_at, CompanyArItem.id)))
    room = sum((Decimal(i.open_amount) for i in items), Decimal(0))
    left = min(Decimal(credit.open_amount), room)
    if amount is not None:
        if amount > left:
            raise ItemNotOpen("more than the credit or the invoice has open",
                              credit_open=_money(Decimal(credit.open_amount)),
                              invoice_open=_money(room))
        left = amount
    applied = left
    for item in items:
        if left <= 0:
            break
        take = min(Decimal(item.open_amount), left)
        item.open_amount = Decimal(item.open_amount) - take
        item.save()
        left -= take
    credit.open_amount = Decimal(credit.open_amount) - applied
    credit.save()
    if applied > 0:
        CompanyArApplication.create(company_profile_id=credit.company_profile_id,
                                    credit_item_id=credit.id, invoice_id=invoice.id,
                                    amount=applied)
    return applied


def apply_credit(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                 item_id: uuid.UUID, body: s.ApplyIn) -> s.InvoiceOut:
    """Apply a credit (a PAYMENT or REVERSAL item) to an invoice (staff). Audited, with its
    event `hotel:pms:company_receivable_account:credit_applied`. The balances do not move (the
    credit already lowered what the company owes); the open items do.

    Raises: NotFound; ValidationFailed (422); ItemNotOpen (409: no credit left, nothing open on
        the invoice, or more than either has)."""
    with lock_errors(), unit_of_work(ctx) as uow:
        company_access(ctx, property_id, company_id, lock=True)
        account = account_of(company_id, lock=True)
        credit = for_update(CompanyArItem.select().where(
            CompanyArItem.id == item_id, CompanyArItem.company_profile_id == company_id)).first()
        if credit is None:
            raise NotFound("no such receivable item")
        if credit.kind not in CREDITS or Decimal(credit.open_amount) <= 0:
            raise ItemNotOpen("this item holds no credit to apply")
        invoice = _invoice(company_id, body.invoice_id)
        amount = None if body.amount is None else exact(body.amount, credit.currency, "amount")
        applied = _apply(ctx, credit, invoice, amount)
        if applied <= 0:
            raise ItemNotOpen("nothing is open on this invoice")
        _record(uow, account, "credit_applied",
                {"item_id": str(credit.id), "invoice_id": str(invoice.id),
                 "amount": _money(applied)}, invoice.property_id)
        return _invoice_out(invoice)


def write_off(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID, body: s.WriteOffIn, *,
              ledger: Any = None) -> s.ArItemOut:
    """Write off (part of) an open DIRECT_BILL item (staff): a WRITE_OFF item, the account's
    open_balance lower (`take_back`), a ledger posting (debit `ar_write_off`, credit the
    company's receivable). Audited, with its event
    `hotel:pms:company_receivable_account:written_off`.

    Raises: NotFound; ValidationFailed (422); ItemNotOpen (409: more than is open of it)."""
    with lock_errors(), unit_of_work(ctx) as uow:
        company_access(ctx, property_id, company_id, lock=True)
        account = account_of(company_id, lock=True)
        prop = load_property(property_id)
        target = for_update(CompanyArItem.select().where(
            CompanyArItem.id == body.item_id, CompanyArItem.company_profile_id == company_id,
            CompanyArItem.kind == DIRECT_BILL)).first()
        if target is None:
            raise ValidationFailed("item_id is not a direct bill of this company",
                                   code="unknown_reference",
                                   errors=[{"field": "item_id", "message": "not found"}])
        amount = exact(body.amount, target.currency, "amount")
        if amount <= 0 or amount > Decimal(target.open_amount):
            raise ItemNotOpen("a write-off is more than zero and at most what is open",
                              open_amount=_money(Decimal(target.open_amount)))
        target.open_amount = Decimal(target.open_amount) - amount
        target.save()
        item = _new(ctx, company_profile_id=company_id, property_id=prop.id, kind=WRITE_OFF,
                    amount=-amount, open_amount=0, currency=target.currency,
                    business_date=business_date(prop, ctx.now), of_item_id=target.id,
                    reservation_id=target.reservation_id, invoice_id=target.invoice_id,
                    reference=body.reason)
        post_credit(uow, ctx, ledger, prop.id, f"receivable-write-off:{item.id}",
                    target.currency, company_id, WRITE_OFF_ACCOUNT, amount,
                    f"Write-off {target.reference or ''}")
        before = to_data(receivable_account_out(account))
        credited = take_back(account, amount)
        _record(uow, account, "written_off",
                {"item_id": str(item.id), "of_item_id": str(target.id),
                 "amount": _money(amount), "credited": _money(credited),
                 "reason": body.reason}, prop.id, before)
        return item_out(item)


# -- reads: the items, aging, the statement ---------------------------------------------------

def item_out(row: CompanyArItem) -> s.ArItemOut:
    q = row.currency
    return s.ArItemOut(id=row.id, company_profile_id=row.company_profile_id,
                       property_id=row.property_id, kind=row.kind,
                       amount=quantize(Decimal(row.amount), q),
                       open_amount=quantize(Decimal(row.open_amount), q), currency=q,
                       business_date=row.business_date, reservation_id=row.reservation_id,
                       folio_id=row.folio_id, lines=row.lines, of_item_id=row.of_item_id,
                       invoice_id=row.invoice_id, reference=row.reference,
                       created_at=row.created_at)


def list_items(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID, *, open_only: bool,
               limit: int, cursor: str | None) -> Page[s.ArItemOut]:
    with read_scope(ctx):
        company_access(ctx, property_id, company_id)
        query = CompanyArItem.select().where(CompanyArItem.company_profile_id == company_id)
        if open_only:
            query = query.where(CompanyArItem.open_amount > 0)
        page = paginate(query, CompanyArItem, limit=limit, cursor=cursor)
        return Page(items=[item_out(r) for r in page.items], next_cursor=page.next_cursor)


BUCKETS = ((90, "days_90_plus"), (60, "days_60"), (30, "days_30"), (0, "current"))
# (name, from, to): days since billed; days past the due date (OPERA AR's overdue buckets)
BILLED_BUCKETS = (("current", 0, 29), ("days_30", 30, 59), ("days_60", 60, 89),
                  ("days_90_plus", 90, None))
DUE_BUCKETS = (("current", 0, 0), ("days_1_30", 1, 30), ("days_31_60", 31, 60),
               ("days_61_90", 61, 90), ("days_90_plus", 91, None))


def _bucket(table: tuple[tuple[str, int, int | None], ...], age: int) -> str:
    """The bucket of an age in days (an age under the first bucket's floor: the first)."""
    return next((name for name, low, high in table if low <= age and (high is None
                                                                       or age <= high)),
                table[0][0])


def _open_bills(company_id: uuid.UUID) -> list[tuple[str, date, Decimal, date | None,
                                                      uuid.UUID | None]]:
    """(kind, business date, open amount, due date of its invoice, its invoice's property)
    of the company's items with something open."""
    return [(kind, dated, Decimal(open_), due, where) for kind, dated, open_, due, where in (
        CompanyArItem.select(CompanyArItem.kind, CompanyArItem.business_date,
                             CompanyArItem.open_amount, CompanyInvoice.due_on,
                             CompanyInvoice.property_id)
        .join(CompanyInvoice, peewee.JOIN.LEFT_OUTER,
              on=(CompanyInvoice.id == CompanyArItem.invoice_id))
        .where(CompanyArItem.company_profile_id == company_id, CompanyArItem.open_amount > 0)
        .tuples())]


def overdue(ctx: Ctx, company_id: uuid.UUID) -> Decimal:
    """What is open on the company's invoices past their due date, each as of its property's
    business date (call inside a scope)."""
    today: dict[uuid.UUID, date] = {}
    total = Decimal(0)
    for kind, _, open_, due, where in _open_bills(company_id):
        if kind in CREDITS or due is None or where is None:
            continue
        if where not in today:
            today[where] = business_date(load_property(where), ctx.now)
        if due < today[where]:
            total += open_
    return total


def aging(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
          as_of: date | None, basis: str = "billed") -> s.AgingOut:
    """Open DIRECT_BILL items by days since billed (as of the property's business date by
    default), and the credit not yet applied; `buckets` by `basis`: billed (the same), due
    (days past the due date of the item's invoice: current is not yet due, an item not
    invoiced yet has no due date and is current)."""
    with read_scope(ctx):
        company_access(ctx, property_id, company_id)
        account = account_of(company_id)
        day = as_of or business_date(load_property(property_id), ctx.now)
        table = DUE_BUCKETS if basis == "due" else BILLED_BUCKETS
        flat = {name: Decimal(0) for _, name in BUCKETS}
        by_basis = {name: Decimal(0) for name, _, _ in table}
        credit = late = Decimal(0)
        for kind, dated, open_, due, _ in _open_bills(company_id):
            if kind in CREDITS:
                credit += open_
                continue
            age = (day - dated).days
            flat[next(n for floor, n in BUCKETS if age >= floor or floor == 0)] += open_
            past_due = 0 if due is None else (day - due).days
            late += open_ if past_due > 0 else Decimal(0)
            by_basis[_bucket(table, past_due if basis == "due" else age)] += open_
        q = account.currency
        total = sum(flat.values(), Decimal(0))
        return s.AgingOut(company_profile_id=company_id, as_of=day, currency=q,
                          **{k: quantize(v, q) for k, v in flat.items()},
                          total_open=quantize(total, q), unapplied_credit=quantize(credit, q),
                          net=quantize(total - credit, q), basis=basis,
                          buckets=[s.AgingBucket(name=name, from_days=low, to_days=high,
                                                 amount=quantize(by_basis[name], q))
                                   for name, low, high in table],
                          overdue=quantize(late, q))


def statement(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
              from_date: date | None, to_date: date | None) -> s.StatementOut:
    """Every entry dated in the period, oldest first, with the running balance."""
    with read_scope(ctx):
        company_access(ctx, property_id, company_id)
        account = account_of(company_id)
        q = account.currency
        base = CompanyArItem.select().where(CompanyArItem.company_profile_id == company_id)
        opening = Decimal(0)
        if from_date is not None:
            opening = Decimal(base.where(CompanyArItem.business_date < from_date).select(
                peewee.fn.SUM(CompanyArItem.amount)).scalar() or 0)
            base = base.where(CompanyArItem.business_date >= from_date)
        if to_date is not None:
            base = base.where(CompanyArItem.business_date <= to_date)
        numbers = {i.id: (i.number, i.due_on) for i in CompanyInvoice.select(
            CompanyInvoice.id, CompanyInvoice.number, CompanyInvoice.due_on).where(
            CompanyInvoice.company_profile_id == company_id)}
        running, lines = opening, []
        for item in base.order_by(CompanyArItem.business_date, CompanyArItem.created_at,
                                  CompanyArItem.id):
            running += Decimal(item.amount)
            lines.append(s.StatementLine(
                business_date=item.business_date, kind=item.kind, item_id=item.id,
                amount=quantize(Decimal(item.amount), q), balance=quantize(running, q),
                reference=item.reference, reservation_id=item.reservation_id,
                invoice_number=numbers.get(item.invoice_id, (None, None))[0],
                due_on=numbers.get(item.invoice_id, (None, None))[1]))
        return s.StatementOut(company_profile_id=company_id, currency=q, from_date=from_date,
                              to_date=to_date, opening_balance=quantize(opening, q),
                              lines=lines, closing_balance=quantize(running, q))
