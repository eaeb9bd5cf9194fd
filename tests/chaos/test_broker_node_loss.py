"""A RabbitMQ node lost mid-burst: a three-node cluster with quorum queues loses nothing.

The cluster is three nodes on this machine (tests/chaos/rabbit_cluster.py), and every client
gets all three addresses (PMS_BROKER_URL's comma-separated list). While requests create
profiles, the relay publishes their outbox rows (publisher confirms) to a subscriber's quorum
queue, a Dramatiq worker runs jobs and emails from the service's queue names (declared as quorum
queues by workers.broker), a publisher sends platform events and the platform consumer
(workers.consumer) reads them, the node the relay is connected to is killed (SIGKILL of its
Erlang VM). Then:

- every outbox row reaches the subscriber, every job and email acknowledged to its sender runs,
  every platform event confirmed is handled: nothing lost;
- what arrives twice comes under the same id (the outbox row id, the message id, the event
  id): deduplication by id leaves each exactly once;
- the relay, the worker and the consumer go on through the surviving nodes without a restart.

The control: classic queues whose node is lost are unavailable for the whole outage (their
messages with them), and what is published to them meanwhile is gone for good; the quorum queue
next to them serves every message from the surviving nodes. PMS_CHAOS_FULL=1 (`make chaos`)
runs three node losses, one after the other, otherwise one.
"""

from __future__ import annotations

import collections
import os
import threading
import time
import uuid
from typing import Any

import dramatiq
import pika
import pika.exceptions
import pytest
from dramatiq.brokers.rabbitmq import ConnectionClosed

from pms import wiring
from pms.context import Ctx
from pms.db.uow import read_scope
from pms.models import OutboxEvent
from pms.relay import outbox
from tests.chaos import rabbit_cluster
from tests.conftest import need_server
from workers.broker import PmsRabbitmqBroker, bounded_amqp_url
from workers.consumer import PlatformEventConsumer
from workers.consumer import declare as declare_platform_queues
from workers.publisher import AmqpEventPublisher
from workers.relay import OutboxRelay

pytestmark = [pytest.mark.chaos, pytest.mark.slow]
FULL = os.environ.get("PMS_CHAOS_FULL") == "1"
LOSSES = 3 if FULL else 1
PG_ONLY = pytest.mark.parametrize("backend", [pytest.param("postgres", marks=pytest.mark.postgres)],
                                  indirect=True)
SETTLE_S = 90.0  # how long everything may take to arrive once the burst ends


@pytest.fixture(scope="module")
def cluster():
    ok, why = rabbit_cluster.available()
    need_server(ok, "RabbitMQ (rabbitmq-server, to start a cluster)", why)
    nodes = rabbit_cluster.RabbitCluster()
    try:
        nodes.start_all()
        yield nodes
    finally:
        nodes.stop()


def channel_on(url: str) -> tuple[Any, Any]:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.confirm_delivery()
    return connection, channel


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


class TimedPublisher(AmqpEventPublisher):
    """The relay's publisher, noting when each batch was confirmed and counting outcomes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.confirmed_at: list[float] = []
        self.outcomes: collections.Counter[str] = collections.Counter()

    def finish_many(self, batch: Any) -> list[Exception | None]:
        outcomes = super().finish_many(batch)
        for o in outcomes:
            self.outcomes[type(o).__name__ if o is not None else "confirmed"] += 1
        if any(o is None for o in outcomes):
            self.confirmed_at.append(time.monotonic())
        return outcomes


class Seen:
    """What one consumer saw: ids with their counts, and when each run happened."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.at: list[float] = []
        self.lock = threading.Lock()

    def add(self, key: str) -> None:
        with self.lock:
            self.counts[key] += 1
            self.at.append(time.monotonic())

    @property
    def duplicates(self) -> int:
        with self.lock:
            return sum(n - 1 for n in self.counts.values())

    def first_after(self, moment: float) -> float | None:
        with self.lock:
            later = [t for t in self.at if t > moment]
        return min(later) - moment if later else None


class Sender(threading.Thread):
    """Sends until stopped; what `send()` returned from is acknowledged (confirmed)."""

    def __init__(self, send: Any, pace: float) -> None:
        super().__init__(daemon=True)
        self.send, self.pace = send, pace
        self.stop = threading.Event()
        self.acked: set[str] = set()
        self.acked_at: list[float] = []
        self.failures = 0

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                for key in self.send():
                    self.acked.add(key)
                    self.acked_at.append(time.monotonic())
            except Exception:  # noqa: BLE001 - the sender retries what was not acknowledged
                self.failures += 1
                self.stop.wait(0.2)
            self.stop.wait(self.pace)

    def first_after(self, moment: float) -> float | None:
        later = [t for t in list(self.acked_at) if t > moment]
        return min(later) - moment if later else None


