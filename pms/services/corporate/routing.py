"""The company's contract routing: which folio lines its travelers' stays send to it (by
category and transaction code, with an optional cap). A stay billed to the company without
instructions of its own takes a copy when it is booked or routed
(`pms.services.corporate.company_billing.apply_contract`); the share it computes is
`company_billing.stay_share`."""

from __future__ import annotations

import uuid

from pms.context import Ctx
from pms.db.locking import lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.models import CompanyRoutingInstruction
from pms.schemas.common import to_data
from pms.schemas.companies import RoutingIn, RoutingOut
from pms.services.corporate.companies import company_access


def lower_categories(categories: list[str] | None) -> list[str] | None:
    """Categories compare case-insensitively (a contract says ROOM, a line says room)."""
    return sorted({c.lower() for c in categories}) if categories else None


def _out(company_id: uuid.UUID, row: CompanyRoutingInstruction | None) -> RoutingOut:
    if row is None:
        return RoutingOut(company_profile_id=company_id, categories=None,
                          transaction_codes=None, cap=None)
    return RoutingOut(company_profile_id=company_id, categories=row.categories,
                      transaction_codes=row.transaction_codes, cap=row.cap,
                      updated_at=row.updated_at)


def get_routing(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID) -> RoutingOut:
    """The contract routing (all nulls: the company pays whole folios)."""
    with read_scope(ctx):
        company_access(ctx, property_id, company_id)
        return _out(company_id, CompanyRoutingInstruction.get_or_none(
            CompanyRoutingInstruction.company_profile_id == company_id))


def set_routing(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                body: RoutingIn) -> RoutingOut:
    """Replace the contract routing (staff). Stays already billed keep theirs (route one again
    to change it). Audited, with its event `hotel:pms:company_routing_instruction:set`."""
    with lock_errors(), unit_of_work(ctx) as uow:
        company_access(ctx, property_id, company_id, lock=True)
        row = CompanyRoutingInstruction.get_or_none(
            CompanyRoutingInstruction.company_profile_id == company_id)
        before = None if row is None else to_data(_out(company_id, row))
        if row is None:
            row = CompanyRoutingInstruction.build(company_profile_id=company_id)
            row.categories, row.transaction_codes = None, None
            created = True
        else:
            created = False
        row.categories = lower_categories(body.categories)
        row.transaction_codes = sorted(set(body.transaction_codes or [])) or None
        row.cap = body.cap
        if created:
            row.save(force_insert=True)
        else:
            row.save()
        out = _out(company_id, row)
        uow.record("company_routing_instruction", "set", row, to_data(out), before=before,
                   property_id=property_id)
        return out
