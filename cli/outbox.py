"""`pms-cli outbox status|list|replay|relay`: operate the transactional outbox.

`relay --follow` is the Procfile's `relay` process. `replay` re-publishes chosen rows keeping
their ids (consumers deduplicate on them), parked rows included; `--dry-run` only shows what
would go. Every command holds one connection scope for its work, but `relay --follow`, whose every
sweep owns its connection (pms.db.iteration).
"""

from __future__ import annotations

import signal
import threading
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli.output import (
    console,
    emit,
    fail,
    leave_command_scope,
    open_database,
    parse_uuid,
    print_json,
    refuse_to_serve,
)
from pms.config import Settings, load_settings
from pms.startup import PLATFORM_ONLY

app = typer.Typer(help="Outbox operations: status, list, replay, relay.", no_args_is_help=True)

JSON_OPT = typer.Option(False, "--json", help="Print JSON.")
ENV_OPT = typer.Option(None, "--env", help="Only this env (UUID).")


def _settings() -> Settings:
    settings = load_settings()
    open_database(settings, pool_size=2)
    return settings


def _scope() -> Any:
    from workers.relay import connection_scope

    return connection_scope()


def _uuid(value: str | None, name: str) -> uuid.UUID | None:
    return None if value is None else parse_uuid(value, name)


def _time(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        fail(f"{name} must be an ISO 8601 date or time, not {value!r}", 2)
        raise  # unreachable: fail() exits
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _filter(ids: list[str] | None, env: str | None, type_: str | None, aggregate: str | None,
            since: str | None, until: str | None, published: bool | None = None,
            parked: bool = False) -> Any:
    from pms.relay.operations import EventFilter

    return EventFilter(ids=tuple(_uuid(i, "--id") for i in (ids or [])), env_id=_uuid(env, "--env"),
                       type=type_, aggregate=aggregate, published=published, parked=parked,
                       since=_time(since, "--since"), until=_time(until, "--until"))


def _short(text: str | None, width: int) -> str:
    if not text:
        return "-"
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1] + "…"


_STATE_LABELS = {"reactions_pending": "reacting", "reactions_parked": "r-parked"}


def _rows_table(title: str, rows: list[dict[str, Any]]) -> Table:
    """Outbox rows readable from 80 columns up, one line per row: short ids and times, no
    wrapping; the type and the error are cut to what the terminal leaves (`--json` has all)."""
    types = [r["type"].removeprefix("hotel:pms:") for r in rows]
    type_width = min(max([len(t) for t in types] + [4]), 32)
    # id 8, v 3, created 14, state 9, try 3, and two spaces between each pair of 7 columns
    error_width = max(console.width - (8 + type_width + 3 + 14 + 9 + 3) - 12 - 1, 8)
    table = Table(title=title, box=None, pad_edge=False, padding=(0, 1),
                  header_style="bold")
    for name, width in (("id", 8), ("type", type_width), ("v", 3), ("created", 14),
                        ("state", 9), ("try", 3), ("last error", error_width)):
        table.add_column(name, no_wrap=True, overflow="ellipsis", max_width=width,
                         justify="right" if name in ("v", "try") else "left")
    for r, type_ in zip(rows, types, strict=True):
        created = r["created_at"][5:19].replace("T", " ") if r["created_at"] else "-"
        table.add_row(r["id"][:8], _short(type_, type_width), str(r["aggregate_version"]),
                      created, _STATE_LABELS.get(r["state"], r["state"]),
                      str(r["attempts"] or r["dispatch_attempts"]),
                      _short(r["last_error"], error_width))
    return table


@app.command()
def status(env: str = ENV_OPT, json_out: bool = JSON_OPT) -> None:
    """Backlog, parked rows, pending reactions, oldest unpublished age, failures by type."""
    from pms.relay.operations import outbox_status

    _settings()
    try:
        with _scope():
            st = outbox_status(env_id=_uuid(env, "--env"))
    except Exception as exc:  # noqa: BLE001 - report and exit non-zero
        fail(f"cannot read the outbox: {exc}")
        raise  # unreachable: fail() exits
    data = st.as_dict()
    if json_out:
        print_json(data)
        return
    emit(data, as_json=False, title="Outbox", columns=["metric", "value"], rows=[
        ["backlog (unpublished)", st.backlog], ["due now", st.due],
        ["oldest unpublished age (s)", st.oldest_unpublished_age_s], ["published", st.published],
        ["parked (see list --parked)", st.parked], ["reactions pending", st.dispatch_pending],
        ["reactions parked", st.dispatch_parked]])
    if st.failing:
        table = Table(title="Failing rows by type")
        for name in ("type", "rows", "max attempts"):
            table.add_column(name, no_wrap=True)
        table.add_column("last error", no_wrap=True, overflow="ellipsis", ratio=1)
        for f in st.failing:
            table.add_row(f["type"], str(f["rows"]), str(f["max_attempts"]),
                          _short(f["last_error"], 200))
        console.print(table)