def drain(cluster: Any, queue: str) -> collections.Counter[str]:
    """Every message id in `queue`, counted, read through any live node."""
    counts: collections.Counter[str] = collections.Counter()
    for url in cluster.urls:
        try:
            connection, channel = channel_on(url)
        except pika.exceptions.AMQPError:
            continue
        try:
            while True:
                method, props, _body = channel.basic_get(queue, auto_ack=True)
                if method is None:
                    return counts
                counts[props.message_id] += 1
        finally:
            connection.close()
    raise AssertionError("no node answered")


def wait_until(condition: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.25)
    return bool(condition())


@PG_ONLY
def test_a_lost_node_loses_no_event_job_or_email_with_quorum_queues(api, cluster):  # noqa: C901
    exchange = f"pms-chaos-{uuid.uuid4().hex[:8]}"
    bus_queue = f"{exchange}-subscriber"
    platform_queue = f"{exchange}-platform"
    connection, channel = channel_on(cluster.urls[0])
    channel.exchange_declare(exchange, exchange_type="topic", durable=True)
    channel.queue_declare(bus_queue, durable=True, arguments={"x-queue-type": "quorum"})
    channel.queue_bind(bus_queue, exchange, routing_key="hotel.pms.#")
    declare_platform_queues(channel, exchange, platform_queue, "quorum")
    connection.close()

    # the worker: the service's queue names and actor names, on the cluster's quorum queues
    broker = PmsRabbitmqBroker(url=[bounded_amqp_url(u) for u in cluster.urls],
                               confirm_delivery=True, queue_type="quorum")
    jobs_run, emails_run = Seen(), Seen()

    @dramatiq.actor(broker=broker, actor_name="run_job", queue_name="pms-jobs", max_retries=3)
    def run_job(key: str) -> None:
        jobs_run.add(key)

    @dramatiq.actor(broker=broker, actor_name="send_reservation_email", max_retries=3)
    def send_email(key: str) -> None:
        emails_run.add(key)

    worker = dramatiq.Worker(broker, worker_threads=2, worker_timeout=200)
    worker.start()

    # the platform consumer, reading the cluster's quorum queue
    handled = Seen()
    consumer = PlatformEventConsumer(cluster.broker_url, exchange, platform_queue,
                                     lambda env_id, event_id: handled.add(str(event_id)),
                                     queue_type="quorum", reconnect_for=120)
    consumer_stop = threading.Event()
    consumer_thread = threading.Thread(target=consumer.run, args=(consumer_stop,), daemon=True)
    consumer_thread.start()

    # the relay
    publisher = TimedPublisher(cluster.broker_url, exchange)
    relay = OutboxRelay(publisher, env_id=api.env_id, idle_interval=0.2)
    relay_stop = threading.Event()
    relay_thread = threading.Thread(target=relay.run_forever, args=(relay_stop,), daemon=True)
    nudge = lambda events: relay.wake()  # noqa: E731
    wiring.add_after_emit(nudge)
    relay_thread.start()

    # the burst: requests (outbox rows), jobs and emails, platform events
    prop = api.post("/v1/properties", {"propertyCode": f"N{uuid.uuid4().hex[:6]}",
                                       "timezone": "UTC", "currencyCode": "EUR"}).json
    statuses: collections.Counter[int] = collections.Counter()
    serial = iter(range(10**9))

    def create_profile() -> list[str]:
        n = next(serial)
        resp = api.post(f"/v1/properties/{prop['id']}/profiles",
                        {"last_name": "Nodeloss", "email": f"guest-{n}-a@example.com"})
        statuses[resp.status_code] += 1
        return [str(n)] if resp.status_code == 201 else []

    def enqueue(actor: Any, prefix: str) -> Any:
        def send() -> list[str]:
            key = f"{prefix}-{uuid.uuid4().hex[:12]}"
            message = actor.message(key)
            for attempt in range(20):  # the same message (same id) again until confirmed
                try:
                    broker.enqueue(message)
                    return [key]
                except ConnectionClosed:
                    time.sleep(0.25 * (attempt + 1))
            raise RuntimeError("not enqueued")
        return send

    platform_publisher = AmqpEventPublisher(cluster.broker_url, exchange)

    def platform_events() -> list[str]:
        events = [{"specversion": "1.0", "id": str(uuid.uuid4()), "source": "platform",
                   "type": "platform:service:updated", "envid": str(uuid.uuid4()),
                   "data": {"service": "hotel-pms"}} for _ in range(5)]
        for _ in range(40):  # unconfirmed ones go again, with their ids
            pending = [e for e, o in zip(events, platform_publisher.publish_many(events),
                                         strict=True) if o is not None]
            confirmed = [e["id"] for e in events if e not in pending]
            if not pending:
                return confirmed
            time.sleep(0.25)
        raise RuntimeError("platform events not confirmed")

    senders = {"requests": Sender(create_profile, 0.01),
               "jobs": Sender(enqueue(run_job, "job"), 0.02),
               "emails": Sender(enqueue(send_email, "email"), 0.03),
               "platform": Sender(platform_events, 0.1)}
    losses: list[dict[str, Any]] = []

    def stop_senders() -> None:
        for sender in senders.values():
            sender.stop.set()
        for sender in senders.values():
            if sender.is_alive():
                sender.join(timeout=60)

    def shutdown() -> None:
        """Every client stopped before the cluster and the database go (fixtures' teardown)."""
        stop_senders()
        wiring.remove_after_emit(nudge)
        relay_stop.set()
        relay.wake()
        relay_thread.join(timeout=30)
        consumer_stop.set()
        consumer_thread.join(timeout=30)
        worker.stop(timeout=10_000)
        broker.close()
        platform_publisher.close()

    try:
        for sender in senders.values():
            sender.start()
        assert wait_until(lambda: publisher.confirmed_at and jobs_run.at and handled.at, 60), \
            "the burst did not get going"
        time.sleep(3)
        for loss in range(LOSSES):
            victim = next(n for n in cluster.nodes
                          if n.port == port_of(publisher.addresses.current))
            on_victim = {"relay": True,
                         "consumer": port_of(consumer.addresses.current) == victim.port}
            before = collections.Counter(publisher.outcomes)
            killed = cluster.kill(victim.index)
            # each part is back when it works again after the kill, through another node
            def resumed(k: float = killed) -> bool:
                return (_first(publisher.confirmed_at, k) is not None
                        and jobs_run.first_after(k) is not None
                        and emails_run.first_after(k) is not None
                        and handled.first_after(k) is not None)

            back = wait_until(resumed, 90)
            figures = {
                "loss": loss + 1, "node": victim.name, "on_lost_node": on_victim,
                "relay_resumed_s": _first(publisher.confirmed_at, killed),
                "relay_outcomes_since": dict(publisher.outcomes - before),
                "jobs_enqueued_again_s": _round(senders["jobs"].first_after(killed)),
                "jobs_run_again_s": _round(jobs_run.first_after(killed)),
                "emails_run_again_s": _round(emails_run.first_after(killed)),
                "platform_handled_again_s": _round(handled.first_after(killed)),
                "relay_now_on": publisher.addresses.current,
            }
            if not back:
                print(f"\nnot resumed: {figures}; acked since the kill: "
                      f"{ {k: snd.first_after(killed) for k, snd in senders.items()} }")
            assert back, figures
            assert port_of(publisher.addresses.current) != victim.port
            losses.append(figures)
            cluster.start(victim.index)  # the machine comes back; the next loss is another
            cluster.wait_rejoined(victim.index)
            time.sleep(3)
        stop_senders()
    except BaseException:
        shutdown()
        raise

    jobs_acked = senders["jobs"].acked
    emails_acked = senders["emails"].acked
    platform_acked = senders["platform"].acked
    try:
        settled = wait_until(
            lambda: outbox.outbox_status(env_id=api.env_id).backlog == 0
            and jobs_acked <= set(jobs_run.counts) and emails_acked <= set(emails_run.counts)
            and platform_acked <= set(handled.counts), SETTLE_S)
    finally:
        shutdown()

    with read_scope(Ctx(env_id=api.env_id)):
        rows = {str(r.id) for r in OutboxEvent.select()}
    delivered = drain(cluster, bus_queue)
    figures = {
        "requests": dict(statuses), "outbox_rows": len(rows),
        "events_delivered": len(delivered), "event_duplicates": sum(delivered.values())
        - len(delivered),
        "jobs_acked": len(jobs_acked), "job_duplicates_run": jobs_run.duplicates,
        "emails_acked": len(emails_acked), "email_duplicates_run": emails_run.duplicates,
        "platform_events_acked": len(platform_acked),
        "platform_duplicates_handled": handled.duplicates,
        "consumer_reconnects": consumer.reconnects,
        "sender_failures": {k: s.failures for k, s in senders.items()},
        "losses": losses,
    }
    print(f"\nbroker node loss (quorum queues): {figures}")
    assert settled, figures
    assert set(statuses) == {201}, statuses  # requests never wait for the broker
    # nothing lost, and deduplication by id leaves each exactly once
    assert set(delivered) == rows, (len(rows - set(delivered)), "outbox rows lost")
    assert jobs_acked <= set(jobs_run.counts) and emails_acked <= set(emails_run.counts)
    assert platform_acked <= set(handled.counts)
    assert len(losses) == LOSSES


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _first(moments: list[float], after: float) -> float | None:
    later = [t for t in list(moments) if t > after]
    return round(min(later) - after, 2) if later else None


