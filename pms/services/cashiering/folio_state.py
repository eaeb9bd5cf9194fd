"""A folio as one read: the folio row, its stay, the property's business date,
its charge and payment lines, the stay's room nights already posted, the property's room
transaction code and the packages of the stay's rate plan, and (for a charge) the transaction
code asked for. Rendering (`pms.services.cashiering.folios.render_state`), balances and the projected room
nights are computed from it, with lines written in the same unit of work appended in Python,
so a folio change needs no read after its writes.

PostgreSQL: one round trip, the PL/pgSQL function `pms_folio_state` (migration 016; the
server keeps its plans per connection, where the inline statement was planned again on every
call), called through compiled statements (`pms.db.statements.Statement`; lines come back as
JSON arrays, amounts as text). A locked read has the function lock, in the order every folio
writer takes them (check-out included), the stay's reservation row, then the folio row, then
read the state: the function is VOLATILE, so each of its statements gets its own snapshot
(READ COMMITTED), and the lines read after the locks include every change committed before
they were granted. SQLite: the same state read through peewee (the write transaction holds the
database lock).
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import msgspec

from pms.db.dialect import fast_path
from pms.db.locking import locking_enabled
from pms.db.statements import Statement
from pms.domain.business_date import business_date
from pms.domain.money import quantize
from pms.errors import NotFound

if TYPE_CHECKING:
    from pms.context import Ctx
    from pms.models.cashiering import FolioPayment

CAPTURED = "CAPTURED"
ROOM_KIND = "room"


class Row:
    """A line or reference read as a tuple, with attribute access (what the renderers read)."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)


@dataclass
class FolioState:
    folio: Any                      # pms.models.Folio (the subject of the folio's events)
    today: date                     # the property's business date
    stay: Any                       # the reservation's fields the folio rules read
    charges: list[Any]
    payments: list[Any]
    posted_nights: set[date]        # the stay's room nights already charged (any folio)
    room_code: Any | None           # the property's room transaction code (code, tax_rules)
    packages: list[Any]             # the packages of the stay's rate plan, in plan order
    code: Any | None = None         # the transaction code asked for (a charge), if active
    # the stay's other OPEN folios (id, currency, property_id, balance), for the check-out of
    # a guest folio (read with `others=True`)
    others: list[Any] = field(default_factory=list)

    def add_charges(self, lines: list[Any]) -> None:
        """Lines written in this unit of work (kept in the folio's order: created_at, id)."""
        self.charges = sorted([*self.charges, *lines], key=_line_order)

    def add_payment(self, payment: Any) -> None:
        self.payments = sorted([*self.payments, payment], key=_line_order)

    def replace_payment(self, payment: Any) -> None:
        self.payments = [payment if p.id == payment.id else p for p in self.payments]

    def totals(self) -> tuple[Decimal, Decimal]:
        """(sum of charges, sum of captured payments), as `pms.services.cashiering.folios.totals`."""
        cur = self.folio.currency
        charges = sum((Decimal(str(c.amount)) for c in self.charges), Decimal(0))
        payments = sum((Decimal(str(p.amount)) for p in self.payments if p.status == CAPTURED),
                       Decimal(0))
        return quantize(charges, cur), quantize(payments, cur)

    def balance(self) -> Decimal:
        charges, payments = self.totals()
        return charges - payments


def _line_order(line: Any) -> tuple[Any, ...]:
    return (line.created_at, line.id.int if isinstance(line.id, uuid.UUID) else line.id)


# -- writes sent with the COMMIT -----------------------------------------------------------------

def write_with_commit(uow: Any, row: Any) -> None:
    """Insert `row` with the unit of work's journal rows: on PostgreSQL in the batch sent with
    the COMMIT (one round trip for them all; PERF), elsewhere at once. For rows that
    nothing in the use case reads back from the database."""
    uow.add(row)


def _close_queued(uow: Any, folio: Any, other_ids: list[Any], status: str, now: Any) -> None:
    for folio_id in [folio.id, *other_ids]:
        uow.queue(CLOSE_FOLIO, {"id": folio_id, "status": status, "at": now})
    folio.status, folio.closed_at = status, now


