"""Minimal folio: open, balance, room charges per night, close.

The write helpers run INSIDE the caller's unit of work (check-in opens the folio, check-out posts
the room nights and closes it); they write no outbox or audit rows of their own, because the
reservation event of that request covers them. The read functions open their own read scope.
Full cashiering (postings, payments, invoices) extends this module later.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import peewee

from pms.context import Ctx
from pms.db.locking import for_update
from pms.db.statements import bulk_insert
from pms.db.uow import read_scope
from pms.domain.money import quantize
from pms.domain.states import FOLIO_INITIAL, FOLIO_MACHINE, FolioStatus, ReservationStatus
from pms.domain.stay import stay_nights
from pms.errors import FolioNotClosable, NotFound, ValidationFailed
from pms.models import Folio, FolioCharge, FolioPayment, Property, Reservation
from pms.queries.lookups import load_reservation
from pms.schemas.folios import FolioOut, folio_out
from pms.services.cashiering.folio_state import packages_by_plan, room_code, state_of

GUEST = "GUEST"
ROOM_KIND = "room"
CAPTURED = "CAPTURED"


def guest_folio(reservation: Reservation, *, lock: bool = False) -> Folio | None:
    """The reservation's guest folio: the OPEN one if any, else the latest."""
    query = (Folio.select()
             .where((Folio.reservation == reservation.id) & (Folio.folio_type == GUEST))
             .order_by((Folio.status == FolioStatus.OPEN.value).desc(), Folio.created_at.desc()))
    if lock:
        query = for_update(query)
    return query.first()


def open_folio(reservation: Reservation, *, room_number: str | None = None) -> Folio:
    """Return the reservation's OPEN guest folio, creating it if there is none (inside a UoW).
    A room block member's new folio opens with the block's routing (`block_routing`)."""
    folio = guest_folio(reservation, lock=True)
    if folio is not None and folio.status == FolioStatus.OPEN:
        if room_number is not None and folio.room_number != room_number:
            folio.room_number = room_number
            folio.save()
        return folio
    routing, target = block_routing(reservation)
    return Folio.create(reservation=reservation.id, property=reservation.property_id,
                        room_number=room_number, status=FOLIO_INITIAL.value,
                        folio_type=GUEST, currency=reservation.currency, routing=routing,
                        routing_folio_id=target)


# -- members' room nights billed to their block's master folio -------------------------------

# the lines of a room night each routing sends to the master folio, by `kind`
ROUTED_KINDS = {"ROOM_AND_TAX": ("room", "tax"),
                "ROOM_TAX_AND_PACKAGES": ("room", "tax", "package")}


def block_routing(reservation: Any) -> tuple[str | None, uuid.UUID | None]:
    """The routing a block member's guest folio opens with: the block's instruction and its
    OPEN master folio; (None, None) for a stay outside a block, a block that routes nothing, or
    a master folio settled already. One read, for a block's reservation only."""
    from pms.models.room_blocks import RoomBlock

    if getattr(reservation, "block_id", None) is None:
        return None, None
    row = (RoomBlock.select(RoomBlock.master_folio_routing, RoomBlock.folio_id)
           .join(Folio, on=(Folio.id == RoomBlock.folio_id))
           .where((RoomBlock.id == reservation.block_id)
                  & (Folio.status == FolioStatus.OPEN.value)).first())
    if row is None or row.master_folio_routing not in ROUTED_KINDS:
        return None, None
    return row.master_folio_routing, row.folio_id


def route_rows(rows: list[dict[str, Any]], folio: Any, confirmation: str | None) -> None:
    """Send the room-night lines `folio`'s routing names to its master folio (in place), each
    naming the stay and the room it is for; the other lines stay on the guest folio."""
    kinds = ROUTED_KINDS.get(getattr(folio, "routing", None) or "")
    if not kinds or folio.routing_folio_id is None:
        return
    room = f", room {folio.room_number}" if folio.room_number else ""
    for row in rows:
        if row["kind"] in kinds:
            row["folio"] = folio.routing_folio_id
            suffix = room if row["kind"] == ROOM_KIND else f" ({confirmation}{room})"
            row["description"] = (row["description"] + suffix)[:200]


