"""Event publishers for the outbox relay: AMQP (pika) in production, in-memory when embedded.

`AmqpEventPublisher` publishes each CloudEvent to the durable topic exchange
`PMS_EVENT_EXCHANGE` with routing key = type with ':' -> '.', `message_id` = event id, persistent
delivery, publisher confirms and the `mandatory` flag, and returns only once the broker confirmed.
A returned (unroutable) or nacked message raises `PublishRejected` (that row backs off); anything
that breaks the connection raises `BrokerUnavailable` (the relay backs off). Connection set-up,
socket reads, blocked connections (broker alarms) and missed heartbeats are all bounded, so an
outage or a partition cannot hang the relay.
"""

from __future__ import annotations

import collections
import json
import threading
import time
from typing import Any

import pika
import pika.exceptions

from pms.config import Settings
from pms.events import routing_key as routing_key_of
from pms.services.outbox import BrokerUnavailable, PublishRejected

CONTENT_TYPE = "application/cloudevents+json"


def _body(event: dict[str, Any]) -> bytes:
    return json.dumps(event, separators=(",", ":"), sort_keys=True, default=str).encode()


def amqp_parameters(url: str, *, connect_timeout: float = 3.0, heartbeat: int = 5,
                    blocked_timeout: float = 10.0) -> pika.URLParameters:
    """Connection parameters with every wait bounded."""
    params = pika.URLParameters(url)
    params.socket_timeout = connect_timeout
    params.stack_timeout = connect_timeout + 2
    params.connection_attempts = 1
    params.retry_delay = 0
    params.heartbeat = heartbeat
    params.blocked_connection_timeout = blocked_timeout
    params.client_properties = {"connection_name": "pms-outbox-relay"}
    return params


class AmqpEventPublisher:
    """One pika BlockingConnection with confirms; reconnects lazily after a failure."""

    def __init__(self, url: str, exchange: str, *, connect_timeout: float = 3.0,
                 heartbeat: int = 5, blocked_timeout: float = 10.0,
                 declare_exchange: bool = True) -> None:
        self.url = url
        self.exchange = exchange
        self.params = amqp_parameters(url, connect_timeout=connect_timeout, heartbeat=heartbeat,
                                      blocked_timeout=blocked_timeout)
        self.declare_exchange = declare_exchange
        self._connection: pika.BlockingConnection | None = None
        self._channel: Any = None

    def _open(self) -> Any:
        if self._channel is not None and self._channel.is_open:
            return self._channel
        self.close()
        try:
            self._connection = pika.BlockingConnection(self.params)
            channel = self._connection.channel()
            channel.confirm_delivery()
            if self.declare_exchange:
                channel.exchange_declare(self.exchange, exchange_type="topic", durable=True)
        except (pika.exceptions.AMQPError, OSError) as exc:
            self.close()
            raise BrokerUnavailable(f"cannot connect: {type(exc).__name__} {exc}") from exc
        self._channel = channel
        return channel

    def publish(self, event: dict[str, Any], *, routing_key: str | None = None) -> None:
        """Publish one event and wait for the broker's confirm (see module docstring)."""
        channel = self._open()
        props = pika.BasicProperties(
            content_type=CONTENT_TYPE, delivery_mode=2, message_id=event["id"],
            type=event["type"], timestamp=int(time.time()), app_id="hotel-pms",
            headers={"envid": event.get("envid"), "idempotencykey": event.get("idempotencykey")},
        )
        try:
            channel.basic_publish(self.exchange, routing_key or routing_key_of(event["type"]),
                                  _body(event), properties=props, mandatory=True)
        except pika.exceptions.UnroutableError as exc:
            raise PublishRejected("unroutable: no queue is bound for this routing key") from exc
        except pika.exceptions.NackError as exc:
            raise PublishRejected("nacked by the broker") from exc
        except (pika.exceptions.AMQPError, OSError) as exc:
            self.close()
            raise BrokerUnavailable(f"{type(exc).__name__} {exc}") from exc

    def close(self) -> None:
        connection, self._connection, self._channel = self._connection, None, None
        if connection is not None:
            try:
                if connection.is_open:
                    connection.close()
            except Exception:  # noqa: BLE001 - the connection is being thrown away anyway
                pass


class LocalEventPublisher:
    """The embedded default's bus: confirms at once and keeps the last events in memory."""

    def __init__(self, keep: int = 1000) -> None:
        self.events: collections.deque[tuple[str, dict[str, Any]]] = collections.deque(maxlen=keep)
        self._lock = threading.Lock()

    def publish(self, event: dict[str, Any], *, routing_key: str | None = None) -> None:
        with self._lock:
            self.events.append((routing_key or routing_key_of(event["type"]), event))

    def close(self) -> None:
        return None


def build_publisher(settings: Settings) -> AmqpEventPublisher | LocalEventPublisher:
    """AMQP when the broker URL is amqp(s)://, the in-memory bus for the embedded stub://."""
    if settings.broker_url.startswith(("amqp://", "amqps://")):
        return AmqpEventPublisher(settings.broker_url, settings.event_exchange)
    return LocalEventPublisher()
