"""No departure without a document that covers every charge (NF525 and KassenSichV share the
rule), per property: the `invoicing` module setting `invoice_at_check_out` (off by default).

When it is on, check-out issues, in its own transaction, the invoice of every folio of the stay
it closes that carries charges and has no invoice in force: the check-out and its invoices
commit together or not at all. A folio is closed at check-out, so no charge can be posted after
its invoice; a revert of the check-out cancels the invoice with a credit note and opens the
folio again, and the next check-out issues the next invoice, covering the charges posted since.
An invoice in force that does not name every charge of its folio (which the service never
writes) refuses the check-out (409 `departure_document_missing`) rather than let the guest
leave with a charge no document shows.
"""

from __future__ import annotations

import uuid
from typing import Any

from pms.db.statements import Statement, param
from pms.db.uow import UnitOfWork
from pms.domain.states import FolioStatus
from pms.errors import Conflict
from pms.models import Folio, Property
from pms.models.folios import FolioCharge

SETTING = "invoice_at_check_out"


class DepartureDocumentMissing(Conflict):
    """Raised when a folio's invoice in force does not cover every charge of the folio."""

    code = "departure_document_missing"


def _settings_read() -> Any:
    from pms.models.settings import ENV_SCOPE, SettingsDocument
    from pms.services.catalog.settings import MODULES

    return (SettingsDocument.select(SettingsDocument.scope_key, SettingsDocument.document)
            .where((SettingsDocument.env_id == param.env) & (SettingsDocument.kind == MODULES)
                   & SettingsDocument.scope_key.in_([ENV_SCOPE, param.scope])))


# PERF: compiled once per process (building and compiling the peewee query cost some 0.3 ms of
# every check-out)
_SETTINGS = Statement.build("departure_documents.settings", _settings_read)


def required(property_id: Any, uow: UnitOfWork | None = None) -> bool:
    """Whether the property's departures need a document covering every charge: the
    property's `invoicing` setting over the env's over the default (off), read in one query
    (the module documents are stored validated), unless `uow` holds it read ahead
    (`read_ahead_key`: check-out's locked read carries the two `invoicing` modules)."""
    if uow is not None and (key := read_ahead_key(property_id)) in uow.read_ahead:
        return required_by(property_id, uow.read_ahead.pop(key))
    scope = uuid.UUID(str(property_id)).hex
    rows = dict(_SETTINGS.typed_rows(scope=scope))
    return required_by(property_id, {key: (doc or {}).get("invoicing")
                                     for key, doc in rows.items()})


def read_ahead_key(property_id: Any) -> tuple[str, str]:
    """Where a store that read the `invoicing` modules ahead leaves them in the unit of work:
    `{scope_key: the module's document or None}` of the env's and the property's settings."""
    return ("departure_documents.invoicing", uuid.UUID(str(property_id)).hex)


def required_by(property_id: Any, invoicing: dict[str, Any] | None) -> bool:
    """The rule on the `invoicing` modules by scope key: the property's value over the env's
    over off."""
    from pms.models.settings import ENV_SCOPE

    on = False
    for key in (ENV_SCOPE, uuid.UUID(str(property_id)).hex):
        module = (invoicing or {}).get(key) or {}
        if module.get(SETTING) is not None:
            on = bool(module[SETTING])
    return on


def check_out_hook(uow: UnitOfWork, reservation: Any) -> None:
    """A check-out hook (pms.services.frontdesk.checkout.CHECK_OUT_HOOKS): with the setting on,
    the invoice of every closed folio of the stay with charges and none in force, issued now.

    Raises:
        DepartureDocumentMissing (409): an invoice in force leaves a charge of its folio out.
    """
    if not required(reservation.property_id, uow):
        return
    from pms.services.cashiering import invoices

    uow.flush(commit=False)  # the check-out's queued writes (room nights, closed folios) first
    folios = (Folio.select().where(Folio.reservation == reservation.id,
                                   Folio.status == FolioStatus.CLOSED)
              .order_by(Folio.created_at))
    for folio in folios:
        charges = {str(c.id) for c in FolioCharge.select(FolioCharge.id).where(
            FolioCharge.folio == folio.id)}
        if not charges:
            continue
        current = invoices.in_force(folio.id)
        if current is None:
            invoices.issue_in(uow, folio)
            continue
        left_out = sorted(charges - {line["id"] for line in current.document["lines"]})
        if left_out:
            prop = Property.get_by_id(folio.property_id)
            raise DepartureDocumentMissing(
                f"invoice {current.number} does not cover every charge of the folio and "
                f"{prop.code} requires a document covering every charge at departure",
                folio_id=str(folio.id), invoice_id=str(current.id), charge_ids=left_out)
