"""The spine's two paths: `GET /v1/properties/{id}` (token verified, tenant checked, one indexed
read) against the bare Falcon baseline (goal, at least 45% of its req/s), and
`POST /v1/properties/{id}/profiles` (a write with its outbox and audit rows, a fresh
Idempotency-Key and email per request) against pgbench tpcb-like (goal, at least 40%
of its transactions per second; its runs interleaved with tpcb-like's, see
`Bench.tpcb_interleaved`). Statements and round trips per request come from the
in-process counting pass (bench/statements.py).

Beside each, its floor (bench/floor_app.py): the same read and the same create hand-written in
psycopg2 behind bare Falcon, under the same gunicorn settings, with the ratios of the floor to
the same baselines and the service's CPU per request over the floor's. A goal above its floor's
ratio is out of reach of any Python code on this stack and this machine, however lean. The
profile creates run alternating (floor, one-call, service, each round after a tpcb-like run):
the floor by hand, the same create as ONE call of a PL/pgSQL function (the bench's own,
bench/floor_app.py: what going below the hand-written floor would take), and the service;
the service's CPU over the floor's is the median of the per-round ratios."""

from __future__ import annotations

import json
import uuid

import msgspec

from bench import floor_app
from bench.lib import TPCB_NOTE, Bench, Measurement, Result
from bench.scenarios.floor import TARGET as FLOOR_TARGET
from bench.scenarios.floor import count_floor, cpu_ms, cpu_ratio
from bench.statements import Call, unique_calls

DESCRIPTION = ("GET property vs bare Falcon; POST profile vs pgbench (select-only, tpcb-like); "
               "each beside its hand-written floor")
ORDER = 10


def seed_property(bench: Bench, env_id: uuid.UUID) -> str:
    """One property in `env_id`, created through the catalog service; returns its id."""
    from pms.schemas.catalog import PropertyIn
    from pms.services.catalog import catalog

    ctx = bench.seed_ctx(env_id)
    prop = catalog.create_property(ctx, msgspec.convert({
        "propertyCode": "BENCH1", "name": "Benchmark Hotel", "timezone": "Europe/Berlin",
        "currencyCode": "EUR", "languages": ["en"],
        "displayAddress": {"line1": "Bench Street 1", "city": "Berlin", "postalCode": "10117",
                           "countryCode": "DE"},
    }, PropertyIn))
    return str(prop.id)


def _cpu_over(subject: Measurement, floor: Measurement) -> float | None:
    """The subject's CPU per request (server + database) over the floor's, from the medians."""
    a, b = cpu_ms(subject), cpu_ms(floor)
    return round(a / b, 2) if a is not None and b else None


