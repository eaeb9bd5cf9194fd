"""Minimal folio: open, balance, room charges per night, close (issue 3).

The write helpers run INSIDE the caller's unit of work (check-in opens the folio, check-out posts
the room nights and closes it); they write no outbox or audit rows of their own, because the
reservation event of that request covers them. The read functions open their own read scope.
Full cashiering (postings, payments, invoices) extends this module later.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal

import peewee

from pms.context import Ctx
from pms.db.locking import for_update
from pms.db.uow import read_scope
from pms.domain.money import quantize
from pms.domain.states import FOLIO_INITIAL, FOLIO_MACHINE, FolioStatus, ReservationStatus
from pms.domain.stay import stay_nights
from pms.errors import FolioNotClosable, NotFound
from pms.models import Folio, FolioCharge, FolioPayment, Property, Reservation
from pms.schemas.folios import FolioOut, folio_out

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
    """Return the reservation's OPEN guest folio, creating it if there is none (inside a UoW)."""
    folio = guest_folio(reservation, lock=True)
    if folio is not None and folio.status == FolioStatus.OPEN:
        if room_number is not None and folio.room_number != room_number:
            folio.room_number = room_number
            folio.save()
        return folio
    return Folio.create(reservation=reservation.id, property=reservation.property_id,
                        room_number=room_number, status=FOLIO_INITIAL.value,
                        folio_type=GUEST, currency=reservation.currency)


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


def post_room_charges(reservation: Reservation, until_night: date, *,
                      business_date: date) -> list[FolioCharge]:
    """Post the room charge of every night of the stay up to `until_night` not yet posted.

    Exactly once per stay and night: nights already charged are skipped, and a partial unique
    index (env_id, reservation, night) WHERE kind = 'room' refuses a second row.
    """
    folio = open_folio(reservation)
    nights = [n for n in stay_nights(reservation.arrival_date, reservation.departure_date)
              if n <= until_night]
    if not nights:
        return []
    posted = {c.night for c in FolioCharge.select(FolioCharge.night).where(
        (FolioCharge.reservation == reservation.id) & (FolioCharge.kind == ROOM_KIND)
        & (FolioCharge.night.in_(nights)))}
    amounts = _night_amounts(reservation)
    out = []
    for night in nights:
        if night in posted:
            continue
        out.append(FolioCharge.create(
            folio=folio.id, reservation=reservation.id, category="room",
            description=f"Room {reservation.confirmation_number} night {night.isoformat()}",
            amount=quantize(amounts.get(night, Decimal(0)), folio.currency),
            currency=folio.currency, quantity=1, business_date=business_date, night=night,
            kind=ROOM_KIND))
    return out


def close_folio(folio: Folio, *, now: datetime) -> Folio:
    """Close a folio whose balance is zero.

    Raises:
        FolioNotClosable: the balance is not zero (409 folio_not_closable, with `balance` and
            `currency` in the problem body).
    """
    balance = folio_balance(folio)
    if balance != 0:
        raise FolioNotClosable(
            f"the folio has an open balance of {balance} {folio.currency}; settle it at the desk",
            balance=str(balance), currency=folio.currency, folio_id=str(folio.id))
    folio.status = FOLIO_MACHINE.transition(folio.status, "close").value
    folio.closed_at = now
    folio.save()
    return folio


def reopen_folio(folio: Folio) -> Folio:
    """Reopen a closed folio (revert check-out)."""
    folio.status = FOLIO_MACHINE.transition(folio.status, "reopen").value
    folio.closed_at = None
    folio.save()
    return folio


def render(folio: Folio) -> FolioOut:
    """The API shape of a folio (call inside a scope)."""
    charges = list(FolioCharge.select().where(FolioCharge.folio == folio.id)
                   .order_by(FolioCharge.created_at, FolioCharge.id))
    payments = list(FolioPayment.select().where(FolioPayment.folio == folio.id)
                    .order_by(FolioPayment.created_at, FolioPayment.id))
    charges_total, payments_total = totals(folio)
    return folio_out(folio, charges, payments, charges_total=charges_total,
                     payments_total=payments_total)


def get_reservation_folio(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID) -> FolioOut:
    """The guest folio of a reservation. Raises NotFound (no reservation, or no folio yet)."""
    from pms.services.reservations import load_reservation

    with read_scope(ctx):
        reservation = load_reservation(ctx, property_id, reservation_id)
        folio = guest_folio(reservation)
        if folio is None:
            raise NotFound("the reservation has no folio yet (it opens at check-in)")
        return render(folio)


def folio_for_room(ctx: Ctx, property_id: uuid.UUID, room_number: str) -> FolioOut:
    """The OPEN folio of the in-house stay in `room_number`. Raises NotFound."""
    with read_scope(ctx):
        if Property.select().where(Property.id == property_id).first() is None:
            raise NotFound("no such property")
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
        return render(folio)
