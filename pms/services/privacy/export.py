"""Everything stored about a person (GDPR Art. 15 and 20) as a zip: `manifest.json` and one
JSON file per kind, each row with every stored column.

Reach: the profile, its payment-method references and consents; every reservation whose guest
it is (a stay is the guest's own: the reservation's guest name is theirs) with that stay's room
stays, folios, folio lines and payments, invoices, keys (the stay's keys and any key held by
the profile), messages, service requests, feedback and registration (the reservation's
`registration` column); its company bindings; and the audit journal's entries about any of
these rows. A company profile's export adds the company's accounts (users, invitations,
payment methods, receivable, billing and routing, credit overrides, receivable items, invoices
and applications) and the stays booked for it, those without their travelers' personal data.
Nothing of another person: a key held by a companion on the guest's stay names
only its holder's id, and a stay where the profile is a companion is not the profile's (only
its own keys are). Staff comments on a stay are internal notes about it, not the guest's data
they gave or received, and stay out.

Every export is journaled (`profile.personal_data_exported`, who and when, without the data):
a data-protection officer can list who read a person's data (GET /v1/audit-log?action=...).
"""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from datetime import UTC, datetime
from typing import Any

import peewee

from pms.context import Ctx
from pms.db.uow import unit_of_work
from pms.models import (
    AuditEntry,
    CompanyUser,
    DigitalKey,
    Feedback,
    Folio,
    FolioCharge,
    FolioPayment,
    GuestPaymentMethod,
    Invoice,
    Reservation,
    ReservationMessage,
    RoomStay,
    ServiceRequest,
)
from pms.services.privacy.models import Consent
from pms.services.profiles.guest_payment_methods import own_profile

FORMAT = "pms.personal-data-export/1"


def _row(row: peewee.Model) -> dict[str, Any]:
    """Every stored column of a row, by column name (foreign keys as their ids)."""
    return {field.column_name: getattr(row, field.name if not isinstance(
        field, peewee.ForeignKeyField) else field.name + "_id")
        for field in row._meta.sorted_fields}


def _rows(query: peewee.ModelSelect) -> list[dict[str, Any]]:
    return [_row(r) for r in query]


def collect(profile_id: uuid.UUID) -> dict[str, list[dict[str, Any]]]:
    """The person's rows by kind (call inside a scope; the profile exists)."""
    from pms.models import Profile

    stays = list(Reservation.select().where(Reservation.guest_profile == profile_id))
    stay_ids = [r.id for r in stays]
    folios = list(Folio.select().where(Folio.reservation.in_(stay_ids))) if stay_ids else []
    folio_ids = [f.id for f in folios]

    def of_stays(model: Any) -> list[dict[str, Any]]:
        return _rows(model.select().where(model.reservation.in_(stay_ids))) if stay_ids else []

    def of_folios(model: Any, column: Any) -> list[dict[str, Any]]:
        return _rows(model.select().where(column.in_(folio_ids))) if folio_ids else []

    keys = DigitalKey.select().where(DigitalKey.holder_profile_id == profile_id)
    if stay_ids:
        keys = DigitalKey.select().where(
            DigitalKey.reservation.in_(stay_ids) | (DigitalKey.holder_profile_id == profile_id))
    kinds: dict[str, list[dict[str, Any]]] = {
        "profile": _rows(Profile.select().where(Profile.id == profile_id)),
        "payment_methods": _rows(GuestPaymentMethod.select().where(
            GuestPaymentMethod.profile == profile_id)),
        "consents": _rows(Consent.select().where(Consent.profile == profile_id)),
        "reservations": [_row(r) for r in stays],
        "registrations": [{"reservation_id": r.id, "registration": r.registration,
                           "pre_checked_in_at": r.pre_checked_in_at}
                          for r in stays if r.registration is not None],
        "room_stays": of_stays(RoomStay),
        "folios": [_row(f) for f in folios],
        "folio_lines": of_folios(FolioCharge, FolioCharge.folio),
        "folio_payments": of_folios(FolioPayment, FolioPayment.folio),
        "invoices": of_folios(Invoice, Invoice.folio_id),
        "keys": _rows(keys),
        "messages": of_stays(ReservationMessage),
        "service_requests": of_stays(ServiceRequest),
        "feedback": of_stays(Feedback),
        "company_bindings": _rows(CompanyUser.select().where(
            CompanyUser.traveler_profile_id == profile_id)),
    }
    if kinds["profile"] and kinds["profile"][0]["kind"] == "COMPANY":
        kinds.update(_company(profile_id))
    kinds["audit"] = _rows(AuditEntry.select().where(
        AuditEntry.target_id.in_(sorted(_ids(profile_id, kinds)))).order_by(AuditEntry.id))
    return kinds