def run(bench: Bench) -> list[Result]:
    bench.baseline("pgbench_select_only")
    bench.baseline("pgbench_tpcb_like")
    env_id = uuid.uuid4()
    property_id = seed_property(bench, env_id)
    app = bench.app()
    headers = bench.headers(env_id)
    path = f"/v1/properties/{property_id}"
    profiles_path = f"{path}/profiles"
    one_call_path = floor_app.ONE_CALL_PREFIX + profiles_path
    floor_app.install_one_call(bench.db.owner_url)
    body = json.dumps({"first_name": "Ada", "last_name": "Bench{{n}}",
                       "email": "guest-{{n}}@bench.example"})

    with bench.server(FLOOR_TARGET) as floor:
        bench.log("floor: GET property by hand (alternating with bare Falcon) ...")
        bench.wrk_once(floor.base_url, path=path, headers=headers, duration=bench.warmup or 1)
        floor_get, floor_ratio = bench.bare_falcon_paired(
            lambda: bench.wrk_once(floor.base_url, path=path, headers=headers))
        bench.log("GET /v1/properties/{id} (runs alternating with bare Falcon) ...")
        bench.wrk_once(app.base_url, path=path, headers=headers, duration=bench.warmup or 1)
        bench.analyze()
        get, ratio = bench.bare_falcon_paired(
            lambda: bench.wrk_once(app.base_url, path=path, headers=headers))

        bench.log("POST profile: the floor by hand, the one-call create and the service, "
                  "alternating, interleaved with tpcb-like ...")
        runs: dict[str, list[Measurement]] = {"floor": [], "service": []}

        def create(base_url: str, post_path: str, who: str, duration: float | None = None,
                   keep: str | None = None) -> Measurement:
            measured = bench.wrk_once(base_url, method="POST", path=post_path, headers=headers,
                                      body_template=body.replace("guest-", who), unique=True,
                                      duration=duration)
            if keep is not None:
                runs[keep].append(measured)
            return measured

        for base_url, post_path in ((floor.base_url, profiles_path),
                                    (floor.base_url, one_call_path),
                                    (app.base_url, profiles_path)):
            create(base_url, post_path, "warm-", duration=bench.warmup or 1)
        bench.analyze()
        floor_post, one_call, post = bench.tpcb_interleaved(
            lambda: create(floor.base_url, profiles_path, "floor-", keep="floor"),
            lambda: create(floor.base_url, one_call_path, "onecall-"),
            lambda: create(app.base_url, profiles_path, "guest-", keep="service"))
    post_cpu = cpu_ratio(list(zip(runs["service"], runs["floor"], strict=True)))
    bench.log("statements and round trips of GET property and POST profile (in-process) ...")
    read = Call("GET", path, None, headers)
    get.extra.update(bench.count([read] * 10, warmup=[read] * 2).extra())
    profiles = unique_calls(lambda n: Call(
        "POST", profiles_path, body.replace("{{n}}", f"count{n}"), headers), 13, idempotency=True)
    post.extra.update(bench.count(profiles[3:], warmup=profiles[:3]).extra())
    floor_get.extra.update(count_floor(bench, [read] * 12).extra())
    for measured, counted_path in ((floor_post, profiles_path), (one_call, one_call_path)):
        measured.extra.update(count_floor(bench, unique_calls(lambda n, p=counted_path: Call(
            "POST", p, body.replace("{{n}}", f"count{n}"), headers), 13,
            idempotency=True)).extra())
    get_floor = "floor: GET property by hand (psycopg2, 1 RT, bare Falcon)"
    post_floor = "floor: POST profile by hand (psycopg2, 2 RT, bare Falcon)"
    one_call_floor = "floor: POST profile as one PL/pgSQL call (1 RT, bare Falcon)"
    return [
        Result(get_floor, floor_get, baseline="bare_falcon", paired_ratio=floor_ratio,
               note="the service's read hand-written; ratio: median of per-pair ratios"),
        Result("GET /v1/properties/{id}", get, baseline="bare_falcon", goal=0.45,
               paired_ratio=ratio, note="ratio: median of per-pair ratios (alternating runs)"),
        Result("GET property CPU / floor CPU (server + db per request)", get,
               baseline=get_floor, paired_ratio=_cpu_over(get, floor_get),
               note="ratio of the medians' CPU per request (not req/s)"),
        Result("GET /v1/properties/{id} vs pgbench select-only", get,
               baseline="pgbench_select_only"),
        Result(post_floor, floor_post, baseline="pgbench_tpcb_like",
               note="the service's create hand-written; " + TPCB_NOTE),
        Result(one_call_floor, one_call, baseline="pgbench_tpcb_like",
               note="what going below the floor would take: the create's reads, checks and "
                    "writes in one database function; " + TPCB_NOTE),
        Result("POST /v1/properties/{id}/profiles", post, baseline="pgbench_tpcb_like",
               goal=0.40, note=TPCB_NOTE),
        Result("POST profile CPU / floor CPU (server + db per request)", post,
               baseline=post_floor, paired_ratio=post_cpu,
               note="median of per-run CPU ratios (runs alternating with the floor's)"),
    ]