CONTROL_MESSAGES = 200


def test_control_classic_queues_on_the_lost_node_are_unavailable_quorum_ones_are_not(cluster):
    """Both queues declared through the node that is then lost: it is the classic queue's home
    and the quorum queue's leader. During the outage the classic queue serves nothing (and
    takes nothing: what is published to it is dropped), the quorum queue serves everything."""
    victim = cluster.nodes[1]
    survivor = cluster.nodes[0]
    name = f"pms-control-{uuid.uuid4().hex[:8]}"
    classic, quorum = f"{name}-classic", f"{name}-quorum"
    connection, channel = channel_on(victim.url)
    channel.queue_declare(classic, durable=True)
    channel.queue_declare(quorum, durable=True, arguments={"x-queue-type": "quorum"})
    for queue in (classic, quorum):
        for n in range(CONTROL_MESSAGES):
            channel.basic_publish("", queue, b"x", pika.BasicProperties(
                delivery_mode=2, message_id=f"{queue}-{n}"), mandatory=True)
    connection.close()

    killed = cluster.kill(victim.index)
    cluster.wait_seen_down(victim.index)
    connection, channel = channel_on(survivor.url)
    quorum_read = 0
    deadline = time.monotonic() + 60
    while quorum_read < CONTROL_MESSAGES and time.monotonic() < deadline:
        try:
            method, _props, _body = channel.basic_get(quorum, auto_ack=True)
        except pika.exceptions.AMQPError:  # a leader being elected: ask again
            connection, channel = _reopen(connection, survivor.url)
            time.sleep(0.2)
            continue
        if method is None:
            time.sleep(0.1)
            continue
        quorum_read += 1
    quorum_s = round(time.monotonic() - killed, 2)

    classic_read, classic_refused = 0, ""
    try:
        method, _props, _body = channel.basic_get(classic, auto_ack=True)
        classic_read += method is not None
    except pika.exceptions.ChannelClosedByBroker as exc:
        classic_refused = f"{exc.reply_code} {exc.reply_text[:90]}"
    connection, channel = _reopen(connection, survivor.url)
    published_in_outage = confirmed_in_outage = 0
    for n in range(50):
        published_in_outage += 1
        try:
            channel.basic_publish("", classic, b"y", pika.BasicProperties(
                delivery_mode=2, message_id=f"outage-{n}"), mandatory=True)
            confirmed_in_outage += 1
        except pika.exceptions.UnroutableError:
            pass
        except pika.exceptions.AMQPError:
            connection, channel = _reopen(connection, survivor.url)
    connection.close()

    cluster.start(victim.index)
    cluster.wait_rejoined(victim.index)
    back = {}
    for queue in (classic, quorum):
        back[queue] = _count_after_restart(cluster, survivor.url, queue)
    connection, channel = channel_on(survivor.url)
    channel.queue_delete(classic)
    channel.queue_delete(quorum)
    connection.close()
    figures = {"messages": CONTROL_MESSAGES, "quorum_read_in_outage": quorum_read,
               "quorum_all_read_after_s": quorum_s, "classic_read_in_outage": classic_read,
               "classic_refused": classic_refused,
               "classic_published_in_outage": published_in_outage,
               "classic_confirmed_in_outage": confirmed_in_outage,
               "classic_after_node_back": back[classic],
               "classic_lost_from_outage": published_in_outage - max(
                   0, back[classic] - CONTROL_MESSAGES)}
    print(f"\nbroker node loss control (classic vs quorum): {figures}")
    assert quorum_read == CONTROL_MESSAGES
    assert classic_read == 0 and classic_refused.startswith("404"), figures
    # the classic queue's messages were on the lost node only: back with it, not before
    assert back[classic] >= CONTROL_MESSAGES, figures


def _reopen(connection: Any, url: str) -> tuple[Any, Any]:
    try:
        if connection.is_open:
            connection.close()
    except Exception:  # noqa: BLE001 - replaced anyway
        pass
    return channel_on(url)


def _count_after_restart(cluster: Any, url: str, queue: str, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        try:
            connection, channel = channel_on(url)
            try:
                return channel.queue_declare(queue, passive=True).method.message_count
            finally:
                if connection.is_open:
                    connection.close()
        except pika.exceptions.AMQPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
