"""`python -m bench.ari_latency [--seconds S] [--writers W] [--rooms R]`: ARI publish latency
under booking load, and ARI events per booking.

A throwaway PostgreSQL database (bench/pgdb.py, migrated), a hotel of three room types of R
rooms with 90 days of rates; W threads book (1 to 3 nights, random arrivals, a cancel now and
then) for S seconds through the services, each in its own transaction; meanwhile the outbox relay
(the Procfile's `relay` line, `--relays` processes, as production runs them) publishes to a
throwaway exchange on RabbitMQ (PMS_TEST_AMQP_URL or the local default) and a consumer reads the
`hotel.pms.ari.#` messages. Each request's `now` is unique; the event's `time` is that `now`, so
each ARI message is matched to the request that caused it, and its latency is counted from that
request's COMMIT (the moment the service returned) to the message's arrival at the consumer.
Printed: bookings/s, ARI events per booking, and the latency p50/p95/p99/max. A measurement
tool, not a test: nothing passes or fails (the issue's goal: p95 within 5 s).
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any


def _percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def _drained(env: uuid.UUID, deadline: float) -> None:
    """Wait until every outbox row of the env is published (the relay runs in its thread)."""
    from pms.db.scope import tenant_scope
    from pms.models import OutboxEvent

    while time.time() < deadline:
        with tenant_scope(env):
            pending = OutboxEvent.select().where(OutboxEvent.published_at.is_null()).count()
        if not pending:
            time.sleep(1.0)  # the consumer's last reads
            return
        time.sleep(0.2)


def procfile_command(process: str) -> list[str]:
    """The Procfile's command line of `process`, its program from this virtualenv."""
    import shlex
    import sys
    from pathlib import Path

    procfile = Path(__file__).resolve().parent.parent / "Procfile"
    for line in procfile.read_text().splitlines():
        name, _, command = line.partition(":")
        if name.strip() == process:
            argv = shlex.split(command)
            return [str(Path(sys.executable).with_name(argv[0])), *argv[1:]]
    raise LookupError(f"no {process!r} process in {procfile}")


def start_relays(app_url: str, owner_url: str, amqp_url: str, exchange: str,
                 relays: int) -> list[Any]:
    """The relay as production runs it: `relays` processes of the Procfile's `relay` line
    (`pms-cli outbox relay --follow`, its default idle interval and audit push; they share the
    partitions by lease), publishing to `exchange`."""
    import os
    import subprocess

    relay_env = {**os.environ, "PMS_DATABASE_URL": app_url,
                 "PMS_MIGRATION_DATABASE_URL": owner_url, "PMS_BROKER_URL": amqp_url,
                 "PMS_EVENT_EXCHANGE": exchange, "PMS_PLATFORM_URL": "embedded"}
    argv = procfile_command("relay")
    return [subprocess.Popen(argv, env=relay_env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL) for _ in range(relays)]


class AriConsumer:
    """A throwaway topic exchange and a queue of its `hotel.pms.ari.#` messages on RabbitMQ,
    read by a thread that notes each ARI event's `time` and `propertyid` with its arrival."""

    def __init__(self, url: str) -> None:
        import pika

        self.url = url
        self.exchange = f"pms-bench-ari-{uuid.uuid4().hex[:8]}"
        self.queue = f"{self.exchange}-ari"
        self.admin = pika.BlockingConnection(pika.URLParameters(url))
        ch = self.admin.channel()
        ch.exchange_declare(self.exchange, exchange_type="topic", durable=True)
        ch.queue_declare(self.queue, durable=False, auto_delete=False)
        ch.queue_bind(self.queue, self.exchange, routing_key="hotel.pms.ari.#")
        self.channel = ch
        self.received: list[tuple[str, str | None, float]] = []  # (time, property, arrival)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._consume, daemon=True)
        self.thread.start()

    def _consume(self) -> None:
        import pika

        from pms.services.distribution.ari_events import ARI_UPDATED

        conn = pika.BlockingConnection(pika.URLParameters(self.url))
        c = conn.channel()
        while not (self.stop.is_set() and c.queue_declare(self.queue, passive=True).method
                   .message_count == 0):
            method, _props, body = c.basic_get(self.queue, auto_ack=True)
            if method is None:
                time.sleep(0.005)
                continue
            event = json.loads(body)
            if event["type"] == ARI_UPDATED:
                self.received.append((event["time"], event.get("propertyid"), time.time()))
        conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        self.channel.exchange_delete(self.exchange)
        self.channel.queue_delete(self.queue)
        self.admin.close()


def percentiles_ms(latencies: list[float]) -> dict[str, float]:
    return {p: round(_percentile(latencies, q) * 1000, 1)
            for p, q in (("p50", 50), ("p95", 95), ("p99", 99), ("max", 100))}