# a stay booked for the company: what the company's own records say about it, without the
# traveler's personal data (the traveler's name and contacts are the traveler's to ask for)
_BOOKING_COLUMNS = ("id", "property_id", "confirmation_number", "status", "arrival_date",
                    "departure_date", "room_type_id", "rate_plan_id", "adults", "children",
                    "room_total", "total_amount", "currency", "company_billed", "company_profile_id",
                    "created_at", "updated_at")


def _company(company_id: uuid.UUID) -> dict[str, list[dict[str, Any]]]:
    """A company profile's accounts: its users, invitations, payment methods, receivable,
    billing and routing, credit overrides, receivable items, invoices and applications, and
    the stays booked for it (without their travelers' personal data)."""
    from pms.models import companies as c

    def of(model: Any) -> list[dict[str, Any]]:
        return _rows(model.select().where(model.company_profile_id == company_id)
                     .order_by(model.id))

    bookings = [{k: v for k, v in _row(r).items() if k in _BOOKING_COLUMNS}
                for r in Reservation.select().where(
                    Reservation.company_profile_id == company_id).order_by(Reservation.id)]
    return {"company_users": of(c.CompanyUser), "company_invitations": of(c.CompanyInvitation),
            "company_payment_methods": of(c.CompanyPaymentMethod),
            "receivable_accounts": of(c.CompanyReceivableAccount),
            "company_billing": of(c.CompanyBilling),
            "routing_instructions": of(c.CompanyRoutingInstruction),
            "credit_overrides": of(c.CompanyCreditOverride),
            "receivable_items": of(c.CompanyArItem), "company_invoices": of(c.CompanyInvoice),
            "receivable_applications": of(c.CompanyArApplication),
            "company_bookings": bookings}


def _ids(profile_id: uuid.UUID, kinds: dict[str, list[dict[str, Any]]]) -> set[str]:
    return {str(profile_id)} | {str(row["id"]) for name, rows in kinds.items()
                                if name not in ("registrations", "audit", "company_bookings")
                                for row in rows if "id" in row}


def person_row_ids(profile_id: uuid.UUID) -> set[str]:
    """The ids of every row the export reaches (the journal's and outbox's targets: call inside
    a scope)."""
    return _ids(profile_id, collect(profile_id))


def _json(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    return str(value)


def manifest(profile_id: uuid.UUID, kinds: dict[str, list[dict[str, Any]]], *,
             now: datetime) -> dict[str, Any]:
    """The format, the profile, when, and each file's kind and row count."""
    return {"format": FORMAT, "profile_id": str(profile_id),
            "generated_at": now.astimezone(UTC).isoformat(),
            "files": [{"name": f"{kind}.json", "kind": kind, "rows": len(rows)}
                      for kind, rows in kinds.items()]}


def archive(head: dict[str, Any], kinds: dict[str, list[dict[str, Any]]]) -> bytes:
    """The zip: manifest.json and `<kind>.json` per kind."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(head, indent=2))
        for kind, rows in kinds.items():
            zf.writestr(f"{kind}.json", json.dumps(rows, default=_json, indent=2))
    return buffer.getvalue()


def as_document(head: dict[str, Any], kinds: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The same content as one JSON document: {manifest, data: {kind: rows}}."""
    return json.loads(json.dumps({"manifest": head, "data": kinds}, default=_json))


def export(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID, *, reader: bool = True
           ) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """The person's manifest and rows by kind; the read is journaled, and counted as the
    caller's access (`reader`; an export job counts its requester when it is queued).
    Raises NotFound (no such profile, or not the guest token's own)."""
    from pms.services.privacy import access

    with unit_of_work(ctx) as uow:
        profile = own_profile(ctx, property_id, profile_id)
        kinds = collect(profile_id)
        uow.audit("profile.personal_data_exported", profile,
                  after={"files": {kind: len(rows) for kind, rows in kinds.items()}})
        if reader:
            access.note(ctx, profile_id, "personal_data")
    return manifest(profile_id, kinds, now=ctx.now), kinds
