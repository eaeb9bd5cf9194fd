"""`pms-cli ari push`: push a property's ARI again, for a channel that lost its state;
`pms-cli ari digest`: the hashes a channel compares with its own (`GET .../ari/digest`).

Queues the push as a job (the same job as `POST .../ari/push`) and runs it here at once: 365 days
from each property's business date, or only `--month` months (YYYY-MM, repeatable). A worker
that picks the queued job up later finds it finished and leaves it alone.
"""

from __future__ import annotations

import time

import typer

from cli.output import (
    emit,
    env_properties,
    fail,
    open_database,
    parse_uuid,
    require_property_choice,
)
from pms.config import load_settings

app = typer.Typer(help="Distribution: ARI (availability, rates, inventory) pushes.",
                  no_args_is_help=True)


@app.command("push")
def push(
    env: str = typer.Option(..., "--env", help="Env id (UUID)."),
    property_code: str = typer.Option(None, "--property", help="One property by code."),
    all_properties: bool = typer.Option(False, "--all", help="Every property of the env."),
    months: list[str] = typer.Option(None, "--month", help="A month to push (YYYY-MM); "
                                     "repeat it; default: 365 days from the business date."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Push every night's ARI again as hotel:pms:ari:updated events (a job per property)."""
    from pms.context import system_ctx
    from pms.errors import PmsError
    from pms.services import jobs

    require_property_choice(property_code, all_properties, "to push")
    env_id = parse_uuid(env)
    open_database(load_settings())
    ctx = system_ctx(env_id, sub="pms-cli ari push")
    props = env_properties(ctx, property_code)
    if not props:
        fail("no such property" if property_code else "the env has no property", 1)
    results = []
    for prop in props:
        started = time.perf_counter()
        try:
            job = jobs.start_ari_push(ctx, prop.id, months or None)
        except PmsError as exc:
            fail(str(exc), 2)
        jobs.run_job(ctx, job.id)
        done = jobs.get_job(ctx, job.id)
        result = done.result or {}
        results.append({"property_code": prop.code, "job_id": str(job.id),
                        "status": done.status, "events": result.get("events"),
                        "nights": result.get("nights"), "error": done.error,
                        "seconds": round(time.perf_counter() - started, 3)})
    emit({"results": results}, as_json=as_json, title="ARI pushed",
         columns=["property", "job", "status", "events", "nights", "seconds"],
         rows=[(r["property_code"], r["job_id"], r["status"], r["events"], r["nights"],
                r["seconds"]) for r in results])
    if any(r["status"] != "SUCCEEDED" for r in results):
        raise typer.Exit(1)


@app.command("digest")
def digest(
    env: str = typer.Option(..., "--env", help="Env id (UUID)."),
    property_code: str = typer.Option(..., "--property", help="The property, by code."),
    first: str = typer.Option(None, "--from", help="First month (YYYY-MM); default: the "
                              "full push's 365 nights from the business date."),
    last: str = typer.Option(None, "--to", help="Last month (YYYY-MM)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output (the API's)."),
) -> None:
    """The ARI digest: one SHA-256 per room type and month, over the nights a push sends."""
    from pms.context import system_ctx
    from pms.errors import PmsError
    from pms.services.distribution import ari_push

    env_id = parse_uuid(env)
    open_database(load_settings())
    ctx = system_ctx(env_id, sub="pms-cli ari digest")
    props = env_properties(ctx, property_code)
    if not props:
        fail("no such property", 1)
    try:
        out = ari_push.digest(ctx, props[0].id, first, last)
    except PmsError as exc:
        fail(str(exc), 2)
    emit(out, as_json=as_json, title=f"ARI digest {property_code} {out['from']}..{out['to']}",
         columns=["room type", "month", "from", "to", "nights", "hash"],
         rows=[(d["room_type_id"], d["month"], d["from_date"], d["to_date"], d["nights"],
                d["hash"]) for d in out["data"]])
