"""Several broker addresses in PMS_BROKER_URL, and quorum queues declared on a real broker."""

from __future__ import annotations

import threading
import uuid
from urllib.parse import parse_qs, urlparse

import pika
import pika.exceptions
import pytest
from dramatiq.brokers.rabbitmq import DEAD_MESSAGE_TTL

from pms.config import load_settings
from tests.workers.amqp import TcpProxy, amqp_url, available, via
from workers.broker import PmsRabbitmqBroker, broker_addresses, build_broker
from workers.consumer import PlatformEventConsumer
from workers.consumer import declare as declare_platform_queues
from workers.publisher import AmqpEventPublisher

NODES = ("amqp://guest:guest@mq-a.internal:5672/%2F,amqp://guest:guest@mq-b.internal:5672/%2F, "
         "amqp://guest:guest@mq-c.internal:5672/%2F?heartbeat=30")


def settings(**env):
    return load_settings({"PMS_HOME": "/tmp/pms-broker-addresses", **env})


def test_a_comma_separated_broker_url_is_the_list_of_nodes_in_order():
    s = settings(PMS_BROKER_URL=NODES)
    assert [urlparse(u).hostname for u in s.broker_urls] == ["mq-a.internal", "mq-b.internal",
                                                             "mq-c.internal"]
    assert not s.development  # a list of AMQP nodes is a production broker
    single = settings(PMS_BROKER_URL="amqp://guest:guest@127.0.0.1:5672/%2F")
    assert single.broker_urls == ("amqp://guest:guest@127.0.0.1:5672/%2F",)
    assert settings().broker_urls == ("stub://",)


@pytest.mark.parametrize("value", ["", " , ", "stub://,amqp://guest:guest@mq-a:5672/%2F",
                                   "amqp://guest:guest@mq-a:5672/%2F,http://mq-b:5672/"])
def test_a_broker_url_list_of_anything_but_amqp_nodes_is_refused(value):
    with pytest.raises(ValueError, match="PMS_BROKER_URL"):
        settings(PMS_BROKER_URL=value)


def test_the_queue_type_is_classic_unless_quorum_is_asked_for():
    assert settings().broker_queue_type == "classic"
    assert settings(PMS_BROKER_QUEUE_TYPE=" Quorum ").broker_queue_type == "quorum"
    with pytest.raises(ValueError, match="PMS_BROKER_QUEUE_TYPE"):
        settings(PMS_BROKER_QUEUE_TYPE="stream")


def test_each_node_gets_the_bounded_waits_and_a_process_may_begin_at_any_node():
    s = settings(PMS_BROKER_URL=NODES)
    first = broker_addresses(s, start=0)
    assert [urlparse(u).hostname for u in first] == ["mq-a.internal", "mq-b.internal",
                                                     "mq-c.internal"]
    for url in first:
        assert parse_qs(urlparse(url).query)["socket_timeout"] == ["3"]
    assert parse_qs(urlparse(first[2]).query)["heartbeat"] == ["30"]  # explicit values win
    assert [urlparse(u).hostname for u in broker_addresses(s, start=2)][0] == "mq-c.internal"
    starts = {urlparse(broker_addresses(s)[0]).hostname for _ in range(60)}
    assert starts == {"mq-a.internal", "mq-b.internal", "mq-c.internal"}
    broker = build_broker(s)  # nothing connects until a message goes out
    assert isinstance(broker, PmsRabbitmqBroker) and len(broker.parameters) == 3


def test_quorum_queues_take_no_max_priority():
    with pytest.raises(ValueError, match="x-max-priority"):
        PmsRabbitmqBroker(url="amqp://guest:guest@127.0.0.1:5672/%2F", queue_type="quorum",
                          max_priority=5)


# -- against the machine's RabbitMQ ----------------------------------------------------------

@pytest.fixture
def rabbit():
    ok, why = available()
    if not ok:
        from tests.conftest import need_server

        need_server(ok, "RabbitMQ", why)
    declared: list[str] = []
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url()))
    yield conn, declared
    if not conn.is_open:
        conn = pika.BlockingConnection(pika.URLParameters(amqp_url()))
    channel = conn.channel()
    for name in declared:
        channel.queue_delete(name)
    conn.close()


def queue_type_of(conn, name, arguments=None):
    """The type the broker holds for `name`: a redeclare with its other `arguments` and
    another x-queue-type is refused (PRECONDITION_FAILED), the same type accepted."""
    for kind in ("quorum", "classic"):
        channel = conn.channel()
        try:
            channel.queue_declare(name, passive=False, durable=True,
                                  arguments={**(arguments or {}), "x-queue-type": kind})
        except pika.exceptions.ChannelClosedByBroker as exc:
            assert exc.reply_code == 406, exc
            continue
        channel.close()
        return kind
    raise AssertionError(f"{name}: neither quorum nor classic")