@fast_path(_close_queued)
def close_folios(uow: Any, folio: Any, other_ids: list[Any], status: str, now: Any) -> None:
    """Check-out's closing of the guest folio (the loaded row) and the stay's other folios (by
    id), each written CLOSED at `now`: on PostgreSQL queued for the COMMIT, elsewhere saved
    at once."""
    folio.status, folio.closed_at = status, now
    folio.save()
    for folio_id in other_ids:
        row = _folio_model().get_by_id(folio_id)
        row.status, row.closed_at = status, now
        row.save()


def _outcome_queued(uow: Any, payment: Any) -> None:
    uow.queue(RECORD_OUTCOME, {
        "id": payment.id, "status": payment.status, "external_id": payment.external_id,
        "attempts": payment.attempts, "decline_code": payment.decline_code,
        "at": payment.updated_at})


@fast_path(_outcome_queued)
def record_payment_outcome(uow: Any, payment: Any) -> None:
    """A card payment's outcome written on its row (status, the provider's id, attempts, the
    decline code; `updated_at` as the caller stamped it): on PostgreSQL queued with the
    transaction's next statement, elsewhere saved at once."""
    payment.save()


def posting_row(property_id: uuid.UUID, key: str, currency: str, lines: list[Any],
                memo: str = "") -> Any:
    """`ledger_postings.record_posting`'s PENDING row, built but not inserted (the caller
    writes it with the commit); None when there is nothing to post."""
    lines = [ln for ln in lines if ln.debit or ln.credit]
    if not lines:
        return None
    from pms.models.cashiering import LedgerPosting
    from pms.platform.ledger import check_balanced

    check_balanced(lines)
    return LedgerPosting(
        property=property_id, idempotency_key=key, currency=currency, memo=memo[:200],
        status="PENDING", lines=[{"account": ln.account, "debit": str(ln.debit),
                                  "credit": str(ln.credit)} for ln in lines])


# -- PostgreSQL: one statement ---------------------------------------------------------------------

# The state read is the PL/pgSQL function `pms_folio_state` (migration 016, where its SQL is):
# PostgreSQL planned the inline statement on every call for longer than it ran it, and
# a function's plans are kept by the server per connection (PgBouncer-safe, unlike PREPARE).
# Arguments: env, folio, property and holder filters (NULL: none), lock (the stay's reservation
# row, then the folio row, FOR UPDATE, then the read, whose snapshot is taken after the locks are
# granted), the transaction code to read (NULL: none) and the stay's other OPEN folios (bool).
# The folio comes back whole (`f_row`, the table's row type, migration 030): its columns are named
# here as the model lists them, so a column added to the table needs no change to the function.
def _folio_columns() -> str:
    from pms.models import Folio

    return ", ".join(f"(s.f_row).{f.column_name}" for f in Folio._meta.sorted_fields)


_STATE_CALL = ("SELECT " + _folio_columns() + ", s.p_timezone, s.p_business_date, s.r_status,"
               " s.r_arrival_date, s.r_departure_date, s.r_nightly_prices, s.r_rate_plan_id,"
               " s.r_adults, s.r_children, s.r_confirmation_number, s.r_currency,"
               " s.state_charges, s.state_payments, s.state_posted_nights, s.state_room_code,"
               " s.state_packages, s.state_code, s.state_others, {billed}"
               " FROM pms_folio_state(%(env)s, {folio}, %(prop)s, %(holder)s, {lock},"
               " {code}, {others}) s")
# A charge's read also answers whether its stay is billed to a company through an approved
# BILL_TO_COMPANY method (the credit limit's check, company_billing.check_charge, reads the
# routing only then): in the same statement, so a stay not billed to a company costs the
# charge no round trip of its own. The other reads answer NULL (not asked).
_BILLED = ("EXISTS (SELECT 1 FROM company_billing cb JOIN company_payment_method m"
           " ON m.env_id = cb.env_id AND m.id = cb.company_payment_method_id"
           " WHERE cb.env_id = %(env)s AND cb.reservation_id = (s.f_row).reservation_id"
           " AND m.status = 'BILL_TO_COMPANY')")


