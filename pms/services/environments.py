"""Initialize a tenant env from the platform's service-updated events (idempotent).

First event for an env: one row with the default lists of values and module settings, its audit
row and a `hotel:pms:environment:initialized` event; in the same transaction the lists of values
(`lov_entry`) and the module settings document are seeded, missing rows only. Then, outside the transaction, the ledger's
folio-settlement accounts are ensured (created on demand and idempotently by the ledger service);
the outcome is recorded in a second short unit of work. A ledger outage leaves the env
initialized with `ledger_accounts_ready = false` and the error recorded: the next event for the
env, or `pms-cli platform init`, tries again. Repeats change nothing once everything is ready.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass
from typing import Any

from pms.context import Ctx, system_ctx
from pms.db.locking import for_update
from pms.db.uow import read_scope, unit_of_work
from pms.errors import DependencyUnavailable
from pms.events import event_type
from pms.models.environment import EnvironmentSetup
from pms.schemas.settings import DEFAULT_MODULES
from pms.services.catalog.lov import SEEDED_LISTS, seed_lists
from pms.services.catalog.settings import seed_modules

# the lists seeded as `lov_entry` rows (pms/services/catalog/lov.py), one place for both
DEFAULT_LISTS_OF_VALUES: dict[str, list[str]] = {
    name.replace("-", "_"): [item.code for item in items] for name, items in SEEDED_LISTS.items()}
# the module schemas' defaults (pms/schemas/settings.py), one place for both
DEFAULT_MODULE_SETTINGS: dict[str, dict[str, Any]] = DEFAULT_MODULES


@dataclass(frozen=True)
class InitResult:
    env_id: uuid.UUID
    created: bool
    ledger_accounts_ready: bool
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"env_id": str(self.env_id), "created": self.created,
                "ledger_accounts_ready": self.ledger_accounts_ready, "error": self.error}


def _out(row: EnvironmentSetup) -> dict[str, Any]:
    return {"env_id": str(row.env_id), "initialized_at": row.initialized_at.isoformat(),
            "lists_of_values": row.lists_of_values, "module_settings": row.module_settings,
            "ledger_accounts_ready": row.ledger_accounts_ready,
            "ledger_accounts": row.ledger_accounts}


def get_environment(ctx: Ctx) -> EnvironmentSetup | None:
    with read_scope(ctx):
        return EnvironmentSetup.get_or_none()


def initialize_environment(env_id: uuid.UUID, *, ledger: Any,
                           source_event_id: str | None = None) -> InitResult:
    """Create the env's defaults once and make sure its ledger settlement accounts exist.

    Args:
        ledger: the platform ledger client (`ensure_settlement_accounts(env_id)`), or None
            while no ledger client is configured: the env is then recorded as needing accounts.
        source_event_id: the platform event that asked for it (kept for tracing).
    Raises:
        nothing for a ledger outage (recorded on the row; see module docstring).
    """
    ctx = system_ctx(env_id, sub="platform-events")
    created = False
    with unit_of_work(ctx) as uow:
        row = for_update(EnvironmentSetup.select()).first()
        if row is None:
            row = EnvironmentSetup.create(
                initialized_at=ctx.now, source_event_id=source_event_id,
                lists_of_values=copy.deepcopy(DEFAULT_LISTS_OF_VALUES),
                module_settings=copy.deepcopy(DEFAULT_MODULE_SETTINGS))
            created = True
        # the env's lists of values and default module settings as rows, missing ones
        # only (an env initialized before them gets them with its next event)
        seeded = seed_lists(ctx) + int(seed_modules(ctx))
        if created:
            data = _out(row)
            uow.audit("environment.initialized", row, after=data)
            uow.emit(event_type("environment", "initialized"), row, data)
        elif seeded:
            data = {**_out(row), "defaults_added": seeded}
            uow.audit("environment.defaults_seeded", row, after=data)
            uow.emit(event_type("environment", "defaults_seeded"), row, data)
        ready = row.ledger_accounts_ready
    if ready:
        return InitResult(env_id, created, True)
    return _ensure_ledger_accounts(ctx, ledger, created)


def _ensure_ledger_accounts(ctx: Ctx, ledger: Any, created: bool) -> InitResult:
    error: str | None = None
    accounts: dict[str, str] | None = None
    if ledger is None:
        error = "no ledger client configured: settlement accounts pending"
    else:
        try:
            accounts = dict(ledger.ensure_settlement_accounts(ctx.env_id))
        except DependencyUnavailable as exc:
            error = f"ledger unavailable: {exc.detail}"
    with unit_of_work(ctx) as uow:
        row = for_update(EnvironmentSetup.select()).first()
        if accounts is not None and not row.ledger_accounts_ready:
            before = _out(row)
            row.ledger_accounts_ready = True
            row.ledger_accounts = accounts
            row.last_error = None
            row.save()
            data = _out(row)
            uow.audit("environment.ledger_accounts_ready", row, before=before, after=data)
            uow.emit(event_type("environment", "ledger_accounts_ready"), row, data)
        elif error is not None and row.last_error != error:
            # Operational state only (no domain change): no event, the journal keeps the reason.
            row.last_error = error
            row.save()
            uow.audit("environment.ledger_accounts_pending", row, reason=error)
    return InitResult(ctx.env_id, created, accounts is not None, error)