def totals(folio: Folio) -> tuple[Decimal, Decimal]:
    """(sum of charges, sum of captured payments) of a folio."""
    charges = (FolioCharge.select(peewee.fn.COALESCE(peewee.fn.SUM(FolioCharge.amount), 0))
               .where(FolioCharge.folio == folio.id).scalar())
    payments = (FolioPayment.select(peewee.fn.COALESCE(peewee.fn.SUM(FolioPayment.amount), 0))
                .where((FolioPayment.folio == folio.id) & (FolioPayment.status == CAPTURED))
                .scalar())
    return (quantize(Decimal(str(charges)), folio.currency),
            quantize(Decimal(str(payments)), folio.currency))


def folio_balance(folio: Folio) -> Decimal:
    """Charges minus captured payments."""
    charges, payments = totals(folio)
    return charges - payments


def _night_amounts(reservation: Reservation) -> dict[date, Decimal]:
    out: dict[date, Decimal] = {}
    for item in reservation.nightly_prices or []:
        out[date.fromisoformat(str(item["date"]))] = Decimal(str(item["amount"]))
    return out


def last_night_due(reservation: Reservation, today: date) -> date:
    """The last night a check-out on business date `today` charges: the night before today,
    within the stay, and at least the first night (a same-day check-out pays one night)."""
    end = max(min(today, reservation.departure_date),
              reservation.arrival_date + timedelta(days=1))
    return end - timedelta(days=1)


def unposted_room_rows(reservation: Reservation, folio_id: Any, until_night: date, *,
                       business_date: date) -> tuple[list[date], list[dict[str, Any]]]:
    """The nights of the stay up to `until_night` without a room charge yet, and the lines
    (room, tax, package) they would get. Builds rows only; nothing is written."""
    from pms.services.cashiering.transaction_codes import rules_of

    nights = [n for n in stay_nights(reservation.arrival_date, reservation.departure_date)
              if n <= until_night]
    if not nights:
        return [], []
    posted = {c.night for c in FolioCharge.select(FolioCharge.night).where(
        (FolioCharge.reservation == reservation.id) & (FolioCharge.kind == ROOM_KIND)
        & (FolioCharge.night.in_(nights)))}
    missing = [n for n in nights if n not in posted]
    if not missing:
        return [], []
    code = room_code(reservation.property_id)
    rules = rules_of(code) if code is not None else []
    packages = packages_by_plan(reservation.property_id)
    rows: list[dict[str, Any]] = []
    for night in missing:
        rows.extend(_stay_rows(reservation, folio_id, reservation.property_id, night,
                               business_date, code, rules, packages))
    return missing, rows


def post_room_charges(reservation: Reservation, until_night: date, *,
                      business_date: date) -> list[FolioCharge]:
    """Post the room charge of every night of the stay up to `until_night` not yet posted.

    Exactly once per stay and night: nights already charged are skipped, and a partial unique
    index (env_id, reservation, night) WHERE kind = 'room' refuses a second row.
    """
    from pms.services.cashiering.ledger_postings import by_account, record_posting, revenue_lines

    folio = open_folio(reservation)
    missing, rows = unposted_room_rows(reservation, folio.id, until_night,
                                       business_date=business_date)
    route_rows(rows, folio, reservation.confirmation_number)
    bulk_insert(FolioCharge, rows)
    if rows:  # settled with the ledger by the reconciler (no ledger client in here)
        record_posting(reservation.property_id,
                       f"room-nights:{reservation.id}:{missing[0]}:{missing[-1]}",
                       folio.currency,
                       revenue_lines(by_account([(r["category"], None, r["amount"]) for r in rows])),
                       memo=f"Room nights {reservation.confirmation_number}")
    ids = [r["id"] for r in rows if r["kind"] == ROOM_KIND]
    return list(FolioCharge.select().where(FolioCharge.id.in_(ids)).order_by(FolioCharge.night))


def close_folio(folio: Folio, *, now: datetime) -> Folio:
    """Close a folio whose balance is zero; closing the guest folio (check-out) also closes the
    stay's extra folios (split billing), which must be settled too. Runs inside the caller's
    unit of work with the folio row locked (`open_folio` locks it).

    Raises:
        FolioNotClosable: a balance is owed (409 folio_not_closable, with `balance`,
            `currency` and `folio_id` in the problem body), or the folio holds a credit (409
            folio_credit_balance: the guest overpaid; refund first, through `refund_path`).
    """
    others: list[Folio] = []
    if folio.folio_type == GUEST:
        others = list(for_update(Folio.select().where(
            (Folio.reservation == folio.reservation_id) & (Folio.id != folio.id)
            & (Folio.status == FolioStatus.OPEN.value)).order_by(Folio.id)))
    for row in [folio, *others]:
        refuse_balance(row.id, row.currency, row.property_id, folio_balance(row))
    for row in [folio, *others]:
        row.status = FOLIO_MACHINE.transition(row.status, "close").value
        row.closed_at = now
        row.save()
    return folio


