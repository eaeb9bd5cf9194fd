"""`wire_worker(settings)`: what the `worker` process type wires once, after Dramatiq booted it.

A leaf (it imports nothing of workers/): `workers.middleware.WorkerBoot` calls it from the
broker's middleware, and the broker is built by the actors module, which workers.runtime
imports, so living in workers.runtime would close an import cycle.
"""

from __future__ import annotations

from pms.config import Settings


def wire_worker(settings: Settings) -> None:
    """The `worker` process: bind the database (once; a process that bound it already keeps
    its binding) and take the calendar horizon of its settings. Actors open their own tenant
    and connection scope per message (`@tenant_actor`); nothing else is registered."""
    from pms import wiring
    from pms.db.database import db, init_db

    wiring.set_calendar_horizon(settings.calendar_horizon_days)  # the night audit's job

    if db.obj is None:
        init_db(settings.database_url, pool_size=settings.db_pool_size,
                statement_timeout_ms=settings.limits.statement_timeout_ms)
