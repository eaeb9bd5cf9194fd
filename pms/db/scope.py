"""The active tenant scope: which env the ORM may touch right now.

`TenantModel` refuses to build a query without an active scope (django-scopes' idea, ported to
peewee). `unscoped()` is the escape hatch for cross-env machinery (the outbox relay, migrations,
tests that prove RLS); grep for it in review. `tenant_free()` declares statements that touch no
tenant row at all (a health ping, the migration bookkeeping), so that the strict tenancy check of
the tests (pms.db.database) can tell them from a forgotten scope.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_ENV: ContextVar[uuid.UUID | None] = ContextVar("pms_env_scope", default=None)
_UNSCOPED: ContextVar[bool] = ContextVar("pms_unscoped", default=False)
_TENANT_FREE: ContextVar[bool] = ContextVar("pms_tenant_free", default=False)


class ScopeError(RuntimeError):
    """Raised when a tenant table is queried without an active tenant scope."""


def current_env() -> uuid.UUID | None:
    return _ENV.get()


def is_unscoped() -> bool:
    return _UNSCOPED.get()


def is_tenant_free() -> bool:
    return _TENANT_FREE.get()


def require_env() -> uuid.UUID:
    env = _ENV.get()
    if env is None:
        raise ScopeError("no tenant scope is active: wrap the work in tenant_scope(env_id)")
    return env


@contextmanager
def tenant_scope(env_id: uuid.UUID) -> Iterator[uuid.UUID]:
    """Make `env_id` the active scope for ORM filters and for the database's `app.env_id`."""
    token = _ENV.set(env_id)
    try:
        yield env_id
    finally:
        _ENV.reset(token)


@contextmanager
def unscoped() -> Iterator[None]:
    """Turn the ORM tenant filter off. RLS on PostgreSQL still applies."""
    token = _UNSCOPED.set(True)
    try:
        yield
    finally:
        _UNSCOPED.reset(token)


@contextmanager
def tenant_free() -> Iterator[None]:
    """Declare that the block's statements read or write no tenant row (the database sees no
    tenant and row-level security shows nothing, as without the declaration)."""
    token = _TENANT_FREE.set(True)
    try:
        yield
    finally:
        _TENANT_FREE.reset(token)