def close_settled_folios(reservation: Reservation, *, now: datetime) -> None:
    """Close the OPEN folios of a stay that ends without a check-out (cancel, no-show) whose
    balance is zero: nothing is left open on a stay that is over. A folio that owes or holds
    money (a fee posted, a deposit to refund) stays OPEN for the desk to settle."""
    for folio in for_update(Folio.select().where(
            (Folio.reservation == reservation.id)
            & (Folio.status == FolioStatus.OPEN.value)).order_by(Folio.id)):
        if folio_balance(folio) == 0:
            folio.status = FOLIO_MACHINE.transition(folio.status, "close").value
            folio.closed_at = now
            folio.save()


def refuse_balance(folio_id: Any, currency: str, property_id: Any, balance: Decimal) -> None:
    """Raise FolioNotClosable unless `balance` is zero (close_folio's rule)."""
    if balance < 0:
        # An overpayment is money the hotel owes: check-out never keeps it silently and
        # never refunds inside its transaction (a payments-service call). It refuses with
        # its own code so the desk knows the fix is a refund, not a payment, and where.
        refunds = f"/v1/properties/{property_id}/folios/{folio_id}/refunds"
        raise FolioNotClosable(
            f"the folio holds a credit of {-balance} {currency}: the guest overpaid; "
            f"refund the credit (POST {refunds}), then check out",
            code="folio_credit_balance", balance=str(balance), currency=currency,
            folio_id=str(folio_id), refund_path=refunds)
    if balance != 0:
        raise FolioNotClosable(
            f"the folio has an open balance of {balance} {currency}; settle it at the desk",
            balance=str(balance), currency=currency, folio_id=str(folio_id))


def guest_state_select(stay: str) -> str:
    """The locked read of a stay's guest folio (`read_guest_state(lock=True)` on PostgreSQL:
    its folios locked by `pms_lock_guest_folios`, then read by `pms_folio_state` with the
    other OPEN folios), the stay given as the SQL expression `stay`, for a caller's larger
    statement (check-out's one locked read, pms.services.frontdesk.stay_reads). Its
    columns are the folio's (`Folio._meta.sorted_fields`), then the state's; no property or
    holder filter (the caller's stay row is filtered already)."""
    from pms.services.cashiering import folio_state

    text = folio_state._state_call(folio=f"pms_lock_guest_folios(%(env)s, {stay})", others=True)
    return text.replace("%(prop)s", "NULL").replace("%(holder)s", "NULL")


def guest_state_of(values: tuple[Any, ...], now: datetime | None = None) -> Any:
    """The FolioState of the columns `guest_state_select` reads (None: the stay has no guest
    folio, its columns NULL)."""
    from pms.services.cashiering import folio_state

    return None if values[0] is None else folio_state._from_row(values, now)