def _state_call(*, folio: str = "%(folio)s", lock: bool = False, code: bool = False,
                others: bool = False) -> str:
    return _STATE_CALL.format(folio=folio, lock="true" if lock else "false",
                              code="%(code)s" if code else "NULL",
                              others="true" if others else "false",
                              billed=_BILLED if code else "NULL")


def _folio_model() -> Any:
    from pms.models import Folio  # (this module loads before the models)

    return Folio


STATE = Statement.text("folios.state", postgres=_state_call())
CODE_STATE = Statement.text("folios.state_code", postgres=_state_call(code=True))
LOCKED_STATE = Statement.text("folios.state_locked", postgres=_state_call(lock=True),
                              locks=_folio_model)
LOCKED_CODE_STATE = Statement.text("folios.state_code_locked",
                                   postgres=_state_call(lock=True, code=True),
                                   locks=_folio_model)
# check-out: the stay's guest folio (the OPEN one, else the latest), then its other OPEN folios
# (split billing) in id order, locked after the reservation the caller holds
_GUEST = """(SELECT g.id FROM folio g WHERE g.env_id = %(env)s AND g.reservation_id = %(stay)s
               AND g.folio_type = 'GUEST' ORDER BY g.status = 'OPEN' DESC, g.created_at DESC
             LIMIT 1)"""
GUEST_STATE = Statement.text("folios.guest_state", postgres=_state_call(folio=_GUEST,
                                                                        others=True))
# the locks by `pms_lock_guest_folios` (migration 019: one statement, its plans kept), which
# returns the guest folio's id for the read
GUEST_LOCKED_STATE = Statement.text("folios.guest_state_locked", postgres=_state_call(
    folio="pms_lock_guest_folios(%(env)s, %(stay)s)", others=True), locks=_folio_model)
CLOSE_FOLIO = Statement.text("folios.close", postgres=(
    "UPDATE folio SET status = %(status)s, closed_at = %(at)s, updated_at = %(at)s"
    " WHERE env_id = %(env)s AND id = %(id)s"))
RECORD_OUTCOME = Statement.text("payments.record_outcome", postgres=(
    "UPDATE folio_payment SET status = %(status)s, external_id = %(external_id)s,"
    " attempts = %(attempts)s, decline_code = %(decline_code)s, updated_at = %(at)s"
    " WHERE env_id = %(env)s AND id = %(id)s"))
# a payment's outcome: its row first (the order the payment flow has always locked in), then the
# function's locks (the stay's, the folio's) and read
PAYMENT_LOCKED_STATE = Statement.text("folios.state_payment_locked", postgres=(
    "SELECT 1 FROM folio_payment WHERE env_id = %(env)s AND id = %(payment)s FOR UPDATE;"
    + _state_call(lock=True)), locks=_folio_model)

_decode = msgspec.json.Decoder().decode


def _uuid(value: Any) -> uuid.UUID | None:
    return None if value is None else (value if isinstance(value, uuid.UUID)
                                       else uuid.UUID(str(value)))


def _date(value: Any) -> date | None:
    return None if value is None else date.fromisoformat(value)


