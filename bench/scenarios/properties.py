"""The spine's two paths: `GET /v1/properties/{id}` (token verified, tenant checked, one indexed
read) against the bare Falcon baseline (goal, issue 10: at least 45% of its req/s), and
`POST /v1/properties/{id}/profiles` (a write with its outbox and audit rows, a fresh
Idempotency-Key and email per request) against pgbench tpcb-like (goal, issue 10: at least 40%
of its transactions per second). Statements and round trips per request come from the
in-process counting pass (bench/statements.py)."""

from __future__ import annotations

import json
import uuid

import msgspec

from bench.lib import Bench, Result
from bench.statements import Call, unique_calls

DESCRIPTION = "GET property vs bare Falcon; POST profile vs pgbench (select-only, tpcb-like)"
ORDER = 10


def seed_property(bench: Bench, env_id: uuid.UUID) -> str:
    """One property in `env_id`, created through the catalog service; returns its id."""
    from pms.schemas.catalog import PropertyIn
    from pms.services import catalog

    ctx = bench.seed_ctx(env_id)
    prop = catalog.create_property(ctx, msgspec.convert({
        "propertyCode": "BENCH1", "name": "Benchmark Hotel", "timezone": "Europe/Berlin",
        "currencyCode": "EUR", "languages": ["en"],
        "displayAddress": {"line1": "Bench Street 1", "city": "Berlin", "postalCode": "10117",
                           "countryCode": "DE"},
    }, PropertyIn))
    return str(prop.id)


def run(bench: Bench) -> list[Result]:
    bench.baseline("pgbench_select_only")
    bench.baseline("pgbench_tpcb_like")
    env_id = uuid.uuid4()
    property_id = seed_property(bench, env_id)
    app = bench.app()
    headers = bench.headers(env_id)

    bench.log("GET /v1/properties/{id} (runs alternating with bare Falcon) ...")
    path = f"/v1/properties/{property_id}"
    bench.wrk_once(app.base_url, path=path, headers=headers, duration=bench.warmup or 1)
    bench.analyze()
    get, ratio = bench.bare_falcon_paired(
        lambda: bench.wrk_once(app.base_url, path=path, headers=headers))
    bench.log("POST /v1/properties/{id}/profiles ...")
    body = json.dumps({"first_name": "Ada", "last_name": "Bench{{n}}",
                       "email": "guest-{{n}}@bench.example"})
    post = bench.wrk(app.base_url, method="POST", path=f"/v1/properties/{property_id}/profiles",
                     headers=headers, body_template=body, unique=True)
    bench.log("statements and round trips of GET property and POST profile (in-process) ...")
    read = Call("GET", path, None, headers)
    get.extra.update(bench.count([read] * 10, warmup=[read] * 2).extra())
    profiles = unique_calls(lambda n: Call(
        "POST", f"/v1/properties/{property_id}/profiles",
        body.replace("{{n}}", f"count{n}"), headers), 13, idempotency=True)
    post.extra.update(bench.count(profiles[3:], warmup=profiles[:3]).extra())
    return [
        Result("GET /v1/properties/{id}", get, baseline="bare_falcon", goal=0.45,
               paired_ratio=ratio, note="ratio: median of per-pair ratios (alternating runs)"),
        Result("GET /v1/properties/{id} vs pgbench select-only", get,
               baseline="pgbench_select_only"),
        Result("POST /v1/properties/{id}/profiles", post, baseline="pgbench_tpcb_like",
               goal=0.40),
    ]