def settle_for_check_out(uow: Any, reservation: Reservation, until_night: date, *,
                         today: date, now: datetime, state: Any = None,
                         settle: Any = None) -> None:
    """Check-out's folio work inside its unit of work (the reservation locked): post the room
    nights up to `until_night` not yet charged and close the guest folio and the stay's other
    OPEN folios, refusing (FolioNotClosable) while any holds a balance: `post_room_charges`
    and `close_folio` from one read of the folios (pms.services.cashiering.folio_state; the guest folio,
    then the others in id order, locked in the same round trip), the room-night lines and
    their PENDING ledger posting and the folios' closing written with the COMMIT. `state`:
    the guest folio's, when the caller read it (`read_guest_state(lock=True)`). A stay without
    an OPEN guest folio (none when checked in, SPEC rule 5) takes the general path.
    `settle(uow, reservation, state)`: run on the guest folio once its last room nights are
    on it, before its balance is refused (the company's share of a stay billed to
    it); returns what it settled that the balance does not show yet (a card charge after
    commit), which the refusal counts as paid."""
    from pms.services.cashiering.folio_state import (
        close_folios,
        posting_row,
        read_guest_state,
        write_with_commit,
    )
    from pms.services.cashiering.ledger_postings import by_account, revenue_lines

    if state is None:
        state = read_guest_state(reservation, lock=True)
    if state is None or state.folio.status != FolioStatus.OPEN:
        post_room_charges(reservation, until_night, business_date=today)
        close_folio(open_folio(reservation), now=now)
        return
    folio = state.folio
    state.stay, state.today = reservation, today  # the stay as the check-out has cut it
    missing, rows = state_room_rows(state, until_night, business_date=today)
    if rows:
        lines = [FolioCharge(**row) for row in rows]
        for line in lines:
            write_with_commit(uow, line)
        # the lines routed to a block's master folio are not this folio's to pay
        state.add_charges([ln for ln in lines if ln.folio_id == folio.id])
        posting = posting_row(
            reservation.property_id, f"room-nights:{reservation.id}:{missing[0]}:{missing[-1]}",
            folio.currency,
            revenue_lines(by_account([(r["category"], None, r["amount"]) for r in rows])),
            memo=f"Room nights {reservation.confirmation_number}")
        if posting is not None:
            write_with_commit(uow, posting)
    settled = settle(uow, reservation, state) if settle is not None else Decimal(0)
    refuse_balance(folio.id, folio.currency, folio.property_id, state.balance() - settled)
    for other in state.others:
        refuse_balance(other.id, other.currency, other.property_id, other.balance)
    closed = FOLIO_MACHINE.transition(folio.status, "close").value  # the others are OPEN too
    close_folios(uow, folio, [o.id for o in state.others], closed, now)


def reopen_folio(folio: Folio) -> Folio:
    """Reopen a closed folio (revert check-out)."""
    folio.status = FOLIO_MACHINE.transition(folio.status, "reopen").value
    folio.closed_at = None
    folio.save()
    return folio


def render(folio: Folio, *, now: datetime | None = None) -> FolioOut:
    """The API shape of a folio (call inside a scope).

    With `now`, the OPEN guest folio of an in-house stay also shows the charges a check-out on
    the current business date would post (`projected_charges`, each marked `projected`), and
    `balance_due` includes them: paying `balance_due` lets the guest check out.
    """
    return render_state(state_of(folio, now=now))


def render_state(state: Any) -> FolioOut:
    """`render` of a folio state (`pms.services.cashiering.folio_state`): the lines written in the unit
    of work included, nothing read again."""
    charges_total, payments_total = state.totals()
    return folio_out(state.folio, state.charges, state.payments, charges_total=charges_total,
                     payments_total=payments_total, projected=projected_rows(state))


def projected_rows(state: Any) -> list[dict[str, Any]]:
    """The room-night lines check-out would post now, for the OPEN guest folio of a CHECKED_IN
    stay (nothing for other folios: check-out posts room nights to the guest folio only)."""
    folio, stay = state.folio, state.stay
    if (state.today is None or folio.folio_type != GUEST or folio.status != FolioStatus.OPEN
            or stay.status != ReservationStatus.CHECKED_IN):
        return []
    _, rows = state_room_rows(state, last_night_due(stay, state.today), business_date=state.today)
    return [r for r in rows if r["folio"] == folio.id]  # not those routed to a master folio


def state_room_rows(state: Any, until_night: date, *, business_date: date
                    ) -> tuple[list[date], list[dict[str, Any]]]:
    """`unposted_room_rows` from a folio state (its stay, posted nights, room code and
    packages already read): the nights up to `until_night` without a room charge yet and the
    lines they would get (on the state's folio, or routed to its block's master folio)."""
    from pms.services.cashiering.transaction_codes import rules_of

    stay = state.stay
    missing = [n for n in stay_nights(stay.arrival_date, stay.departure_date)
               if n <= until_night and n not in state.posted_nights]
    if not missing:
        return [], []
    code = state.room_code
    rules = rules_of(code) if code is not None else []
    packages = {stay.rate_plan_id: state.packages}
    rows: list[dict[str, Any]] = []
    for night in missing:
        rows.extend(_stay_rows(stay, state.folio.id, stay.property_id, night, business_date,
                               code, rules, packages))
    route_rows(rows, state.folio, stay.confirmation_number)
    return missing, rows


