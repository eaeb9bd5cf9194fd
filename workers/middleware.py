"""Dramatiq middleware: the tenant context and the database connection of each message.

Messages carry `env_id` as a keyword argument (actors take ids and env_id only). Before a message
runs, `TenantContextMiddleware` makes a system `Ctx` for that env (request id = message id) and
sets the tenant scope; `DbConnectionMiddleware` binds the database at process boot and opens /
closes the connection around each message (peewee's framework-integration pattern).
"""

from __future__ import annotations

import inspect
import uuid
from contextvars import ContextVar
from typing import Any

import dramatiq

from pms.config import Settings
from pms.context import Ctx, system_ctx
from pms.db import scope

_CTX: ContextVar[Ctx | None] = ContextVar("pms_worker_ctx", default=None)


def current_ctx() -> Ctx:
    """The context of the message being processed (RuntimeError outside a tenant message)."""
    ctx = _CTX.get()
    if ctx is None:
        raise RuntimeError("no tenant message is being processed")
    return ctx


class TenantContextMiddleware(dramatiq.Middleware):
    """env_id from the message -> Ctx + tenant scope for the duration of the message."""

    def __init__(self) -> None:
        self._positions: dict[str, int | None] = {}

    def _env_position(self, broker: dramatiq.Broker, actor_name: str) -> int | None:
        if actor_name not in self._positions:
            try:
                fn = broker.get_actor(actor_name).fn
                names = list(inspect.signature(fn).parameters)
                self._positions[actor_name] = names.index("env_id") if "env_id" in names else None
            except Exception:  # noqa: BLE001 - unknown actor: no tenant
                self._positions[actor_name] = None
        return self._positions[actor_name]

    def before_process_message(self, broker: dramatiq.Broker, message: dramatiq.Message) -> None:
        env = message.kwargs.get("env_id")
        if env is None:
            position = self._env_position(broker, message.actor_name)
            if position is not None and position < len(message.args):
                env = message.args[position]
        if env is None:
            message.options["pms_tokens"] = None
            return
        ctx = system_ctx(uuid.UUID(str(env)), sub=f"worker:{message.actor_name}",
                         request_id=message.message_id)
        message.options["pms_tokens"] = (_CTX.set(ctx), scope._ENV.set(ctx.env_id))

    def _reset(self, message: dramatiq.Message) -> None:
        tokens = message.options.pop("pms_tokens", None)
        if tokens:
            ctx_token, env_token = tokens
            scope._ENV.reset(env_token)
            _CTX.reset(ctx_token)

    def after_process_message(self, broker: dramatiq.Broker, message: dramatiq.Message, *,
                              result: Any = None, exception: BaseException | None = None) -> None:
        self._reset(message)

    def after_skip_message(self, broker: dramatiq.Broker, message: dramatiq.Message) -> None:
        self._reset(message)


class DbConnectionMiddleware(dramatiq.Middleware):
    """Bind the database at boot; connect before and close after every message."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def _ensure_bound(self) -> None:
        from pms.db.database import db, init_db

        if db.obj is None:
            init_db(self.settings.database_url, pool_size=self.settings.db_pool_size,
                    statement_timeout_ms=self.settings.limits.statement_timeout_ms)

    def after_process_boot(self, broker: dramatiq.Broker) -> None:
        self._ensure_bound()

    def before_process_message(self, broker: dramatiq.Broker, message: dramatiq.Message) -> None:
        from pms.db.database import db

        self._ensure_bound()
        db.connect(reuse_if_open=True)

    def _close(self) -> None:
        from pms.db.database import db

        if db.obj is not None and not db.is_closed() and not db.in_transaction():
            db.close()

    def after_process_message(self, broker: dramatiq.Broker, message: dramatiq.Message, *,
                              result: Any = None, exception: BaseException | None = None) -> None:
        self._close()

    def after_skip_message(self, broker: dramatiq.Broker, message: dramatiq.Message) -> None:
        self._close()
