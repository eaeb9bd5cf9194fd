"""Platform service-updated events: env initialization (idempotent, ledger fail-open) and the
consumer on the real RabbitMQ (manual acks, dead-letter after 3 attempts, others keep flowing)."""

from __future__ import annotations

import json
import threading
import uuid

import pika
import pytest

from pms.context import system_ctx
from pms.errors import DependencyUnavailable
from pms.platform.ledger import EmbeddedLedger
from pms.services.environments import get_environment, initialize_environment
from tests.helpers import counts, outbox_types
from workers.consumer import MalformedEvent, PlatformEventConsumer, parse_event


class DownLedger:
    def ensure_settlement_accounts(self, env_id):
        raise DependencyUnavailable("ledger down")


def event(env_id, service="hotel-pms", **over):
    body = {"specversion": "1.0", "id": str(uuid.uuid4()), "source": "platform",
            "type": "platform:service:updated", "envid": str(env_id),
            "data": {"service": service, "status": "enabled"}}
    body.update(over)
    return json.dumps(body).encode()


def test_initialize_is_idempotent_and_creates_ledger_accounts(database, env_id):
    ledger = EmbeddedLedger()
    first = initialize_environment(env_id, ledger=ledger, source_event_id="e1")
    ctx = system_ctx(env_id)
    after_first = counts(ctx)
    second = initialize_environment(env_id, ledger=ledger, source_event_id="e2")
    assert first.created and first.ledger_accounts_ready
    assert not second.created and second.ledger_accounts_ready
    assert counts(ctx) == after_first
    assert outbox_types(ctx) == ["hotel:pms:environment:initialized",
                                 "hotel:pms:environment:ledger_accounts_ready"]
    row = get_environment(ctx)
    assert "cancellation_reasons" in row.lists_of_values and row.ledger_accounts


def test_ledger_outage_fails_open_and_a_later_event_finishes(database, env_id):
    down = initialize_environment(env_id, ledger=DownLedger())
    assert down.created and not down.ledger_accounts_ready and "ledger down" in down.error
    row = get_environment(system_ctx(env_id))
    assert row.ledger_accounts_ready is False and "ledger down" in row.last_error
    up = initialize_environment(env_id, ledger=EmbeddedLedger())
    assert not up.created and up.ledger_accounts_ready


def test_parse_event_rules():
    env = uuid.uuid4()
    assert parse_event(event(env))[0] == env
    assert parse_event(event(env, service="payments"))[0] is None
    for bad in (b"{", json.dumps({"type": "x"}).encode(), event(env, envid="nope"),
                json.dumps({"type": "platform:service:updated", "data": {}}).encode()):
        with pytest.raises(MalformedEvent):
            parse_event(bad)


@pytest.mark.rabbitmq
def test_consumer_initializes_envs_and_dead_letters_malformed_messages(database, bus):
    queue = f"{bus.exchange}-platform"
    env_a, env_b = uuid.uuid4(), uuid.uuid4()
    ledger = EmbeddedLedger()
    consumer = PlatformEventConsumer(
        bus.url, bus.exchange, queue,
        lambda env, ev: initialize_environment(env, ledger=ledger, source_event_id=ev))
    # Declare first (a consumer run with nothing to do), so the published events are queued.
    consumer.run(threading.Event(), idle_timeout=0.5)
    bus.queues += [queue, f"{queue}.dead"]
    publish = [b"not json", event(env_a), event(env_a), event(env_b, service="payments"),
               event(env_b)]
    for body in publish:
        bus.ch.basic_publish(bus.exchange, "platform.service.updated.hotel-pms", body,
                             properties=pika.BasicProperties(delivery_mode=2))
    stats = consumer.run(threading.Event(), idle_timeout=1.5)
    assert (stats.handled, stats.ignored, stats.retried, stats.dead_lettered) == (3, 1, 2, 1)
    method, props, body = bus.ch.basic_get(f"{queue}.dead", auto_ack=True)
    assert body == b"not json" and props.headers["x-pms-attempts"] == 3
    assert get_environment(system_ctx(env_a)).ledger_accounts_ready
    assert get_environment(system_ctx(env_b)) is not None
    bus.ch.exchange_delete(f"{queue}.dlx")


def test_parse_event_accepts_only_the_configured_platform_source():
    """a service-updated event from any other CloudEvents source initializes
    nothing (acked and ignored, like another service's event); the source is a setting."""
    env = uuid.uuid4()
    assert parse_event(event(env))[0] == env  # the default source: "platform"
    for source in ("attacker", "", None, "platform/"):
        assert parse_event(event(env, source=source))[0] is None
    assert parse_event(event(env), "idp.example/platform")[0] is None
    assert parse_event(event(env, source="idp.example/platform"), "idp.example/platform")[0] == env


@pytest.mark.rabbitmq
def test_consumer_ignores_events_from_a_foreign_source(database, bus):
    queue = f"{bus.exchange}-platform-src"
    env_a, env_b = uuid.uuid4(), uuid.uuid4()
    consumer = PlatformEventConsumer(
        bus.url, bus.exchange, queue,
        lambda env, ev: initialize_environment(env, ledger=EmbeddedLedger(), source_event_id=ev),
        source="platform")
    consumer.run(threading.Event(), idle_timeout=0.5)
    bus.queues += [queue, f"{queue}.dead"]
    for body in (event(env_a, source="somebody-else"), event(env_b)):
        bus.ch.basic_publish(bus.exchange, "platform.service.updated.hotel-pms", body,
                             properties=pika.BasicProperties(delivery_mode=2))
    stats = consumer.run(threading.Event(), idle_timeout=1.5)
    assert (stats.handled, stats.ignored, stats.dead_lettered) == (1, 1, 0)
    assert get_environment(system_ctx(env_a)) is None
    assert get_environment(system_ctx(env_b)) is not None
    bus.ch.exchange_delete(f"{queue}.dlx")
