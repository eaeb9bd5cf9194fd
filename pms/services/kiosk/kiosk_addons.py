"""Kiosk add-ons (SPEC: packages serve as kiosk add-ons): what a terminal offers, and the sale.

- The offer: the property's catalog packages named in the kiosk config's
  `add_on_package_codes`, in that order, with their price and how it is calculated (PER_STAY,
  PER_NIGHT, PER_PERSON, PER_PERSON_PER_NIGHT). A terminal reads it without a session; while
  locked down or with no lookup mode enabled it is refused as every kiosk action is.
- The sale: with the terminal's live session for the stay (any lookup mode enabled), for a
  CHECKED_IN stay (409 add_on_requires_checked_in), a code on the offer (422 unknown otherwise).
  The amount is the package's price for the stay (its nights and persons); it is posted to the
  stay's OPEN guest folio as a charge line (category the package's), with its PENDING ledger
  posting, in one unit of work with the folio's audit row and event (`folio.charge_posted`,
  reason `kiosk add-on <code>`). Staff may sell through the same route (no session needed).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.locking import lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.domain.money import quantize
from pms.domain.pricing import PackageLine, package_amount
from pms.domain.states import ReservationStatus
from pms.errors import Conflict, ValidationFailed
from pms.models import FolioCharge, KioskConfig, Package
from pms.schemas import kiosk as s
from pms.services.catalog.catalog import load_property
from pms.services.kiosk import kiosk_sessions


def _offered(property_id: uuid.UUID) -> list[Package]:
    row = (KioskConfig.select(KioskConfig.add_on_package_codes)
           .where(KioskConfig.property == property_id).first())
    codes = list(row.add_on_package_codes or ()) if row is not None else []
    if not codes:
        return []
    found = {p.code: p for p in Package.select().where(
        (Package.property == property_id) & Package.code.in_(codes))}
    return [found[c] for c in codes if c in found]


def _add_on_out(pkg: Package) -> s.KioskAddOnOut:
    return s.KioskAddOnOut(code=pkg.code, name=pkg.name, description=pkg.description,
                           category=pkg.category, calculation=pkg.calculation,
                           price=quantize(Decimal(str(pkg.price)), pkg.currency),
                           currency=pkg.currency)


def list_add_ons(ctx: Ctx, property_id: uuid.UUID) -> list[s.KioskAddOnOut]:
    """The add-ons the property offers at its kiosks (module docstring).

    Raises:
        NotFound. KioskLocked, KioskModeDisabled (409): a kiosk token in lockdown, or with
            no lookup mode enabled.
    """
    with read_scope(ctx):
        load_property(property_id)
        if kiosk_sessions.is_kiosk(ctx):
            kiosk_sessions.require_terminal_property(ctx, property_id)
            kiosk_sessions.require_modes(property_id, kiosk_sessions.LOOKUP_MODES)
        return [_add_on_out(p) for p in _offered(property_id)]


@dataclass(frozen=True)
class Sold:
    add_on: s.KioskAddOnOut
    charge: FolioCharge
    folio_id: uuid.UUID


def add_on(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID,
           body: s.KioskAddOnIn, *, ledger: Any = None) -> Sold:
    """Sell an add-on of the offer to the stay (module docstring).

    Raises:
        KioskLocked, KioskModeDisabled (409), KioskSessionInvalid (403), NotFound.
        Conflict (409 add_on_requires_checked_in): the stay is not in house.
        ValidationFailed (422): the code is not on the property's kiosk offer.
    """
    from pms.queries.lookups import load_reservation
    from pms.services.cashiering.cashiering import (
        record_change,
        require_open,
        send_posting_after_commit,
    )
    from pms.services.cashiering.folio_state import posting_row, read_state, write_with_commit
    from pms.services.cashiering.folios import guest_folio
    from pms.services.cashiering.ledger_postings import by_account, revenue_lines

    with lock_errors(), unit_of_work(ctx) as uow:
        kiosk_sessions.admit(ctx, property_id, reservation_id, kiosk_sessions.LOOKUP_MODES)
        stay = load_reservation(ctx, property_id, reservation_id, lock=True)
        pkg = next((p for p in _offered(property_id) if p.code == body.package_code), None)
        if pkg is None:
            raise ValidationFailed("package_code is not an add-on this property offers at "
                                   "its kiosks", errors=[{"field": "package_code",
                                                          "message": "not on the offer"}])
        folio = guest_folio(stay, lock=True) if stay.status == ReservationStatus.CHECKED_IN \
            else None
        if folio is None:
            raise Conflict("add-ons are sold to a checked-in stay (check in first)",
                           code="add_on_requires_checked_in", status_now=stay.status)
        state = read_state(folio.id, now=ctx.now, property_id=property_id, lock=True)
        require_open(state.folio)
        nights = max((stay.departure_date - stay.arrival_date).days, 1)
        persons = stay.adults + stay.children
        amount = quantize(package_amount(
            PackageLine(pkg.code, pkg.calculation, Decimal(str(pkg.price)), pkg.currency),
            nights=nights, persons=persons), folio.currency)
        times = {"PER_STAY": 1, "PER_NIGHT": nights, "PER_PERSON": persons,
                 "PER_PERSON_PER_NIGHT": persons * nights}[pkg.calculation]
        line = FolioCharge(
            folio=folio.id, reservation=stay.id, property_id=property_id,
            category=pkg.category, description=f"Add-on {pkg.name}"[:200], amount=amount,
            currency=folio.currency, quantity=times, business_date=state.today, kind="charge",
            transaction_code=None, reason=f"kiosk add-on {pkg.code}")
        line.id = uuid.uuid4()
        write_with_commit(uow, line)
        state.add_charges([line])
        posting = posting_row(property_id, f"add-on:{line.id}", folio.currency,
                              revenue_lines(by_account([(pkg.category, None, amount)])),
                              f"Add-on {pkg.code} {stay.confirmation_number}")
        if posting is not None:
            write_with_commit(uow, posting)
        record_change(uow, folio, "charge_posted", reason=f"kiosk add-on {pkg.code}",
                      state=state)
        send_posting_after_commit(uow, ledger, posting)
    return Sold(_add_on_out(pkg), line, folio.id)