def get_reservation_folio(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID) -> FolioOut:
    """The guest folio of a reservation. Raises NotFound (no reservation, or no folio yet)."""
    with read_scope(ctx):
        reservation = load_reservation(ctx, property_id, reservation_id)
        folio = guest_folio(reservation)
        if folio is None:
            raise NotFound("the reservation has no folio yet (it opens at check-in)")
        return render(folio, now=ctx.now)


def folio_for_room(ctx: Ctx, property_id: uuid.UUID, room_number: str | None) -> FolioOut:
    """The OPEN folio of the in-house stay in `room_number`.

    Raises:
        NotFound: no such property, or no in-house stay with an open folio in that room.
        ValidationFailed: room_number missing (checked after the property, so another env's
            property answers 404).
    """
    with read_scope(ctx):
        if Property.select().where(Property.id == property_id).first() is None:
            raise NotFound("no such property")
        if not room_number:
            raise ValidationFailed("the room_number query parameter is required",
                                   errors=[{"field": "room_number", "message": "required"}])
        query = (Folio.select().join(Reservation, on=(Folio.reservation == Reservation.id))
                 .where((Folio.property == property_id) & (Folio.room_number == room_number)
                        & (Folio.status == FolioStatus.OPEN.value)
                        & (Folio.folio_type == GUEST)
                        & (Reservation.status == ReservationStatus.CHECKED_IN.value)))
        if ctx.holder_id is not None:
            query = query.where(Reservation.guest_profile == ctx.holder_id)
        folio = query.first()
        if folio is None:
            raise NotFound(f"no in-house stay has an open folio in room {room_number}")
        return render(folio, now=ctx.now)


# -- the night's room, tax and package charges (night audit) -----------------------------

@dataclass
class NightPosting:
    stays: int = 0
    lines: int = 0
    skipped: int = 0
    total: Decimal = Decimal("0")
    posting_id: uuid.UUID | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)


PACKAGE_ON_ARRIVAL = {"PER_STAY": False, "PER_PERSON": True}  # -> times persons
PACKAGE_NIGHTLY = {"PER_NIGHT": False, "PER_PERSON_PER_NIGHT": True}


def _charge_row(folio_id: Any, res_id: Any, prop_id: Any, *, category: str, description: str,
                amount: Decimal,
                currency: str, day: date, kind: str, code: str | None = None,
                parent: uuid.UUID | None = None, night: date | None = None,
                quantity: int = 1) -> dict[str, Any]:
    from pms.db.fields import utcnow

    now = utcnow()
    return {"id": uuid.uuid4(), "created_at": now, "updated_at": now, "folio": folio_id,
            "property_id": prop_id,
            "reservation": res_id, "category": category, "description": description[:200],
            "amount": amount, "currency": currency, "quantity": quantity, "business_date": day,
            "night": night, "kind": kind, "transaction_code": code, "parent_id": parent,
            "reversal_of": None, "moved_from_folio": None, "reason": None}


def _stay_rows(stay: Reservation, folio_id: Any, prop_id: Any, night: date, day: date,
               code: Any, rules: list[Any], packages: dict[uuid.UUID, list[Any]]
               ) -> list[dict[str, Any]]:
    """One stay's lines for one night: the room charge (net), its tax lines, its packages."""
    from pms.domain.tax import split_taxes

    cur = stay.currency
    split = split_taxes(_night_amounts(stay).get(night, Decimal(0)), rules, cur)
    room = _charge_row(folio_id, stay.id, prop_id, category="room", amount=split.net,
                       currency=cur, description=f"Room {stay.confirmation_number} night {night}",
                       day=day, kind=ROOM_KIND, code=code.code if code else None, night=night)
    rows = [room] + [_charge_row(folio_id, stay.id, prop_id, category="tax", amount=t.amount,
                                 currency=cur, description=t.name or t.code, day=day,
                                 kind="tax", code=t.code, parent=room["id"])
                     for t in split.taxes]
    persons = stay.adults + stay.children
    for pkg in packages.get(stay.rate_plan_id, []):
        if pkg.calculation in PACKAGE_NIGHTLY:
            times = persons if PACKAGE_NIGHTLY[pkg.calculation] else 1
        elif night == stay.arrival_date:
            times = persons if PACKAGE_ON_ARRIVAL.get(pkg.calculation) else 1
        else:
            continue
        rows.append(_charge_row(folio_id, stay.id, prop_id, category=pkg.category, currency=cur,
                                amount=quantize(Decimal(str(pkg.price)) * times, cur),
                                description=pkg.name, day=day, kind="package",
                                code=pkg.code, quantity=times, night=night))
    return rows


