"""A guest profile's payment methods: references to payments-service tokens.

Only the token's `payment_method_id` and what the payments service reports of it (brand, last
four digits, expiry month and year, asked when it is added) are kept: never a card number or a secret (SPEC rule 3;
bodies that look like card data are refused before they get here). Holder-scoped: a guest
session reaches only its own profile's methods (another profile answers 404). Deleting a
reference never deletes the payments-service token (no call is made).

A reference is kept only when the payments service reports it as the profile's own
(`pms.platform.payments.require_own_method`, asked outside any transaction): else 422 payment_method_not_allowed,
so a stored reference is one the guest's payments accept. A company profile has its own
methods (pms.services.corporate, with their approval): this route refuses it (422
profile_is_company). Where a guest pays, a reference stored on its profile is its own
(`is_stored_method`, pms.services.cashiering.payments.check_own_method).
"""

from __future__ import annotations

import uuid
from typing import Any

from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope, unit_of_work
from pms.errors import AlreadyExists, NotFound, ValidationFailed
from pms.models import GuestPaymentMethod
from pms.platform.payments import PaymentMethodInfo, require_own_method
from pms.schemas import feedback as s
from pms.schemas.common import ListQuery, to_data
from pms.services.catalog.catalog import load_property
from pms.services.profiles.profiles import load_profile


def method_out(row: GuestPaymentMethod) -> s.PaymentMethodOut:
    return s.PaymentMethodOut(id=row.id, profile_id=row.profile_id,
                              payment_method_id=row.payment_method_id, brand=row.brand,
                              last4=row.last4, exp_month=row.exp_month, exp_year=row.exp_year,
                              created_at=row.created_at)


def own_profile(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID) -> Any:
    load_property(property_id)
    if ctx.holder_id is not None and ctx.holder_id != profile_id:
        raise NotFound("no such profile")
    return load_profile(profile_id)


def is_stored_method(profile_id: uuid.UUID, payment_method_id: str) -> bool:
    """Whether the profile holds this reference (verified with the payments service when it
    was added). Call inside a scope."""
    return GuestPaymentMethod.select().where(
        (GuestPaymentMethod.profile == profile_id)
        & (GuestPaymentMethod.payment_method_id == payment_method_id)).exists()


CARD_FIELDS = ("brand", "last4", "exp_month", "exp_year")


def _verify(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID,
            body: s.PaymentMethodIn, payments: Any) -> PaymentMethodInfo:
    """The card the payments service reports for the profile's own method. A card field the
    body sends must be what the service reports (422 payment_method_mismatch naming it): the
    summary a desk or a guest app shows is the service's, never the client's word."""
    with read_scope(ctx):
        profile = own_profile(ctx, property_id, profile_id)
    if profile.kind == "COMPANY":
        raise ValidationFailed(
            "a company profile's payment methods are the company's, with their approval: "
            "POST /companies/{id}/payment-methods", code="profile_is_company")
    info = require_own_method(
        payments, body.payment_method_id, env_id=str(ctx.env_id), holder_id=str(profile_id),
        detail="the payments service does not report this payment method as the profile's",
        message="not a payment method of this profile")
    wrong = [name for name in CARD_FIELDS
             if getattr(body, name) is not None and getattr(body, name) != getattr(info, name)]
    if wrong:
        raise ValidationFailed(
            "the payments service reports another card for this payment method: send only "
            "payment_method_id, or the summary it reports", code="payment_method_mismatch",
            errors=[{"field": name, "message": "not what the payments service reports"}
                    for name in wrong])
    return info


def list_methods(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID,
                 query: ListQuery) -> Page[GuestPaymentMethod]:
    with read_scope(ctx):
        own_profile(ctx, property_id, profile_id)
        return paginate(GuestPaymentMethod.select().where(
            GuestPaymentMethod.profile == profile_id), GuestPaymentMethod,
            limit=query.limit, cursor=query.cursor)


def add_method(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID,
               body: s.PaymentMethodIn, *, payments: Any) -> GuestPaymentMethod:
    """Keep a reference the payments service reports as the profile's.

    Raises:
        NotFound. AlreadyExists (409): the profile holds it already.
        ValidationFailed (422): payment_method_not_allowed (not the profile's, per the
            payments service), payment_method_mismatch (a card field the service contradicts),
            profile_is_company.
        DependencyUnavailable (503): the payments service cannot say.
    """
    card = _verify(ctx, property_id, profile_id, body, payments)
    with lock_errors(), unit_of_work(ctx) as uow:
        own_profile(ctx, property_id, profile_id)
        GuestPaymentMethod.insert(
            profile=profile_id, payment_method_id=body.payment_method_id, brand=card.brand,
            last4=card.last4, exp_month=card.exp_month, exp_year=card.exp_year,
        ).on_conflict_ignore().execute()
        row = GuestPaymentMethod.select().where(
            (GuestPaymentMethod.profile == profile_id)
            & (GuestPaymentMethod.payment_method_id == body.payment_method_id)).get()
        if row.version != 0:  # (a committed row has had its event: version >= 1)
            raise AlreadyExists("the profile already holds this payment method",
                                existing_id=str(row.id))
        uow.record("guest_payment_method", "added", row, to_data(method_out(row)),
                   property_id=property_id)
    return row


def remove_method(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID,
                  payment_method_id: str) -> None:
    """Forget a reference (the payments-service token itself is left alone). Raises NotFound.

    The row is read with its lock (FOR UPDATE): of two removals at once the second waits,
    then finds no row and answers 404 (not an error on a row deleted under it)."""
    with lock_errors(), unit_of_work(ctx) as uow:
        own_profile(ctx, property_id, profile_id)
        row = for_update(GuestPaymentMethod.select().where(
            (GuestPaymentMethod.payment_method_id == payment_method_id)
            & (GuestPaymentMethod.profile == profile_id))).first()
        if row is None:
            raise NotFound("no such payment method")
        uow.record("guest_payment_method", "deleted", row, to_data(method_out(row)),
                   before=to_data(method_out(row)), property_id=property_id)
        GuestPaymentMethod.delete().where(GuestPaymentMethod.id == row.id).execute()
