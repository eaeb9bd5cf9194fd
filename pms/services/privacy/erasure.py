"""Erasure as anonymization (GDPR Art. 17) with legal holds.

Erasing a profile replaces its personal data wherever this service stores it with a stable
pseudonym (`erased-<12 hex>`, the same for the same profile): the profile's names, e-mail,
phone, address, preferences and loyalty number; its stays' guest names and registrations; the
stays' messages, service-request descriptions and feedback comments; and every string holding
the person's name, e-mail or phone in the audit journal's and the outbox's images of those
rows. Stays, folios, lines and payments are kept (they are the hotel's accounts, now without a
name). Issued invoices and credit notes are never altered: tax law keeps the fiscal document
as issued, name included, for its retention period (`PMS_PRIVACY_FISCAL_RETENTION_YEARS`,
default 10); they are listed as held, with until when and why.

Refused (409 erasure_refused, naming them) while a stay is not finished (CONFIRMED or
CHECKED_IN) or a folio of the person's stays has a balance due; a dry run lists the same
blockers without refusing. One event `hotel:pms:profile:erased` (the profile's view: no
personal data, pms.event_views) tells consumers (loyalty, CRM, POS) to erase too; its audit
row carries the pseudonym and the counts, never the erased values.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from datetime import datetime
from typing import Any

from pms.context import Ctx
from pms.db.uow import unit_of_work
from pms.errors import Conflict
from pms.events import event_type
from pms.models import (
    AuditEntry,
    Feedback,
    Folio,
    Invoice,
    OutboxEvent,
    Profile,
    Reservation,
    ReservationMessage,
    ServiceRequest,
)
from pms.schemas.common import to_data
from pms.schemas.profiles import profile_out
from pms.services.cashiering.folios import folio_balance
from pms.services.privacy import schemas as s
from pms.services.privacy.export import person_row_ids
from pms.services.profiles.guest_payment_methods import own_profile
from pms.services.profiles.profiles import load_profile

OPEN_STAYS = ("CONFIRMED", "CHECKED_IN")
FISCAL_REASON = ("an issued fiscal document is kept unaltered (name included) for the period "
                 "tax law requires")


class ErasureRefused(Conflict):
    code = "erasure_refused"


def fiscal_retention_years() -> int:
    return int(os.environ.get("PMS_PRIVACY_FISCAL_RETENTION_YEARS", "10"))


def pseudonym(profile_id: uuid.UUID) -> str:
    return "erased-" + hashlib.sha256(profile_id.bytes).hexdigest()[:12]


def _years_after(moment: datetime, years: int) -> datetime:
    try:
        return moment.replace(year=moment.year + years)
    except ValueError:  # 29 February
        return moment.replace(year=moment.year + years, day=28)


def _scrub(value: Any, secrets: list[str], alias: str) -> Any:
    """`value` with every string holding one of `secrets` replaced by `alias`."""
    if isinstance(value, str):
        return alias if any(x in value.lower() for x in secrets) else value
    if isinstance(value, dict):
        return {k: _scrub(v, secrets, alias) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, secrets, alias) for v in value]
    return value


def _secrets(profile: Profile, stays: list[Reservation]) -> list[str]:
    """What identifies the person in free text and in the journal's images: names, contacts,
    loyalty number, the street lines and postal code of the address (not the city or country,
    which name places, not people), and each stay's guest name and registration values."""
    address = profile.address or {}
    values = [profile.first_name, profile.last_name, profile.email, profile.phone,
              profile.loyalty_number, address.get("line1"), address.get("line2"),
              address.get("postalCode") or address.get("postal_code")]
    for stay in stays:
        values += [stay.guest_first_name, stay.guest_last_name]
        values += [v for v in (stay.registration or {}).values() if isinstance(v, str)]
    return sorted({v.lower() for v in values if isinstance(v, str) and len(v) >= 3})


def _plan(profile_id: uuid.UUID) -> tuple[list[Reservation], list[s.BlockerOut],
                                          list[s.HeldOut], list[uuid.UUID]]:
    stays = list(Reservation.select().where(Reservation.guest_profile == profile_id))
    blockers = [s.BlockerOut(kind="reservation", id=r.id,
                             reason=f"the stay is {r.status}: erase after it ends")
                for r in stays if r.status in OPEN_STAYS]
    folios = list(Folio.select().where(Folio.reservation.in_([r.id for r in stays]))) \
        if stays else []
    for folio in folios:
        balance = folio_balance(folio)
        if balance != 0:
            blockers.append(s.BlockerOut(kind="folio", id=folio.id,
                                         reason=f"a balance of {balance} {folio.currency} is due"))
    years = fiscal_retention_years()
    held = [s.HeldOut(kind=inv.kind.lower(), id=inv.id,
                      until=_years_after(inv.issued_at, years), reason=FISCAL_REASON)
            for inv in (Invoice.select().where(Invoice.folio_id.in_([f.id for f in folios]))
                        if folios else [])]
    return stays, blockers, held, [f.id for f in folios]