def _night_rows(prop: Property, day: date, *, preview: bool = False) -> NightPosting:
    """Build (not insert) the night's lines for every in-house stay not yet charged (set-based:
    a fixed number of queries whatever the number of stays or the history)."""
    from pms.services.cashiering.transaction_codes import rules_of

    query = Reservation.select(
        Reservation.id, Reservation.rate_plan, Reservation.arrival_date, Reservation.adults,
        Reservation.children, Reservation.nightly_prices, Reservation.currency,
        Reservation.confirmation_number, Reservation.property, Reservation.block_id).where(
        (Reservation.property == prop.id)
        & (Reservation.status == ReservationStatus.CHECKED_IN.value)
        & (Reservation.arrival_date <= day) & (Reservation.departure_date > day))
    # Lock the in-house stays (not in a dry run): a check-out racing the audit waits for it and
    # then sees the night's charge, instead of closing a folio the audit is about to charge.
    stays = list(query if preview else for_update(query.order_by(Reservation.id)))
    # a room night is posted with business_date == night (audit) or later (check-out)
    done = {r.reservation_id for r in FolioCharge.select(FolioCharge.reservation).where(
        (FolioCharge.property_id == prop.id) & (FolioCharge.business_date >= day)
        & (FolioCharge.kind == ROOM_KIND) & (FolioCharge.night == day))}
    folios = {f.reservation_id: f for f in Folio.select(
        Folio.id, Folio.reservation, Folio.room_number, Folio.routing, Folio.routing_folio_id
    ).where((Folio.property == prop.id) & (Folio.status == FolioStatus.OPEN.value)
            & (Folio.folio_type == GUEST))}
    code = room_code(prop.id)
    rules = rules_of(code) if code is not None else []
    packages = packages_by_plan(prop.id)
    out = NightPosting(skipped=len(done))
    for stay in stays:
        if stay.id in done:
            continue
        folio = folios.get(stay.id) or (None if preview else open_folio(stay))
        out.stays += 1
        rows = _stay_rows(stay, folio.id if folio else None, prop.id, day, day, code, rules,
                          packages)
        if folio is not None:  # a block member's room and tax may go to the master folio
            route_rows(rows, folio, stay.confirmation_number)
        out.rows.extend(rows)
    out.lines = len(out.rows)
    out.total = sum((r["amount"] for r in out.rows), Decimal("0"))
    return out


def post_night(prop: Property, day: date, *, run_id: uuid.UUID) -> NightPosting:
    """Post the night's room, tax and package lines of every in-house stay exactly once, and
    record the ledger settlement (inside the caller's unit of work)."""
    from pms.services.cashiering.ledger_postings import by_account, record_posting, revenue_lines

    posting = _night_rows(prop, day)
    bulk_insert(FolioCharge, posting.rows)
    if posting.rows:
        accounts = by_account([(r["category"], None, r["amount"]) for r in posting.rows])
        row = record_posting(prop.id, f"night-audit:{run_id}:room_charges", prop.currency_code,
                             revenue_lines(accounts), memo=f"Room charges {day}")
        posting.posting_id = row.id if row is not None else None
    posting.rows = []
    return posting


def preview_night(prop: Property, day: date) -> NightPosting:
    """What `post_night` would post, line for line (dry run: read scope, nothing written)."""
    return _night_rows(prop, day, preview=True)


def post_no_show_fee(reservation: Reservation, day: date) -> FolioCharge | None:
    """Post the reservation's no-show fee (if any) to its guest folio (inside a unit of work)."""
    fee = Decimal(str(reservation.no_show_fee or 0))
    if fee <= 0:
        return None
    folio = open_folio(reservation)
    return FolioCharge.create(folio=folio.id, reservation=reservation.id, category="other",
                              property_id=reservation.property_id,
                              description=f"No-show fee {reservation.confirmation_number}",
                              amount=quantize(fee, folio.currency), currency=folio.currency,
                              quantity=1, business_date=day, kind="no_show")
