"""`pms-cli platform consume|init`: platform events (the Procfile's `platform` process)."""

from __future__ import annotations

import signal
import threading

import typer

from cli.output import (
    console,
    emit,
    fail,
    leave_command_scope,
    open_database,
    parse_uuid,
    refuse_to_serve,
)
from pms.config import load_settings
from pms.startup import PLATFORM_ONLY

app = typer.Typer(help="Platform events: consume service-updated events, initialize an env.",
                  no_args_is_help=True)

DEFAULT_QUEUE = "hotel-pms.platform-events"


def _ledger(settings):  # noqa: ANN001, ANN202
    from pms.platform import build_platform

    return getattr(build_platform(settings), "ledger", None)


@app.command()
def consume(queue: str = typer.Option(DEFAULT_QUEUE, "--queue", help="Durable queue name."),
            idle_timeout: float = typer.Option(None, "--idle-timeout",
                                               help="Exit after this many idle seconds."),
            max_messages: int = typer.Option(None, "--max-messages", min=1,
                                             help="Exit after this many messages."),
            json_out: bool = typer.Option(False, "--json", help="Print a JSON summary at exit.")
            ) -> None:
    """Consume platform service-updated events and initialize envs (manual acks, DLQ)."""
    from pms.services.environments import initialize_environment
    from workers.consumer import PlatformEventConsumer

    settings = load_settings()
    refuse_to_serve(settings, "the platform consumer", PLATFORM_ONLY)
    if not settings.broker_url.startswith(("amqp://", "amqps://")):
        fail("platform consume needs PMS_BROKER_URL=amqp://... (the embedded stub:// has no bus)", 2)
    open_database(settings)
    ledger = _ledger(settings)
    leave_command_scope()  # each message owns its connection (pms.db.iteration)
    consumer = PlatformEventConsumer(
        settings.broker_url, settings.event_exchange, queue,
        lambda env_id, event_id: initialize_environment(env_id, ledger=ledger,
                                                        source_event_id=event_id),
        source=settings.platform_event_source, queue_type=settings.broker_queue_type)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if not json_out:
        console.print(f"consuming {queue} <- {settings.event_exchange} platform.service.updated.#",
                      highlight=False)
    try:
        stats = consumer.run(stop, max_messages=max_messages, idle_timeout=idle_timeout)
    except Exception as exc:  # noqa: BLE001 - e.g. broker unreachable: exit non-zero
        fail(f"consumer stopped: {type(exc).__name__} {exc}")
    emit(stats.as_dict(), as_json=json_out, title="Platform events",
         columns=["handled", "ignored", "retried", "dead-lettered"],
         rows=[[stats.handled, stats.ignored, stats.retried, stats.dead_lettered]])


@app.command()
def init(env: str = typer.Option(..., "--env", help="The env id (UUID)."),
         json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Initialize one env now (defaults + ledger settlement accounts); idempotent."""
    from pms.services.environments import initialize_environment

    env_id = parse_uuid(env)
    settings = load_settings()
    open_database(settings)
    result = initialize_environment(env_id, ledger=_ledger(settings), source_event_id="cli")
    emit(result.as_dict(), as_json=json_out, title="Environment",
         columns=["env", "created", "ledger accounts ready", "error"],
         rows=[[str(env_id), result.created, result.ledger_accounts_ready, result.error or "-"]])
    if not result.ledger_accounts_ready:
        raise typer.Exit(1)