@app.command("list")
def list_(env: str = ENV_OPT,
          type_: str = typer.Option(None, "--type", help="Event type, e.g. hotel:pms:reservation:created."),
          aggregate: str = typer.Option(None, "--aggregate", help="Aggregate id or type."),
          published: bool = typer.Option(None, "--published/--unpublished",
                                         help="Only published or only pending rows."),
          parked: bool = typer.Option(False, "--parked",
                                      help="Only parked rows (attempts or reactions used up)."),
          since: str = typer.Option(None, "--since", help="Created at or after (ISO 8601)."),
          until: str = typer.Option(None, "--until", help="Created before (ISO 8601)."),
          limit: int = typer.Option(100, "--limit", min=1, max=10000),
          json_out: bool = JSON_OPT) -> None:
    """List outbox rows, oldest first."""
    from pms.relay.operations import list_events

    _settings()
    flt = _filter(None, env, type_, aggregate, since, until, published, parked)
    with _scope():
        rows = list_events(flt, limit=limit)
    if json_out:
        print_json(rows)
        return
    console.print(_rows_table("Parked outbox rows" if parked else "Outbox rows", rows))


@app.command()
def replay(ids: list[str] = typer.Option(None, "--id", help="Row id (repeatable)."),
           env: str = ENV_OPT,
           type_: str = typer.Option(None, "--type", help="Event type."),
           aggregate: str = typer.Option(None, "--aggregate", help="Aggregate id or type."),
           parked: bool = typer.Option(False, "--parked", help="Only parked rows."),
           since: str = typer.Option(None, "--since", help="Created at or after (ISO 8601)."),
           until: str = typer.Option(None, "--until", help="Created before (ISO 8601)."),
           dry_run: bool = typer.Option(False, "--dry-run", help="Only show what would go."),
           batch_size: int = typer.Option(500, "--batch-size", min=1, max=5000),
           json_out: bool = JSON_OPT) -> None:
    """Re-publish chosen rows with their original ids (at least one filter is required).
    The chosen rows' parked reactions run again; with `--parked`, a row parked only for its
    reactions is not published again."""
    from pms.relay import operations as outbox_ops
    from pms.relay import sweep as relay
    from workers.publisher import build_publisher
    from workers.subscriptions import default_subscribers

    settings = _settings()
    flt = _filter(ids, env, type_, aggregate, since, until, parked=parked)
    try:
        with _scope():
            chosen = outbox_ops.select_for_replay(flt)
    except ValueError as exc:
        fail(str(exc), 2)
        raise  # unreachable: fail() exits
    if dry_run:
        rows: list[dict[str, Any]] = []
        if chosen:  # an empty id list would be no filter at all
            with _scope():
                rows = outbox_ops.list_events(outbox_ops.EventFilter(ids=tuple(chosen)),
                                              limit=len(chosen))
        if json_out:
            print_json({"dry_run": True, "count": len(chosen), "rows": rows})
        else:
            console.print(_rows_table(f"Would re-publish {len(chosen)} rows", rows))
        return
    subscribers = default_subscribers()
    # Parked reactions of the chosen rows run again; with `--parked`, a row parked
    # only for its reactions (published, its reactions tried too often) is not published again.
    with _scope():
        reaction_parked, reactions_only = outbox_ops.parked_reactions(chosen)
    skip = set(reactions_only) if parked else set()
    republish = [i for i in chosen if i not in skip]
    publisher = build_publisher(settings)
    # Reactions of replayed rows that never ran are left to the running relay.
    reacting = frozenset(subscribers)
    published, failed, broker_error = 0, 0, None
    with Progress(TextColumn("replay"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, disable=json_out) as progress, _scope():
        task = progress.add_task("replay", total=len(republish))
        for start in range(0, len(republish), batch_size):
            chunk = republish[start:start + batch_size]
            result = relay.relay_batch(publisher, ids=chunk, dispatch_types=reacting)
            published += result.published
            failed += result.failed
            progress.advance(task, len(chunk))
            if result.broker_error:
                broker_error = result.broker_error
                break
    getattr(publisher, "close", lambda: None)()
    reacted, reaction_failed = _replay_reactions(settings, reaction_parked, subscribers)
    summary: dict[str, Any] = {"selected": len(chosen), "published": published,
                               "failed": failed, "broker_error": broker_error}
    if parked or reaction_parked:
        summary.update(reactions_rerun=reacted, reactions_failed=reaction_failed)
    emit(summary, as_json=json_out, title="Replay",
         columns=["selected", "published", "failed", "reactions rerun", "broker error"],
         rows=[[len(chosen), published, failed, reacted, broker_error or "-"]])
    if broker_error or published < len(republish) or reaction_failed:
        raise typer.Exit(1)


def _replay_reactions(settings: Settings, ids: list[uuid.UUID],
                      subscribers: dict[str, Any]) -> tuple[int, int]:
    """Run the parked reactions of these rows again (no publish). With the embedded stub
    broker, an in-process worker runs the messages they enqueue before the command exits."""
    if not ids:
        return 0, 0
    from pms.relay import sweep as relay
    from pms.relay.clock import database_now
    from workers.runtime import embedded_worker

    with embedded_worker(settings) as join:
        with _scope():
            done = relay.replay_reactions(ids, subscribers, now=database_now())
        join()
        return done


@app.command()
def relay(once: bool = typer.Option(False, "--once", help="Publish what is due, then exit."),
          follow: bool = typer.Option(False, "--follow", help="Keep relaying (the relay process)."),
          env: str = ENV_OPT,
          batch_size: int = typer.Option(500, "--batch-size", min=1, max=5000),
          idle: float = typer.Option(0.3, "--idle", min=0.05, max=60.0,
                                     help="Seconds between polls when nothing is due."),
          audit: bool = typer.Option(True, "--audit/--no-audit", help="Also push audit rows."),
          json_out: bool = JSON_OPT) -> None:
    """Relay outbox rows to the event bus: `--once`, or `--follow` until SIGTERM/SIGINT.

    Several `--follow` relays may run: they share the outbox partitions by lease, and take
    over a stopped relay's partitions when its lease runs out."""
    if once == follow:
        fail("choose exactly one of --once or --follow", 2)
    refuse_to_serve(load_settings(), "the relay", PLATFORM_ONLY)
    settings = _settings()
    from workers import actors
    from workers.enqueue import reaction_batching
    from workers.publisher import build_publisher
    from workers.relay import OutboxRelay
    from workers.runtime import embedded_worker
    from workers.subscriptions import default_subscribers

    stop = threading.Event()
    with embedded_worker(settings) as join:
        publisher = build_publisher(settings)
        relay_ = OutboxRelay(publisher, batch_size=batch_size, idle_interval=idle,
                             subscribers=default_subscribers(
                                 batching=reaction_batching(publisher, actors.broker)),
                             push_audit=audit,
                             env_id=_uuid(env, "--env"),
                             retention=timedelta(days=settings.outbox_retention_days),
                             # --follow: the scheduler thread below runs the purges
                             purge_every=None if follow else 3600.0)
        if once:
            with _scope():
                totals = relay_.run_once()
            join()
            emit(totals.as_dict(), as_json=json_out, title="Relay",
                 columns=["claimed", "published", "failed", "parked", "audit pushed",
                          "broker error"],
                 rows=[[totals.claimed, totals.published, totals.failed, totals.parked,
                        totals.audit_pushed, totals.broker_error or "-"]])
            if totals.broker_error:
                raise typer.Exit(1)
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: (stop.set(), relay_.wake()))
        leave_command_scope()  # each sweep owns its connection (pms.db.iteration)
        console.print(f"relaying to {settings.event_exchange} ({settings.broker_url.split('@')[-1]});"
                      " Ctrl-C to stop", highlight=False)
        from pms.platform import build_platform
        from pms.scheduling import start_thread as start_scheduler

        # the service's recurring work (key sweeper, purges, reconciler): pms.scheduling
        start_scheduler(build_platform(settings), stop)
        relay_.run_forever(stop)
