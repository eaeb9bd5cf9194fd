"""A guest's consents (GDPR Art. 7): each grant or withdrawal is a record of its own, with the
purpose, the source it came through (desk, kiosk, booking funnel, channel, guest portal), the
version of the text the guest agreed to, when and who recorded it. Records are never updated or
deleted by the API: the newest record of a purpose is the profile's standing consent, the older
ones are the proof that it was given (Art. 7(1)). Withdrawing is as easy as granting (Art. 7(3)):
the same POST with `granted: false`.

Holder-scoped like the profile's payment methods: a guest token reaches only its own profile's
consents (another profile answers 404). A record holds no personal data (purpose, flags, text
version), so its event goes to the bus as it is: consumers (CRM, e-mail marketing) learn the
standing consent without the guest's contact data.
"""

from __future__ import annotations

import uuid

from pms.context import Ctx
from pms.db.pagination import Page, paginate
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.events import event_type
from pms.schemas.common import to_data
from pms.schemas.profiles import profile_out
from pms.services.privacy import schemas as s
from pms.services.privacy.models import Consent
from pms.services.profiles.guest_payment_methods import own_profile
from pms.services.profiles.profiles import load_profile


def consent_out(row: Consent) -> s.ConsentOut:
    return s.ConsentOut(id=row.id, profile_id=row.profile_id, purpose=row.purpose,
                        granted=row.granted, source=row.source, text_version=row.text_version,
                        recorded_at=row.recorded_at, recorded_by=row.recorded_by)


def current_of(profile_id: uuid.UUID) -> list[Consent]:
    """The newest record of each purpose the profile has recorded (call inside a scope)."""
    newest: dict[str, Consent] = {}
    rows = Consent.select().where(Consent.profile == profile_id).order_by(
        Consent.created_at, Consent.id)
    for row in rows:
        newest[row.purpose] = row
    return [newest[p] for p in sorted(newest)]


def current_out(profile_id: uuid.UUID) -> s.CurrentConsentOut:
    rows = current_of(profile_id)
    return s.CurrentConsentOut(profile_id=profile_id, consents=[consent_out(r) for r in rows],
                               granted=[r.purpose for r in rows if r.granted])


def current(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID) -> s.CurrentConsentOut:
    with read_scope(ctx):
        own_profile(ctx, property_id, profile_id)
        return current_out(profile_id)


def history(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID,
            query: s.ConsentQuery) -> Page[Consent]:
    with read_scope(ctx):
        own_profile(ctx, property_id, profile_id)
        rows = Consent.select().where(Consent.profile == profile_id)
        if query.purpose is not None:
            rows = rows.where(Consent.purpose == query.purpose.value)
        return paginate(rows, Consent, limit=query.limit, cursor=query.cursor)


def record(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID,
           body: s.ConsentIn) -> Consent:
    """Append a grant or a withdrawal. Raises NotFound (no such profile, or not the guest's)."""
    with unit_of_work(ctx) as uow:
        own_profile(ctx, property_id, profile_id)
        row = Consent.create(profile=profile_id, purpose=body.purpose.value,
                             granted=body.granted, source=body.source.value,
                             text_version=body.text_version, recorded_at=ctx.now,
                             recorded_by=f"{ctx.client_kind}:{ctx.sub}")
        uow.record("consent", "granted" if body.granted else "withdrawn", row,
                   to_data(consent_out(row)), property_id=property_id)
        _keep_standing(uow, property_id, profile_id, row)
    return row


def _keep_standing(uow: UnitOfWork, property_id: uuid.UUID, profile_id: uuid.UUID,
                   newest: Consent) -> None:
    """The profile's `consents` follow the newest records: when the granted purposes change,
    the profile changes (its version, `hotel:pms:profile:consents_changed` with its view)."""
    profile = load_profile(profile_id, lock=True)
    standing = {r.purpose: r.granted for r in current_of(profile_id)}
    standing[newest.purpose] = newest.granted  # the record just made (its write may be queued)
    granted = sorted(p for p, on in standing.items() if on)
    if sorted(profile.consents or ()) == granted:
        return
    before = to_data(profile_out(profile))
    profile.consents = granted
    profile.save()
    data = to_data(profile_out(profile))
    uow.audit("profile.consents_changed", profile, before=before, after=data)
    uow.emit(event_type("profile", "consents_changed"), profile, data, property_id=property_id)
