"""Guest and company profiles: create-or-ensure, loyalty number.

Staff ensure any profile by email or external reference. A holder session (guest or traveler
token) only ever ensures, reads and changes its own profile, the one whose id is its holder_id:
a body naming another guest's email never returns that guest's profile.
"""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
import peewee

from pms.context import Ctx
from pms.db.locking import for_update
from pms.db.uow import read_scope, unit_of_work
from pms.domain.vat_ids import check_vat_id
from pms.errors import Conflict, NotFound, ValidationFailed
from pms.events import event_type
from pms.models import Profile
from pms.schemas.common import to_data
from pms.schemas.profiles import LoyaltyNumberIn, ProfileIn, profile_out
from pms.services.catalog.catalog import load_property
from pms.services.profiles import profile_store
from pms.services.rates.negotiated_plans import authorize_links, require_negotiated


def _check(body: ProfileIn) -> None:
    if body.kind == "GUEST" and not (body.last_name or body.first_name):
        raise ValidationFailed("a guest profile needs a name",
                               errors=[{"field": "last_name", "message": "required for GUEST"}])
    if body.kind == "COMPANY" and not body.company_name:
        raise ValidationFailed("a company profile needs company_name",
                               errors=[{"field": "company_name", "message": "required for COMPANY"}])
    if body.preferences.vat_id:
        check_vat_id(body.preferences.vat_id, "preferences.vat_id")


def _check_holder_body(body: ProfileIn) -> None:
    """What a holder may not set on its own profile: the corporate settings staff decide."""
    errors = []
    if body.kind != "GUEST":
        errors.append({"field": "kind", "message": "a guest session creates GUEST profiles only"})
    if body.preferences.negotiated_rate_plan_ids or body.preferences.sso_provider:
        errors.append({"field": "preferences", "message": "negotiated_rate_plan_ids and "
                       "sso_provider are set by staff"})
    if errors:
        raise ValidationFailed("a guest session may not set these fields",
                               code="field_not_allowed", errors=errors)


def ensure_profile(ctx: Ctx, property_id: uuid.UUID, body: ProfileIn) -> tuple[Profile, bool]:
    """Create a profile, or return the one with the same email or external reference.

    For a holder session the profile is always the holder's own (id = holder_id): returned
    when it exists, whatever the body says, else created with that id.

    Returns:
        (profile, created): created is False when an existing profile was returned.
    Raises:
        NotFound: no such property. ValidationFailed: missing name, unknown rate plan ids,
            (holder) corporate fields. Conflict (409 profile_conflict, holder only): the email
            or external_ref is another profile's (its data is never shown).
    """
    _check(body)
    if ctx.holder_id is not None:
        return _ensure_own_profile(ctx, property_id, body, ctx.holder_id)
    with read_scope(ctx):
        existing = profile_store.property_and_existing(property_id, body)
    if existing is not None:
        return existing, False
    return _create(ctx, property_id, body, None)


def _ensure_own_profile(ctx: Ctx, property_id: uuid.UUID, body: ProfileIn,
                        holder_id: uuid.UUID) -> tuple[Profile, bool]:
    _check_holder_body(body)
    with read_scope(ctx):
        load_property(property_id)
        own = Profile.get_or_none(Profile.id == holder_id)
    if own is not None:
        return own, False
    try:
        return _create(ctx, property_id, body, holder_id)
    except peewee.IntegrityError:
        with read_scope(ctx):
            own = Profile.get_or_none(Profile.id == holder_id)
        if own is not None:  # a concurrent ensure of the same holder won
            return own, False
        # NOTE: the unique email / external_ref index refused it: another profile has it.
        # Say so without showing anything of that profile.
        raise Conflict("the email or external_ref is already in use by another profile",
                       code="profile_conflict") from None


class _Taken(Exception):
    """Internal: the new profile's email, external reference or id is another row's."""


def _create(ctx: Ctx, property_id: uuid.UUID, body: ProfileIn,
            profile_id: uuid.UUID | None) -> tuple[Profile, bool]:
    try:
        with unit_of_work(ctx) as uow:
            row = create_in(uow, property_id, body, profile_id)
            if row is None:
                raise _Taken
        return row, True
    except (_Taken, peewee.IntegrityError) as exc:
        if profile_id is not None:
            raise peewee.IntegrityError("profile taken") from None
        # A concurrent request created it first (unique email / external ref): ensure = return it.
        with read_scope(ctx):
            existing = profile_store.find_existing(body)
        if existing is None:
            if isinstance(exc, peewee.IntegrityError):
                raise  # not a unique key of ours (a bug or a failing trigger): a 500
            # the row that refused ours is gone again: say so, a retry is safe
            raise Conflict("a concurrent change took this profile's email or external_ref; "
                           "retry", code="profile_conflict") from None
        return existing, False


def create_in(uow: Any, property_id: uuid.UUID, body: ProfileIn,
              profile_id: uuid.UUID | None = None) -> Profile | None:
    """The profile create inside the caller's unit of work: the row, its audit row and its
    `hotel:pms:profile:created` event; None (nothing written) when its email, external
    reference or id is another row's (the caller finds that row or refuses)."""
    # every id a negotiated plan of the env (the rate fence), linked with the permission a
    # link needs at its plan's property (the profile's path is one property, a plan another's)
    authorize_links(uow.ctx, require_negotiated(body.preferences.negotiated_rate_plan_ids,
                                                "preferences.negotiated_rate_plan_ids"))
    row = Profile.build(
        **({"id": profile_id} if profile_id is not None else {}),
        kind=body.kind, first_name=body.first_name, last_name=body.last_name,
        company_name=body.company_name, email=body.email,
        email_normalized=body.email.strip().lower() if body.email else None,
        phone=body.phone, external_ref=body.external_ref, language=body.language,
        address=msgspec.to_builtins(body.address) if body.address else None,
        preferences=_preferences(body),
        origin_property_id=property_id, version=1,
    )
    if not profile_store.insert_new(row):
        return None
    data = to_data(profile_out(row))
    uow.audit("profile.created", row, after=data)
    uow.emit(event_type("profile", "created"), row, data, property_id=property_id)
    return row


def _preferences(body: ProfileIn) -> dict[str, Any]:
    prefs = msgspec.to_builtins(body.preferences)
    if prefs.get("vat_id"):
        prefs["vat_id"] = check_vat_id(prefs["vat_id"], "preferences.vat_id")
    return prefs


def load_profile(profile_id: uuid.UUID, *, lock: bool = False) -> Profile:
    query = Profile.select().where(Profile.id == profile_id)
    row = (for_update(query) if lock else query).first()
    if row is None:
        raise NotFound("no such profile")
    return row


def get_profile(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID) -> Profile:
    with read_scope(ctx):
        load_property(property_id)
        if ctx.holder_id is not None and ctx.holder_id != profile_id:
            raise NotFound("no such profile")
        return load_profile(profile_id)


def set_loyalty_number(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID,
                       body: LoyaltyNumberIn) -> Profile:
    """Set (or replace) the loyalty number. Raises NotFound."""
    with unit_of_work(ctx) as uow:
        load_property(property_id)
        if ctx.holder_id is not None and ctx.holder_id != profile_id:
            raise NotFound("no such profile")
        row = load_profile(profile_id, lock=True)
        before = to_data(profile_out(row))
        row.loyalty_number = body.loyalty_number
        row.save()
        data = to_data(profile_out(row))
        uow.audit("profile.loyalty_number_set", row, before=before, after=data)
        uow.emit(event_type("profile", "loyalty_number_set"), row, data, property_id=property_id)
    return row
