"""`pms-cli outbox status|list|replay|relay`: operate the transactional outbox.

`relay --follow` is the Procfile's `relay` process. `replay` re-publishes chosen rows keeping
their ids (consumers deduplicate on them); `--dry-run` only shows what would go.
"""

from __future__ import annotations

import signal
import threading
import uuid
from datetime import UTC, datetime
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cli.output import console, emit, fail, parse_uuid
from pms.config import Settings, load_settings

app = typer.Typer(help="Outbox operations: status, list, replay, relay.", no_args_is_help=True)

JSON_OPT = typer.Option(False, "--json", help="Print JSON.")
ENV_OPT = typer.Option(None, "--env", help="Only this env (UUID).")


def _settings() -> Settings:
    from pms.db.database import init_db

    settings = load_settings()
    init_db(settings.database_url, pool_size=2)
    return settings


def _uuid(value: str | None, name: str) -> uuid.UUID | None:
    return None if value is None else parse_uuid(value, name)


def _time(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        fail(f"{name} must be an ISO 8601 date or time, not {value!r}", 2)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _filter(ids: list[str] | None, env: str | None, type_: str | None, aggregate: str | None,
            since: str | None, until: str | None, published: bool | None = None) -> Any:
    from pms.services.outbox import EventFilter

    return EventFilter(ids=tuple(_uuid(i, "--id") for i in (ids or [])), env_id=_uuid(env, "--env"),
                       type=type_, aggregate=aggregate, published=published,
                       since=_time(since, "--since"), until=_time(until, "--until"))


@app.command()
def status(env: str = ENV_OPT, json_out: bool = JSON_OPT) -> None:
    """Backlog, oldest unpublished age and failing rows by event type."""
    from pms.services.outbox import outbox_status

    _settings()
    try:
        st = outbox_status(env_id=_uuid(env, "--env"))
    except Exception as exc:  # noqa: BLE001 - report and exit non-zero
        fail(f"cannot read the outbox: {exc}")
    data = st.as_dict()
    if json_out:
        emit(data, as_json=True)
        return
    emit(data, as_json=False, title="Outbox", columns=["metric", "value"], rows=[
        ["backlog (unpublished)", st.backlog], ["due now", st.due],
        ["oldest unpublished age (s)", st.oldest_unpublished_age_s], ["published", st.published]])
    if st.failing:
        emit(data, as_json=False, title="Failing rows by type",
             columns=["type", "rows", "max attempts", "last error"],
             rows=[[f["type"], f["rows"], f["max_attempts"], f["last_error"]] for f in st.failing])


@app.command("list")
def list_(env: str = ENV_OPT,
          type_: str = typer.Option(None, "--type", help="Event type, e.g. hotel:pms:reservation:created."),
          aggregate: str = typer.Option(None, "--aggregate", help="Aggregate id or type."),
          published: bool = typer.Option(None, "--published/--unpublished",
                                         help="Only published or only pending rows."),
          since: str = typer.Option(None, "--since", help="Created at or after (ISO 8601)."),
          until: str = typer.Option(None, "--until", help="Created before (ISO 8601)."),
          limit: int = typer.Option(100, "--limit", min=1, max=10000),
          json_out: bool = JSON_OPT) -> None:
    """List outbox rows, oldest first."""
    from pms.services.outbox import list_events

    _settings()
    rows = list_events(_filter(None, env, type_, aggregate, since, until, published), limit=limit)
    emit(rows, as_json=json_out, title="Outbox rows",
         columns=["id", "env", "type", "subject", "v", "created", "published", "attempts"],
         rows=[[r["id"], r["env_id"][:8], r["type"], r["subject"], r["aggregate_version"],
                r["created_at"], r["published_at"] or "-", r["attempts"]] for r in rows])


@app.command()
def replay(ids: list[str] = typer.Option(None, "--id", help="Row id (repeatable)."),
           env: str = ENV_OPT,
           type_: str = typer.Option(None, "--type", help="Event type."),
           aggregate: str = typer.Option(None, "--aggregate", help="Aggregate id or type."),
           since: str = typer.Option(None, "--since", help="Created at or after (ISO 8601)."),
           until: str = typer.Option(None, "--until", help="Created before (ISO 8601)."),
           dry_run: bool = typer.Option(False, "--dry-run", help="Only show what would go."),
           batch_size: int = typer.Option(500, "--batch-size", min=1, max=5000),
           json_out: bool = JSON_OPT) -> None:
    """Re-publish chosen rows with their original ids (at least one filter is required)."""
    from pms.services import outbox
    from workers.publisher import build_publisher

    settings = _settings()
    flt = _filter(ids, env, type_, aggregate, since, until)
    try:
        chosen = outbox.select_for_replay(flt)
    except ValueError as exc:
        fail(str(exc), 2)
    if dry_run:
        rows = outbox.list_events(outbox.EventFilter(ids=tuple(chosen)), limit=len(chosen) or 1)
        emit({"dry_run": True, "count": len(chosen), "rows": rows}, as_json=json_out,
             title=f"Would re-publish {len(chosen)} rows", columns=["id", "type", "subject"],
             rows=[[r["id"], r["type"], r["subject"]] for r in rows])
        return
    outbox.requeue(chosen)
    publisher = build_publisher(settings)
    published, failed, broker_error = 0, 0, None
    with Progress(TextColumn("replay"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, disable=json_out) as progress:
        task = progress.add_task("replay", total=len(chosen))
        for start in range(0, len(chosen), batch_size):
            chunk = chosen[start:start + batch_size]
            result = outbox.relay_batch(publisher, limit=len(chunk), ids=chunk)
            published += result.published
            failed += result.failed
            progress.advance(task, result.claimed)
            if result.broker_error:
                broker_error = result.broker_error
                break
    getattr(publisher, "close", lambda: None)()
    summary = {"selected": len(chosen), "published": published, "failed": failed,
               "broker_error": broker_error}
    emit(summary, as_json=json_out, title="Replay", columns=["selected", "published", "failed",
                                                             "broker error"],
         rows=[[len(chosen), published, failed, broker_error or "-"]])
    if broker_error or published < len(chosen):
        raise typer.Exit(1)


@app.command()
def relay(once: bool = typer.Option(False, "--once", help="Publish what is due, then exit."),
          follow: bool = typer.Option(False, "--follow", help="Keep relaying (the relay process)."),
          env: str = ENV_OPT,
          batch_size: int = typer.Option(500, "--batch-size", min=1, max=5000),
          audit: bool = typer.Option(True, "--audit/--no-audit", help="Also push audit rows."),
          json_out: bool = JSON_OPT) -> None:
    """Relay outbox rows to the event bus: `--once`, or `--follow` until SIGTERM/SIGINT."""
    if once == follow:
        fail("choose exactly one of --once or --follow", 2)
    settings = _settings()
    from workers import actors
    from workers.broker import is_stub
    from workers.publisher import build_publisher
    from workers.relay import OutboxRelay
    from workers.subscriptions import default_subscribers

    stop = threading.Event()
    worker = None
    if is_stub(settings):
        import dramatiq

        worker = dramatiq.Worker(actors.broker, worker_threads=2, worker_timeout=100)
        worker.start()
    from datetime import timedelta

    relay_ = OutboxRelay(build_publisher(settings), batch_size=batch_size,
                         subscribers=default_subscribers(), push_audit=audit,
                         env_id=_uuid(env, "--env"),
                         retention=timedelta(days=settings.outbox_retention_days))
    try:
        if once:
            totals = relay_.run_once()
            if worker is not None:
                for queue in list(actors.broker.get_declared_queues()):
                    actors.broker.join(queue, fail_fast=False)
            emit(totals.as_dict(), as_json=json_out, title="Relay",
                 columns=["claimed", "published", "failed", "audit pushed", "broker error"],
                 rows=[[totals.claimed, totals.published, totals.failed, totals.audit_pushed,
                        totals.broker_error or "-"]])
            if totals.broker_error:
                raise typer.Exit(1)
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        console.print(f"relaying to {settings.event_exchange} ({settings.broker_url.split('@')[-1]});"
                      " Ctrl-C to stop", highlight=False)
        relay_.run_forever(stop)
    finally:
        if worker is not None:
            worker.stop()
