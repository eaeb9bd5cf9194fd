"""The active tenant scope: which env the ORM may touch right now.

`TenantModel` refuses to build a query without an active scope (django-scopes' idea, ported to
peewee). `unscoped()` is the escape hatch for cross-env machinery (the outbox relay, migrations,
tests that prove RLS); grep for it in review. `tenant_free()` declares statements that touch no
tenant row at all (a health ping, the migration bookkeeping), so that the strict tenancy check of
the tests (pms.db.database) can tell them from a forgotten scope.
"""

from __future__ import annotations

import uuid
from contextlib import AbstractContextManager
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


class _Scope:
    """Set a context variable for a `with` block and restore it at exit.

    PERF: a small class instead of `@contextmanager` generators: every request and every
    service enters a scope, and a generator-based manager costs several times as much to enter
    and leave. Each call makes a new manager, entered once (like the generators it replaces).
    """

    __slots__ = ("_result", "_token", "_value", "_var")

    def __init__(self, var: ContextVar, value: object, result: object = None) -> None:  # type: ignore[type-arg]
        self._var = var
        self._value = value
        self._result = result  # what `with ... as x` gives
        self._token = None

    def __enter__(self):  # noqa: ANN204
        if self._token is not None:
            raise RuntimeError("a scope is entered once")
        self._token = self._var.set(self._value)
        return self._result

    def __exit__(self, *exc: object) -> None:
        self._var.reset(self._token)


def tenant_scope(env_id: uuid.UUID) -> AbstractContextManager[uuid.UUID]:
    """Make `env_id` the active scope for ORM filters and for the database's `app.env_id`
    (`with tenant_scope(env_id) as env:` gives `env_id` back)."""
    return _Scope(_ENV, env_id, env_id)


def unscoped() -> AbstractContextManager[None]:
    """Turn the ORM tenant filter off. RLS on PostgreSQL still applies."""
    return _Scope(_UNSCOPED, True)


def tenant_free() -> AbstractContextManager[None]:
    """Declare that the block's statements read or write no tenant row (the database sees no
    tenant and row-level security shows nothing, as without the declaration)."""
    return _Scope(_TENANT_FREE, True)