def _moment(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _charge(a: list[Any]) -> Row:
    return Row(id=uuid.UUID(a[0]), category=a[1], description=a[2], amount=Decimal(a[3]),
               currency=a[4], quantity=a[5], business_date=_date(a[6]), night=_date(a[7]),
               kind=a[8], created_at=_moment(a[9]), transaction_code=a[10],
               parent_id=_uuid(a[11]), reversal_of=_uuid(a[12]),
               moved_from_folio=_uuid(a[13]), reason=a[14])


def _payment(a: list[Any]) -> Row:
    return Row(id=uuid.UUID(a[0]), amount=Decimal(a[1]), currency=a[2], method=a[3],
               payment_method_id=a[4], status=a[5], created_at=_moment(a[6]), kind=a[7],
               decline_code=a[8], pre_authorization_id=_uuid(a[9]), voucher_code=a[10],
               external_id=a[11], refund_of=_uuid(a[12]), attempts=a[13])


_FOLIO_PLAN: list[Any] = []


def _folio_of(values: tuple[Any, ...]) -> Any:
    """The Folio the model's fields read from its columns (as `TenantModel.fetch` builds it)."""
    if not _FOLIO_PLAN:
        from pms.db.base import FetchPlan
        from pms.models import Folio

        _FOLIO_PLAN.append(FetchPlan(Folio))
    return _FOLIO_PLAN[0].build(values)


def _from_row(row: tuple[Any, ...], now: datetime | None) -> FolioState:
    width = len(row) - 19  # the folio's columns, then 19 more (see _STATE_CALL)
    folio = _folio_of(row[:width])
    (timezone, bdate, r_status, arrival, departure, prices, plan_id, adults, children,
     confirmation, r_currency, charges, payments, nights, room_code, packages, code,
     others, billed) = row[width:]
    # read by company_billing.check_charge (None: not read here, it reads the routing itself)
    folio.billed_to_company = billed
    stay = Row(id=folio.reservation_id, property_id=folio.property_id, status=r_status,
               arrival_date=arrival, departure_date=departure, nightly_prices=prices,
               rate_plan_id=_uuid(plan_id), adults=adults, children=children,
               confirmation_number=confirmation, currency=r_currency)
    today = business_date(Row(business_date=bdate, timezone=timezone), now) \
        if now is not None else None
    rc = _decode(room_code) if room_code else None
    tc = _decode(code) if code else None
    return FolioState(
        folio=folio, today=today, stay=stay,  # type: ignore[arg-type]
        charges=[_charge(a) for a in _decode(charges)] if charges else [],
        payments=[_payment(a) for a in _decode(payments)] if payments else [],
        posted_nights=set(nights or ()),
        room_code=Row(code=rc[0], tax_rules=rc[1]) if rc else None,
        packages=[Row(code=k[0], name=k[1], price=Decimal(k[2]), calculation=k[3],
                      category=k[4]) for k in _decode(packages)] if packages else [],
        code=(Row(code=tc[0], name=tc[1], category=tc[2], tax_rules=tc[3], ledger_account=tc[4])
              if tc else None),
        others=[Row(id=uuid.UUID(o[0]), currency=o[1], property_id=_uuid(o[2]),
                    balance=quantize(Decimal(o[3]), o[1]) - quantize(Decimal(o[4]), o[1]))
                for o in _decode(others)] if others else [])


# -- SQLite: the same state through peewee ---------------------------------------------------------

def _no_stay(folio: Any) -> Row:
    """The stay of a folio that has none (a block's master folio): what `_from_row` builds
    from PostgreSQL's outer join."""
    return Row(id=None, property_id=folio.property_id, status=None, arrival_date=None,
               departure_date=None, nightly_prices=None, rate_plan_id=None, adults=None,
               children=None, confirmation_number=None, currency=None)


def _from_models(folio: Any, now: datetime | None, code: str | None) -> FolioState:
    from pms.models import FolioCharge, FolioPayment, Property, Reservation
    from pms.services.cashiering.transaction_codes import code_or_none

    stay = (Reservation.get_by_id(folio.reservation_id) if folio.reservation_id is not None
            else _no_stay(folio))  # a block's master folio
    today = (business_date(Property.get_by_id(folio.property_id), now)
             if now is not None else None)
    charges = list(FolioCharge.select().where(FolioCharge.folio == folio.id)
                   .order_by(FolioCharge.created_at, FolioCharge.id))
    payments = list(FolioPayment.select().where(FolioPayment.folio == folio.id)
                    .order_by(FolioPayment.created_at, FolioPayment.id))
    nights = {c.night for c in FolioCharge.select(FolioCharge.night).where(
        (FolioCharge.reservation == stay.id) & (FolioCharge.kind == ROOM_KIND)
        & FolioCharge.night.is_null(False))} if stay.id is not None else set()
    return FolioState(folio=folio, today=today, stay=stay,  # type: ignore[arg-type]
                      charges=charges, payments=payments, posted_nights=nights,
                      room_code=room_code(folio.property_id),
                      packages=packages_by_plan(folio.property_id).get(stay.rate_plan_id, []),
                      code=code_or_none(folio.property_id, code) if code else None)


def room_code(property_id: uuid.UUID) -> Any:
    """The property's room transaction code (code ROOM, else the first active 'room' code)."""
    from pms.models.cashiering import TransactionCode

    codes = list(TransactionCode.select().where(
        (TransactionCode.property == property_id) & (TransactionCode.category == "room")
        & (TransactionCode.active == True)).order_by(TransactionCode.code))  # noqa: E712
    return next((c for c in codes if c.code == "ROOM"), codes[0] if codes else None)


def packages_by_plan(property_id: uuid.UUID) -> dict[uuid.UUID, list[Any]]:
    from pms.models import Package, RatePlan

    packages = {p.code: p for p in Package.select().where(Package.property == property_id)}
    return {plan.id: [packages[c] for c in (plan.package_codes or []) if c in packages]
            for plan in RatePlan.select(RatePlan.id, RatePlan.package_codes)
            .where(RatePlan.property == property_id)}


# -- reading -----------------------------------------------------------------------------------------

def _read_state_pg(folio_id: uuid.UUID, *, now: datetime | None,
                   property_id: uuid.UUID | None = None, holder_id: uuid.UUID | None = None,
                   lock: bool = False, code: str | None = None,
                   payment_id: uuid.UUID | None = None) -> FolioState:
    """`read_state` by the `pms_folio_state` function (PostgreSQL): one statement, the
    folio locked (declared to the unit of work by the statement) with `lock`."""
    values: dict[str, Any] = {"folio": folio_id, "prop": property_id, "holder": holder_id,
                              "code": code}
    locked = lock and locking_enabled()
    if not locked:
        statement = CODE_STATE if code else STATE
    elif payment_id is not None:
        statement, values["payment"] = PAYMENT_LOCKED_STATE, payment_id
    else:
        statement = LOCKED_CODE_STATE if code else LOCKED_STATE
    row = statement.one(**values)
    if row is None:
        raise NotFound("no such folio")
    return _from_row(row, now)


@fast_path(_read_state_pg)
def read_state(folio_id: uuid.UUID, *, now: datetime | None, property_id: uuid.UUID | None = None,
               holder_id: uuid.UUID | None = None, lock: bool = False,
               code: str | None = None, payment_id: uuid.UUID | None = None) -> FolioState:
    """The folio's state (inside a scope; `lock` inside a unit of work). `now` gives the
    business date (and with it the projected room nights); `code` reads that active
    transaction code of the property too; a locked read with `payment_id` locks that payment
    row before the stay's and the folio's.

    Raises:
        NotFound: no such folio of the property (for a guest session: of its own stay).
    """
    from pms.models import Folio, Reservation

    query = Folio.select().where(Folio.id == folio_id)
    if property_id is not None:
        query = query.where(Folio.property == property_id)
    if holder_id is not None:
        query = (query.join(Reservation, on=(Folio.reservation == Reservation.id))
                 .where(Reservation.guest_profile == holder_id))
    folio = query.first()
    if folio is None:
        raise NotFound("no such folio")
    return _from_models(folio, now, code)


def _state_of_pg(folio: Any, *, now: datetime | None) -> FolioState:
    return _read_state_pg(folio.id, now=now)


@fast_path(_state_of_pg)
def state_of(folio: Any, *, now: datetime | None) -> FolioState:
    """The state of a folio row already found (and authorised) by the caller."""
    return _from_models(folio, now, None)


def _read_guest_state_pg(reservation: Any, *, lock: bool, now: datetime | None = None
                         ) -> FolioState | None:
    """`read_guest_state` by the `pms_folio_state` function (PostgreSQL): one statement,
    the folios locked by `pms_lock_guest_folios` with `lock` (the guest folio declared to the
    unit of work by the statement)."""
    statement = GUEST_LOCKED_STATE if lock and locking_enabled() else GUEST_STATE
    row = statement.one(stay=reservation.id, prop=None, holder=None)
    return None if row is None else _from_row(row, now)


@fast_path(_read_guest_state_pg)
def read_guest_state(reservation: Any, *, lock: bool, now: datetime | None = None
                     ) -> FolioState | None:
    """The state of the stay's guest folio (the OPEN one, else the latest) with the stay's
    other OPEN folios and their balances (`others`), for a check-out inside its unit of work
    (the caller holds the reservation's lock; `lock` locks the guest folio, then the others in
    id order). None when the stay has no guest folio."""
    from pms.models import Folio, FolioCharge, FolioPayment

    folio = (Folio.select()
             .where((Folio.reservation == reservation.id) & (Folio.folio_type == "GUEST"))
             .order_by((Folio.status == "OPEN").desc(), Folio.created_at.desc()).first())
    if folio is None:
        return None
    state = _from_models(folio, now, None)
    for other in (Folio.select().where((Folio.reservation == folio.reservation_id)
                                       & (Folio.id != folio.id) & (Folio.status == "OPEN"))
                  .order_by(Folio.id)):
        charges = sum((Decimal(str(c.amount)) for c in FolioCharge.select(FolioCharge.amount)
                       .where(FolioCharge.folio == other.id)), Decimal(0))
        paid = sum((Decimal(str(p.amount)) for p in FolioPayment.select(FolioPayment.amount)
                    .where((FolioPayment.folio == other.id) & (FolioPayment.status == CAPTURED))),
                   Decimal(0))
        state.others.append(Row(id=other.id, currency=other.currency,
                                property_id=other.property_id,
                                balance=quantize(charges, other.currency)
                                - quantize(paid, other.currency)))
    return state


# -- a card payment's outcome: its read -----------------------------------------------------------

def _head_columns() -> list[str]:
    from pms.models.cashiering import FiscalJournalHead

    return [f.column_name for f in FiscalJournalHead._meta.sorted_fields]


@functools.cache
def _outcome_statement() -> Statement:
    """A capture's outcome read on PostgreSQL: the payment row locked, then the stay's and the
    folio's locks and the folio's state (`folio_state.PAYMENT_LOCKED_STATE`), then the
    property's fiscal-journal head locked and read (its lateral names the state's property,
    so it runs after the state's locks): one round trip, where the head's read was one more."""
    from pms.models import Folio

    head = ", ".join(f"h.{c} AS h_{c}" for c in _head_columns())
    return Statement.text("payments.outcome_with_head", postgres=(
        "SELECT 1 FROM folio_payment WHERE env_id = %(env)s AND id = %(payment)s FOR UPDATE;"
        f" SELECT s2.*, fh.* FROM ({_state_call(lock=True)}) s2 LEFT JOIN LATERAL ("
        f"SELECT {head} FROM fiscal_journal_head h WHERE h.env_id = %(env)s"
        " AND h.property_id = s2.property_id FOR UPDATE OF h) fh ON true"), locks=Folio)


def _outcome_read_pg(ctx: Ctx, property_id: uuid.UUID, payment: FolioPayment, *,
                     capture: bool) -> tuple[Any, Any]:
    """`outcome_read` on PostgreSQL: a capture's read takes the fiscal journal's head too
    (None: the property has none yet; `fiscal_journal` makes it). The TEST-ONLY unlocked
    control runs read as elsewhere."""
    if not capture or not locking_enabled():
        return outcome_read.reference(ctx, property_id, payment, capture=capture)  # type: ignore[attr-defined]
    from pms.models.cashiering import FiscalJournalHead

    row = _outcome_statement().one(folio=payment.folio_id, prop=property_id,
                                   holder=ctx.holder_id, code=None, payment=payment.id)
    if row is None:
        raise NotFound("no such folio")
    width = FiscalJournalHead.column_count()
    values = row[-width:]
    head = FiscalJournalHead.from_columns(values) if values[0] is not None else None
    return _from_row(row[:-width], ctx.now), head


@fast_path(_outcome_read_pg)
def outcome_read(ctx: Ctx, property_id: uuid.UUID, payment: FolioPayment, *,
                  capture: bool) -> tuple[Any, Any]:
    """The outcome's transaction's read: the payment row locked, then the stay's and the
    folio's, and the folio's state; and, for a capture on PostgreSQL, the property's fiscal
    journal head locked and read in the same round trip (else None: `fiscal_journal` reads
    it)."""
    return read_state(payment.folio_id, now=ctx.now, property_id=property_id,
                      holder_id=ctx.holder_id, lock=True, payment_id=payment.id), None
