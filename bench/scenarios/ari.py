"""ARI on the bus under the bench's booking load: `POST .../reservations` from wrk
(the `reservations` scenario's load: a random room type of 10, a random 2-night stay in the next
year, 32 clients) against gunicorn, while the outbox relay runs as production runs it (two
processes of the Procfile's `relay` line, bench/ari_latency.py `start_relays`) and publishes to
a throwaway exchange on the real RabbitMQ (`--broker` if it is amqp://, else PMS_TEST_AMQP_URL
or the local default), where a consumer reads the `hotel.pms.ari.#` messages.

Reported: the latency of each ARI event of the load from its request's `now` (the event's
`time`, taken when the request began, so an upper bound of commit-to-consumer by the request's
own duration) to its arrival at the consumer, p50 and p95 (goal: p95 within 5 s), and ARI events
per booking (the env's ARI outbox rows over its bookings). The backlog of earlier scenarios (every
env's unpublished rows) is relayed before the load starts. Run it alone: `python -m bench.run ari`.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

from peewee import fn

from bench import lib
from bench.ari_latency import AriConsumer, percentiles_ms, start_relays
from bench.lib import Bench, Measurement, Result
from bench.scenarios import relay, reservations
from pms.services.distribution.ari_events import ARI_UPDATED

DESCRIPTION = "ARI events under the booking load: request-to-consumer p50/p95 via relay+RabbitMQ"
ORDER = 75
GOAL_P95_MS = 5000.0
RELAYS = 2


def _pending(env_id: uuid.UUID) -> int:
    """Unpublished outbox rows of the env (under its tenant scope: row-level security)."""
    from pms.db.scope import tenant_scope
    from pms.models import OutboxEvent

    with tenant_scope(env_id):
        return OutboxEvent.select().where(OutboxEvent.published_at.is_null()).count()


def _backlog() -> int:
    """Unpublished, unparked outbox rows of every env (the earlier scenarios' too)."""
    from pms.db.scope import unscoped
    from pms.models import OutboxEvent

    with unscoped():
        return OutboxEvent.select().where(OutboxEvent.published_at.is_null()
                                          & OutboxEvent.parked_at.is_null()).count()


def _counts(env_id: uuid.UUID, since: datetime) -> tuple[int, int]:
    """(ARI outbox rows, reservations created) of the env from `since` (the load's start)."""
    from pms.db.scope import tenant_scope
    from pms.models import OutboxEvent

    with tenant_scope(env_id):
        rows = (OutboxEvent.select(OutboxEvent.type, fn.COUNT(OutboxEvent.id))
                .where(OutboxEvent.time >= since).group_by(OutboxEvent.type)
                .order_by(OutboxEvent.type).tuples())
        by_type = dict(rows)
    return by_type.get(ARI_UPDATED, 0), by_type.get("hotel:pms:reservation:created", 0)


def _wait(env_id: uuid.UUID | None, deadline: float) -> None:
    """Until the env's rows (None: every env's) are relayed, or the deadline."""
    while (_backlog() if env_id is None else _pending(env_id)) and time.time() < deadline:
        time.sleep(0.5)


def run(bench: Bench) -> list[Result]:
    env_id = uuid.uuid4()
    property_id, plan_id, type_ids, today = reservations.seed_hotel(bench, env_id)
    app = bench.app()
    headers = bench.headers(env_id)
    consumer = AriConsumer(relay.amqp_url(bench))
    assert bench.db is not None
    procs = start_relays(bench.db.app_url, bench.db.owner_url, consumer.url, consumer.exchange,
                         RELAYS)
    try:
        bench.log("relaying the backlog of earlier scenarios ...")
        # every env's: the claim takes the oldest rows first, so a backlog left behind would
        # be published ahead of the load's events and counted in their latency
        _wait(None, time.time() + 600)
        bench.log(f"backlog relayed ({_backlog()} rows left)")
        time.sleep(1.0)
        started = datetime.now(UTC)
        consumer.received.clear()
        driver = reservations._driver(type_ids, today)
        original = lib.WRK_DRIVER
        lib.WRK_DRIVER = driver
        try:
            bench.log("POST /v1/properties/{id}/reservations with the relays publishing ...")
            load = bench.repeat(lambda: bench.wrk_once(
                app.base_url, method="POST", path=f"/v1/properties/{property_id}/reservations",
                headers=headers, body_template=reservations.body_template(plan_id),
                unique=True))
        finally:
            lib.WRK_DRIVER = original
        _wait(env_id, time.time() + 300)
        time.sleep(1.0)  # the consumer's last reads
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)
        consumer.close()
    mine = [(datetime.fromisoformat(stamp.replace("Z", "+00:00")), at)
            for stamp, prop, at in consumer.received if prop == property_id]
    mine = [(when, at) for when, at in mine if when >= started]  # the load's own events
    latencies = [at - when.timestamp() for when, at in mine]
    figures = percentiles_ms(latencies)
    ari, booked = _counts(env_id, started)
    extra: dict[str, Any] = {"ari_latency_ms": figures, "ari_events_received": len(mine),
                             "ari_events": ari, "bookings": booked,
                             "ari_events_per_booking": round(ari / booked, 3) if booked else None,
                             "booking_rate": load.rate, "relays": RELAYS}
    bench.log(f"ARI latency {figures}, {extra['ari_events_per_booking']} events per booking")
    passed = bool(latencies) and figures["p95"] <= GOAL_P95_MS and len(mine) == ari
    latency = Measurement(rate=round(len(mine) / max(1e-9, bench.duration * bench.runs), 1),
                          unit="ev/s", p50_ms=figures["p50"], p99_ms=figures["p99"],
                          errors=ari - len(mine), extra=extra)
    per_booking = Measurement(rate=extra["ari_events_per_booking"] or 0.0, unit="ev/bkg",
                              extra=extra)
    return [Result(f"ARI request-to-consumer, p95 {figures['p95']:.0f} ms", latency,
                   goal_text="p95<=5000ms", passed=passed,
                   note="latency from the request's start (upper bound of commit-to-consumer)"),
            Result("ARI events per booking", per_booking)]