def run(seconds: float, writers: int, rooms: int, relays: int = 2,  # noqa: C901
        rate: float = 0.0, out: Any = print
        ) -> dict[str, Any]:
    import os

    import msgspec

    from bench import pgdb
    from pms.context import Ctx
    from pms.db.database import db, make_database
    from pms.db.migrator import migrate
    from pms.devkeys import all_scopes
    from pms.errors import PmsError
    from pms.schemas.reservations import ReservationIn
    from pms.services.reservations import reservations
    from tests.factories import load_rates, make_property, make_rate_plan, make_room, make_room_type

    url = os.environ.get("PMS_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
    database = pgdb.create("pmsari")
    try:
        migrate(database.owner_url, service_url=database.app_url)
        db.initialize(make_database(database.app_url, pool_size=writers + 4))
        env = uuid.uuid4()
        base = Ctx(env_id=env, sub="bench", client_kind="user", scopes=frozenset(all_scopes()),
                   now=datetime.now(UTC))
        prop = make_property(base, bookingHorizonDays=3660)
        plan = make_rate_plan(base, prop.id)
        types = []
        for _ in range(3):
            rt = make_room_type(base, prop.id, max_occupancy=2)
            for i in range(rooms):
                make_room(base, prop.id, rt.id, room_number=f"{len(types)}{i:03d}")
            load_rates(base, prop.id, plan.id, rt.id, days=95, start=base.now.date())
            types.append(rt)
        today = base.now.date()

        consumer = AriConsumer(url)
        procs = start_relays(database.app_url, database.owner_url, url, consumer.exchange,
                             relays)

        committed: dict[str, float] = {}  # the request's `time` -> wall time of its commit
        counts = {"bookings": 0, "cancels": 0, "refused": 0}
        lock = threading.Lock()
        tick = [0]

        def unique_now() -> datetime:
            with lock:
                tick[0] += 1
                return datetime.now(UTC).replace(microsecond=0) + timedelta(
                    microseconds=tick[0] % 1_000_000)

        def writer(seed: int, until: float) -> None:
            rng = random.Random(seed)
            mine: list[Any] = []
            gap = writers / rate if rate else 0.0  # each writer's share of the target rate
            due = time.time()
            while time.time() < until:
                if gap:
                    due += gap
                    time.sleep(max(0.0, due - time.time()))
                now = unique_now()
                ctx = base.with_(now=now, request_id=uuid.uuid4().hex)
                stamp = now.isoformat().replace("+00:00", "Z")
                try:
                    if mine and rng.random() < 0.15:
                        row = mine.pop(rng.randrange(len(mine)))
                        reservations.cancel_reservation(ctx, prop.id, row.id)
                        kind = "cancels"
                    else:
                        arrival = today + timedelta(days=rng.randrange(85))
                        body = msgspec.convert({
                            "room_type_id": str(rng.choice(types).id),
                            "rate_plan_id": str(plan.id), "arrival_date": str(arrival),
                            "departure_date": str(arrival + timedelta(days=rng.randint(1, 3))),
                            "adults": 1, "guest": {"last_name": "Bench"}}, ReservationIn)
                        row, _ = reservations.create_reservation(ctx, prop.id, body)
                        mine.append(row)
                        kind = "bookings"
                except PmsError:
                    with lock:
                        counts["refused"] += 1
                    continue
                done = time.time()
                with lock:
                    committed[stamp] = done
                    counts[kind] += 1

        until = time.time() + seconds
        threads = [threading.Thread(target=writer, args=(i, until)) for i in range(writers)]
        started = time.time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.time() - started
        _drained(env, time.time() + 60)
        consumer.close()  # (its thread reads the queue empty first)
        received = list(consumer.received)
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
        latencies = [at - committed[stamp] for stamp, _prop, at in received if stamp in committed]
        changes = counts["bookings"] + counts["cancels"]
        matched = len(latencies)
        result = {
            "seconds": round(elapsed, 1), "writers": writers, "relays": relays,
            "target_rate": rate or None,
            "bookings": counts["bookings"], "cancels": counts["cancels"],
            "refused": counts["refused"],
            "changes_per_s": round(changes / elapsed, 1),
            "ari_events": matched,
            "ari_events_per_change": round(matched / changes, 3) if changes else None,
            "latency_ms": percentiles_ms(latencies),
        }
        out(json.dumps(result, indent=2))
        return result
    finally:
        if db.obj is not None:
            db.obj.close_all()
        database.drop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ari_latency", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="load duration (20)")
    parser.add_argument("--writers", type=int, default=4, help="booking threads (4)")
    parser.add_argument("--rooms", type=int, default=40, help="rooms per room type (40)")
    parser.add_argument("--relays", type=int, default=2,
                        help="`pms-cli outbox relay --follow` processes (2)")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="target changes per second over all writers (0: as fast as they go)")
    args = parser.parse_args(argv)
    run(args.seconds, args.writers, args.rooms, args.relays, args.rate)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
