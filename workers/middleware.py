"""How an actor's body gets its tenant and its database connection: `@tenant_actor`.

Every actor of this service acts inside one tenant env, named by the first argument of its
message (`env_id`). `tenant_actor` makes that visible where the actor is defined: the body's first
parameter is `ctx`, and the wrapper Dramatiq runs takes `env_id` in its place, builds the system
`Ctx` (request id = the message id), opens `pms.db.scope.tenant_scope(env_id)` and one database
connection scope around the body, and closes both when the body returns or raises. A body whose
first parameter is not `ctx` is refused when the module is imported, so an actor can never run
without a tenant because someone renamed a parameter.

`WorkerBoot` is the middleware half: it wires the worker process once, at boot (see
workers.boot.wire_worker). Nothing here runs at import.
"""

from __future__ import annotations

import functools
import inspect
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import dramatiq
from dramatiq.middleware import CurrentMessage

from pms.config import Settings
from pms.context import Ctx, system_ctx
from pms.db.scope import tenant_scope

TENANT_PARAMETER = "ctx"


@contextmanager
def message_connection() -> Iterator[None]:
    """One database connection scope for one message (pms.db.database.connection_scope: the
    first statement opens it, the end of the message releases it). A transaction a failed body
    left open is rolled back first, so a claim or a row lock never outlives its message."""
    from pms.db.database import connection_scope, db

    with connection_scope():
        try:
            yield
        finally:
            if db.in_transaction():
                db.rollback()


def message_ctx(env_id: uuid.UUID, actor_name: str) -> Ctx:
    """The system context of a message: a machine actor in `env_id`; request id = message id
    (stored on the audit rows the message writes)."""
    message = CurrentMessage.get_current_message()
    return system_ctx(env_id, sub=f"worker:{actor_name}",
                      request_id=message.message_id if message is not None else None)


def _check_signature(fn: Callable[..., Any]) -> None:
    names = list(inspect.signature(fn).parameters)
    if not names or names[0] != TENANT_PARAMETER:
        raise TypeError(
            f"@tenant_actor {fn.__module__}.{fn.__qualname__}: the first parameter must be "
            f"`{TENANT_PARAMETER}: Ctx` (the message's env_id becomes it), got {names[:1]}")


def tenant_actor(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """`@tenant_actor(max_retries=..., time_limit=..., throws=...)` over `def body(ctx, ...)`.

    The actor is sent as `actor.send(env_id, *rest)` (env_id as a str, the rest JSON
    primitives); the body runs as `body(ctx, *rest)` in the tenant scope of env_id with one
    connection scope around it.

    Raises:
        TypeError: at decoration, when the body's first parameter is not `ctx`.
    """
    def decorate(body: Callable[..., Any]) -> dramatiq.Actor[Any, Any]:
        _check_signature(body)
        name = options.pop("actor_name", body.__name__)

        @functools.wraps(body)
        def run(env_id: str, *args: Any, **kwargs: Any) -> Any:
            ctx = message_ctx(uuid.UUID(str(env_id)), name)
            with tenant_scope(ctx.env_id), message_connection():
                return body(ctx, *args, **kwargs)

        # Dramatiq never introspects the signature; drop the wrapped one so that nothing else
        # does and sees `ctx` where the message carries env_id.
        del run.__wrapped__
        run.__signature__ = _wire_signature(body)  # type: ignore[attr-defined]
        return dramatiq.actor(run, actor_name=name, **options)

    return decorate(fn) if fn is not None else decorate


def _wire_signature(body: Callable[..., Any]) -> inspect.Signature:
    signature = inspect.signature(body)
    params = list(signature.parameters.values())
    env = inspect.Parameter("env_id", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="str")
    return signature.replace(parameters=[env, *params[1:]])


class WorkerBoot(dramatiq.Middleware):
    """Wires a worker process once, after it booted (the `worker` process type; the embedded
    runtime wires itself in workers.runtime.start_embedded)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def after_process_boot(self, broker: dramatiq.Broker) -> None:
        from workers.boot import wire_worker

        wire_worker(self.settings)
