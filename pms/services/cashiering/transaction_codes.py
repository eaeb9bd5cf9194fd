"""Transaction codes per property: code, category, tax rules and ledger account.

Create/read/update/delete go through the catalog's generic property-child path (one unit of work
each, with outbox and audit rows); this module describes the kind and validates the tax rules.
"""

from __future__ import annotations

import uuid
from typing import Any

from pms.db.base import AggregateModel
from pms.domain.tax import TaxRule, parse_rules
from pms.errors import NotFound, ValidationFailed
from pms.models.cashiering import TransactionCode
from pms.models.property import Property
from pms.schemas.cashiering import transaction_code_out
from pms.services.catalog.catalog import Kind


def _check_rules(prop: Property, values: dict[str, Any], row: AggregateModel | None) -> None:
    rules = values.get("tax_rules")
    if rules is None:
        return
    try:
        parsed = parse_rules(rules)
    except ValidationFailed as exc:
        raise ValidationFailed(exc.detail, errors=[{"field": "tax_rules",
                                                    "message": exc.detail}]) from exc
    if len({r.code for r in parsed}) != len(parsed):
        raise ValidationFailed("tax rule codes must be unique within a transaction code",
                               errors=[{"field": "tax_rules", "message": "duplicate code"}])


TRANSACTION_CODE = Kind(
    TransactionCode, "transaction_code", "transaction code", transaction_code_out,
    {"code": "code", "name": "name", "category": "category", "tax_rules": "tax_rules",
     "ledger_account": "ledger_account", "active": "active"}, _check_rules)


def load_code(property_id: uuid.UUID, code: str) -> TransactionCode:
    """An active transaction code of the property (call inside a scope).

    Raises:
        ValidationFailed: no such active code (422, field transaction_code).
    """
    row = TransactionCode.select().where(
        (TransactionCode.property == property_id) & (TransactionCode.code == code)
        & (TransactionCode.active == True)).first()  # noqa: E712
    if row is None:
        raise unknown_code(code)
    return row


def unknown_code(code: str) -> ValidationFailed:
    """The 422 of a transaction code that is not an active code of the property."""
    return ValidationFailed(f"unknown transaction code {code}",
                            errors=[{"field": "transaction_code", "message": "unknown or inactive"}])


def rules_of(code: TransactionCode) -> list[TaxRule]:
    return parse_rules(code.tax_rules)


def code_or_none(property_id: uuid.UUID, code: str) -> TransactionCode | None:
    try:
        return load_code(property_id, code)
    except (ValidationFailed, NotFound):
        return None