def erase(ctx: Ctx, property_id: uuid.UUID | None, profile_id: uuid.UUID,
          body: s.ErasureIn) -> s.ErasureOut:
    """Anonymize the profile (or, with dry_run, say what would happen). `property_id` None is
    the retention purge's (a profile that never stayed may belong to no property).

    Raises:
        NotFound: no such profile, or not the guest token's own.
        ErasureRefused (409): an open stay or a balance due (named in `blockers`).
    """
    alias = pseudonym(profile_id)
    with unit_of_work(ctx) as uow:
        profile = (own_profile(ctx, property_id, profile_id) if property_id is not None
                   else load_profile(profile_id))
        stays, blockers, held, _ = _plan(profile_id)
        stay_ids = [r.id for r in stays]
        changes = {
            "profile": 1,
            "reservations": len(stays),
            "registrations": sum(1 for r in stays if r.registration is not None),
            "messages": ReservationMessage.select().where(
                ReservationMessage.reservation.in_(stay_ids)).count() if stay_ids else 0,
            "service_requests": ServiceRequest.select().where(
                ServiceRequest.reservation.in_(stay_ids)).count() if stay_ids else 0,
            "feedback": Feedback.select().where(
                Feedback.reservation.in_(stay_ids)).count() if stay_ids else 0,
        }
        out = s.ErasureOut(profile_id=profile_id, dry_run=body.dry_run, erased=False,
                           pseudonym=alias, changes=changes, held=held, blockers=blockers)
        if body.dry_run:
            return out
        if blockers:
            raise ErasureRefused("the profile cannot be erased yet",
                                 blockers=[to_data(b) for b in blockers])
        secrets = _secrets(profile, stays)
        ids = sorted(person_row_ids(profile_id))
        _anonymize(profile, stay_ids, alias)
        changes["journal_rows"] = _scrub_rows(AuditEntry, AuditEntry.target_id.in_(ids),
                                              ("before", "after"), secrets, alias)
        changes["outbox_rows"] = _scrub_rows(OutboxEvent, OutboxEvent.subject.in_(ids),
                                             ("data",), secrets, alias)
        profile = Profile.get_by_id(profile_id)
        uow.audit("profile.erased", profile,
                  after={"pseudonym": alias, "changes": changes,
                         "held": [str(h.id) for h in held]})
        uow.emit(event_type("profile", "erased"), profile, to_data(profile_out(profile)),
                 property_id=property_id)
    out.erased = True
    return out


ERASED_BODY = "[erased]"  # a message of an erased guest keeps its row, not its text


def _anonymize(profile: Profile, stay_ids: list[uuid.UUID], alias: str) -> None:
    Profile.update(first_name=None, last_name=alias, email=None, email_normalized=None,
                   phone=None, address=None, preferences={}, loyalty_number=None,
                   external_ref=None).where(Profile.id == profile.id).execute()
    if not stay_ids:
        return
    Reservation.update(guest_first_name=None, guest_last_name=alias,
                       guest_last_name_normalized=alias, registration=None, notes=None).where(
        Reservation.id.in_(stay_ids)).execute()
    ReservationMessage.update(subject=None, body=ERASED_BODY).where(
        ReservationMessage.reservation.in_(stay_ids)).execute()
    ServiceRequest.update(description=None).where(
        ServiceRequest.reservation.in_(stay_ids)).execute()
    Feedback.update(comment=None).where(Feedback.reservation.in_(stay_ids)).execute()


def _scrub_rows(model: Any, where: Any, columns: tuple[str, ...], secrets: list[str],
                alias: str) -> int:
    changed = 0
    for row in model.select().where(where):
        new = {c: _scrub(getattr(row, c), secrets, alias) for c in columns}
        if any(new[c] != getattr(row, c) for c in columns):
            model.update(**new).where(model.id == row.id).execute()
            changed += 1
    return changed


__all__ = ["ErasureRefused", "erase", "pseudonym"]