@pytest.mark.rabbitmq
@pytest.mark.parametrize("queue_type", ["quorum", "classic"])
def test_the_workers_queues_are_declared_with_the_queue_type(rabbit, queue_type):
    conn, declared = rabbit
    name = f"pms-test-{uuid.uuid4().hex[:10]}"
    declared += [name, f"{name}.DQ", f"{name}.XQ"]
    broker = PmsRabbitmqBroker(url=amqp_url(), confirm_delivery=True, queue_type=queue_type)
    try:
        broker.declare_queue(name, ensure=True)
    finally:
        broker.close()
    # the actor's queue, its delay queue and its dead-letter queue; classic is the control
    # (a check that always answered "quorum" would fail it)
    dead_letters = {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": f"{name}.XQ"}
    assert queue_type_of(conn, name, dead_letters) == queue_type
    assert queue_type_of(conn, f"{name}.DQ", dead_letters) == queue_type
    assert queue_type_of(conn, f"{name}.XQ", {"x-message-ttl": DEAD_MESSAGE_TTL}) == queue_type


@pytest.mark.rabbitmq
@pytest.mark.parametrize("queue_type", ["quorum", "classic"])
def test_the_platform_queue_and_its_dead_letter_queue_take_the_queue_type(rabbit, queue_type):
    conn, declared = rabbit
    name = f"pms-test-{uuid.uuid4().hex[:10]}"
    exchange = f"{name}-x"
    declared += [name, f"{name}.dead"]
    channel = conn.channel()
    declare_platform_queues(channel, exchange, name, queue_type)
    assert queue_type_of(conn, name, {"x-dead-letter-exchange": f"{name}.dlx"}) == queue_type
    assert queue_type_of(conn, f"{name}.dead") == queue_type
    cleanup = conn.channel()
    cleanup.exchange_delete(exchange)
    cleanup.exchange_delete(f"{name}.dlx")


@pytest.mark.rabbitmq
@pytest.mark.parametrize("backend", ["sqlite"])
def test_publisher_and_consumer_go_on_through_the_next_address(rabbit, database):
    """Two addresses of one broker, the first behind a proxy that is then cut: the publisher
    fails the batch in flight, then confirms through the second address without a new
    publisher; the consumer reconnects there and reads what was published."""
    conn, declared = rabbit
    ok, _ = available()
    assert ok
    parsed = urlparse(amqp_url())
    proxy = TcpProxy(parsed.hostname or "127.0.0.1", parsed.port or 5672)
    url = f"{via(amqp_url(), proxy.port)},{amqp_url()}"
    exchange = f"pms-test-{uuid.uuid4().hex[:10]}"
    queue = f"{exchange}-platform"
    declared += [queue, f"{queue}.dead"]
    seen: list[tuple[uuid.UUID, str | None]] = []
    consumer = PlatformEventConsumer(url, exchange, queue, lambda e, i: seen.append((e, i)),
                                     queue_type="quorum", reconnect_for=20)
    publisher = AmqpEventPublisher(url, exchange)
    stop = threading.Event()
    declare_platform_queues(conn.channel(), exchange, queue, "quorum")  # bound before we publish
    try:
        assert publisher.publish_many([event()]) == [None]
        assert publisher.addresses.current == f"127.0.0.1:{proxy.port}"
        runner = threading.Thread(target=consumer.run, args=(stop,), daemon=True)
        runner.start()
        _wait(lambda: len(seen) == 1)
        assert consumer.addresses.current == f"127.0.0.1:{proxy.port}"
        proxy.cut()  # the first node is lost
        outcomes = publisher.publish_many([event()])
        if outcomes != [None]:  # the batch on the lost connection failed: the relay retries
            outcomes = publisher.publish_many([event()])
        assert outcomes == [None]
        assert publisher.addresses.current == f"{parsed.hostname}:{parsed.port or 5672}"
        _wait(lambda: len(seen) >= 2)
        assert consumer.reconnects == 1
        assert consumer.addresses.current == f"{parsed.hostname}:{parsed.port or 5672}"
    finally:
        stop.set()
        publisher.close()
        proxy.close()
    cleanup = conn.channel()
    for name in (exchange, f"{queue}.dlx"):
        cleanup.exchange_delete(name)


def event():
    return {"specversion": "1.0", "id": str(uuid.uuid4()), "source": "platform",
            "type": "platform:service:updated", "envid": str(uuid.uuid4()),
            "data": {"service": "hotel-pms"}}


def _wait(condition, timeout=15.0):
    done = threading.Event()
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        done.wait(0.05)
    raise AssertionError("condition not met in time")


@pytest.mark.rabbitmq
def test_a_nacked_batch_leaves_its_connection_for_a_new_one(rabbit):
    """A queue that refuses every message (x-overflow reject-publish at length 0) nacks: the
    row backs off, and the next batch goes on a new connection. The control: a confirmed
    batch keeps its connection."""
    conn, declared = rabbit
    exchange = f"pms-test-{uuid.uuid4().hex[:10]}"
    queue = f"{exchange}-full"
    declared.append(queue)
    channel = conn.channel()
    channel.exchange_declare(exchange, exchange_type="topic", durable=True)
    channel.queue_declare(queue, durable=True,
                          arguments={"x-max-length": 0, "x-overflow": "reject-publish"})
    channel.queue_bind(queue, exchange, routing_key="refused.#")
    publisher = AmqpEventPublisher(amqp_url(), exchange)
    try:
        ok = {**event(), "type": "accepted:elsewhere"}  # routed nowhere: confirmed
        assert publisher.publish_many([ok]) == [None]
        kept = publisher._connection
        assert publisher.publish_many([{**event(), "type": "accepted:again"}]) == [None]
        assert publisher._connection is kept
        (outcome,) = publisher.publish_many([{**event(), "type": "refused:here"}])
        assert type(outcome).__name__ == "PublishRejected" and "nacked" in str(outcome)
        assert publisher._connection is None  # abandoned: the next publish opens another
        assert publisher.publish_many([ok]) == [None]
        assert publisher._connection is not None and publisher._connection is not kept
    finally:
        publisher.close()
        conn.channel().exchange_delete(exchange)


@pytest.mark.rabbitmq
def test_the_health_check_finds_the_broker_on_any_of_its_nodes(rabbit):
    from pms.api.health import check_broker

    dead = "amqp://guest:guest@127.0.0.1:1/%2F"
    assert check_broker(f"{dead},{amqp_url()}").ok
    assert not check_broker(f"{dead},{dead}").ok  # the control: no node answers
