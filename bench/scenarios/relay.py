"""Outbox relay throughput: 20,000 pending outbox rows -> the topic exchange with publisher
confirms (pms.relay.sweep + workers.publisher, as `pms-cli outbox relay` runs them), beside a
raw pika publisher with confirms sending the same CloudEvent bodies to the same broker in the same
run. Goal: the relay at >= 70% of the raw publisher, with two relays sharing the partitions (the
leased relay scales out; one relay is shown beside it). Run it with `python -m bench.run relay`.

Each run re-queues the same rows (keeping their ids) and relays them all; the raw publisher sends
the same number of messages in windows of 500 in flight, like the relay's batches (mandatory,
persistent, one wait for the confirms of each window).
A throwaway exchange and queue on the broker (`--broker` if it is amqp://, else
PMS_TEST_AMQP_URL or the local default) keep the machine's broker state untouched.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any

DESCRIPTION = "outbox relay: 20,000 pending rows -> exchange with confirms vs raw pika publisher"
ORDER = 70
ROWS = int(os.environ.get("PMS_BENCH_RELAY_ROWS", "20000"))
GOAL = 0.75  # two relays sharing partitions, of raw pika with confirms


def amqp_url(bench: Any) -> str:
    if str(bench.broker_url).startswith(("amqp://", "amqps://")):
        return str(bench.broker_url)
    return os.environ.get("PMS_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")


def seed(ctx: Any, rows: int) -> list[uuid.UUID]:
    """`rows` pending outbox rows of one env (bulk insert: the relay is measured, not this)."""
    from datetime import timedelta

    from pms.db.database import db
    from pms.db.fields import utcnow
    from pms.db.scope import tenant_scope
    from pms.models import OutboxEvent
    from pms.models.platform import outbox_partition

    start = utcnow()
    ids = [uuid.uuid4() for _ in range(rows)]
    subjects = [str(uuid.uuid4()) for _ in range(rows)]
    data = [dict(env_id=ctx.env_id, id=ids[i], created_at=start + timedelta(microseconds=i),
                 updated_at=start, type="hotel:pms:reservation:created",
                 subject=subjects[i], partition=outbox_partition(subjects[i]),
                 aggregate_type="reservation", aggregate_version=1,
                 idempotency_key=f"bench:{i}", time=start, next_attempt_at=start, attempts=0,
                 data={"id": str(ids[i]), "status": "CONFIRMED", "confirmation_number":
                       f"B{i:08d}", "arrival_date": "2031-01-01", "departure_date": "2031-01-03",
                       "total_amount": "240.00", "currency": "EUR"})
            for i in range(rows)]
    with tenant_scope(ctx.env_id):
        db.connect(reuse_if_open=True)
        with db.atomic():
            for chunk in range(0, rows, 1000):
                OutboxEvent.insert_many(data[chunk:chunk + 1000]).execute()
        db.execute_sql("ANALYZE outbox_event")
    return ids


def run(bench: Any) -> list[Any]:
    import pika

    from bench.lib import Measurement, Result, timed_threads
    from pms.db.uow import read_scope
    from pms.events import envelope, routing_key
    from pms.models import OutboxEvent
    from pms.relay import operations as outbox_ops
    from workers.publisher import AmqpEventPublisher, amqp_parameters
    from workers.relay import OutboxRelay

    url = amqp_url(bench)
    exchange = f"pms-bench-{uuid.uuid4().hex[:8]}"
    admin = pika.BlockingConnection(pika.URLParameters(url))
    ch = admin.channel()
    ch.exchange_declare(exchange, exchange_type="topic", durable=True)
    queue = f"{exchange}-all"
    ch.queue_declare(queue, durable=True)
    ch.queue_bind(queue, exchange, routing_key="#")

    def relay_once(relays: int = 1) -> Measurement:
        """`relays` relays, one thread and one publisher each, sharing the partitions by lease
        (as several `pms-cli outbox relay --follow` processes do), draining every row."""
        import threading

        from pms.db.database import db
        from pms.db.fields import utcnow

        outbox_ops.requeue(ids)
        ch.queue_purge(queue)
        workers = [OutboxRelay(AmqpEventPublisher(url, exchange), batch_size=500,
                               env_id=ctx.env_id) for _ in range(relays)]
        now = utcnow()
        for _ in range(2):  # all registered first, so the partitions are shared from the start
            for relay in workers:
                relay.lease.heartbeat(now)
        totals: list[Any] = []

        def drain(relay: Any) -> None:
            try:
                totals.append(relay.run_once())
            finally:
                relay.publisher.close()
                db.close()

        threads = [threading.Thread(target=drain, args=(r,)) for r in workers]
        sample = bench.here_sample()
        seconds = timed_threads(threads)
        published = sum(t.published for t in totals)
        return Measurement(rate=published / seconds, unit="events/s", errors=ROWS - published,
                           extra={"seconds": round(seconds, 3),
                                  "batches": sum(t.batches for t in totals),
                                  **bench.here_extra(sample, published)})

    def raw_once() -> Measurement:
        """The best a bare pika client does with confirms: windows of 500 in flight (the relay's
        batch size), one wait per window, mandatory and persistent, no database."""
        ch.queue_purge(queue)
        conn = pika.BlockingConnection(amqp_parameters(url))
        raw = conn.channel()
        state = {"ready": False, "acked": 0, "sent": 0}

        def on_confirm(frame: Any) -> None:
            tag = frame.method.delivery_tag
            state["acked"] = tag if frame.method.multiple else max(state["acked"], tag)
            if state["acked"] >= state["sent"]:
                # end the wait now: process_data_events(time_limit) otherwise runs out its
                # whole slice after the window's last confirm (as workers/publisher.py does)
                conn.call_later(0, lambda: None)

        raw._impl.confirm_delivery(ack_nack_callback=on_confirm,
                                   callback=lambda _f: state.update(ready=True))
        while not state["ready"]:
            conn.process_data_events(time_limit=0.05)
        key = routing_key(row.type)
        cpu_before = bench.here_sample()
        started = time.perf_counter()
        sent = 0
        for window in range(0, ROWS, 500):
            for body in bodies[window:window + 500]:
                raw._impl.basic_publish(exchange, key, body, mandatory=True,
                                        properties=pika.BasicProperties(
                                            content_type="application/cloudevents+json",
                                            delivery_mode=2, message_id=str(uuid.uuid4())))
                sent += 1
            state["sent"] = sent
            while state["acked"] < sent:
                conn.process_data_events(time_limit=0.05)
        seconds = time.perf_counter() - started
        extra = {"seconds": round(seconds, 3), **bench.here_extra(cpu_before, ROWS)}
        conn.close()
        return Measurement(rate=ROWS / seconds, unit="events/s", extra=extra)

    try:
        ctx = bench.seed_ctx()
        bench.log(f"relay: seeding {ROWS} pending outbox rows")
        ids = seed(ctx, ROWS)
        with read_scope(ctx):
            row = OutboxEvent.get_by_id(ids[0])
        bodies = [json.dumps(dict(envelope(row), id=str(uuid.uuid4())), separators=(",", ":"),
                             sort_keys=True).encode() for _ in range(ROWS)]
        # alternating runs (raw, relay, raw, relay, ...): the ratio is the median of the
        # per-pair ratios, each pair measured under the same machine conditions
        raw, relayed, ratio = bench.paired(raw_once, relay_once)
        raw2, relayed2, ratio2 = bench.paired(raw_once, lambda: relay_once(2))
    finally:
        ch.queue_delete(queue)
        ch.exchange_delete(exchange)
        admin.close()
    raw_name = f"raw pika publisher, confirms, 500 in flight ({ROWS:,} msgs)"
    note = "ratio: median of per-pair ratios (alternating runs)"
    return [Result(raw_name, raw),
            Result(f"outbox relay, 1 relay, confirms ({ROWS:,} rows)", relayed,
                   baseline=raw_name, paired_ratio=ratio,
                   note=note + "; one relay: claim, lease and mark are one thread's work"),
            Result(f"outbox relay, 2 relays sharing partitions ({ROWS:,} rows)", relayed2,
                   baseline=raw_name, goal=GOAL, paired_ratio=ratio2, note=note)]
