"""Consumer of platform events (the `platform` process: `pms-cli platform consume`).

A durable queue bound to `platform.service.updated.#` on `PMS_EVENT_EXCHANGE`, manual acks,
prefetch bounded. An event whose `data.service` is "hotel-pms" initializes its env idempotently
(pms.services.environments); events for other services are acked and ignored. A message that
cannot be handled (malformed JSON, no env id, a handler error) is re-queued with an attempt count
in its headers and, at the third failure, rejected into the dead-letter queue; other messages
keep flowing meanwhile.

The broker URL may name the nodes of a cluster, comma separated: a lost connection (a node
lost, a broker restart) is opened again on the next node, the queue declared again and the
consumption resumed, for as long as `reconnect_for` seconds pass with no connection; the
messages the lost connection had not acked are delivered again (the handler is idempotent by
env). With `queue_type="quorum"` (PMS_BROKER_QUEUE_TYPE) the queue and its dead-letter queue
are quorum queues, replicated over the cluster.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pika
import pika.exceptions

from pms.config import DEFAULT_PLATFORM_EVENT_SOURCE
from pms.db.iteration import iteration_scope
from workers.publisher import AddressRing, amqp_parameter_list

log = logging.getLogger("pms.platform_events")

BINDING = "platform.service.updated.#"
EVENT_TYPE = "platform:service:updated"
SERVICE = "hotel-pms"
MAX_ATTEMPTS = 3
ATTEMPTS_HEADER = "x-pms-attempts"


class MalformedEvent(ValueError):
    """The message is not a usable service-updated CloudEvent."""


@dataclass
class ConsumeStats:
    handled: int = 0
    ignored: int = 0
    retried: int = 0
    dead_lettered: int = 0
    results: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"handled": self.handled, "ignored": self.ignored, "retried": self.retried,
                "dead_lettered": self.dead_lettered}


def parse_event(body: bytes, source: str = DEFAULT_PLATFORM_EVENT_SOURCE
                ) -> tuple[uuid.UUID | None, str | None]:
    """(env_id, event id) for a hotel-pms service-updated event; (None, id) for another service
    or for an event from another CloudEvents `source` than the platform's (anything
    that can publish on the exchange could otherwise initialize envs; PMS_PLATFORM_EVENT_SOURCE,
    default "platform"), which is acked, logged and ignored.

    Raises MalformedEvent for anything else.
    """
    try:
        event = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedEvent("not JSON") from exc
    if not isinstance(event, dict) or event.get("type") != EVENT_TYPE:
        raise MalformedEvent("not a platform:service:updated CloudEvent")
    data = event.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("service"), str):
        raise MalformedEvent("data.service is missing")
    event_id = str(event.get("id")) if event.get("id") else None
    if event.get("source") != source:
        log.warning("ignoring a platform event from source %r (accepted: %r), id %s",
                    str(event.get("source"))[:200], source, event_id)
        return None, event_id
    if data["service"] != SERVICE:
        return None, event_id
    raw_env = event.get("envid") or data.get("env_id")
    try:
        return uuid.UUID(str(raw_env)), event_id
    except ValueError as exc:
        raise MalformedEvent("no valid env id (envid)") from exc


def declare(channel: Any, exchange: str, queue: str, queue_type: str = "classic") -> None:
    """The exchange, the durable queue with its dead-letter queue (both of `queue_type`),
    and the binding."""
    from workers.broker import queue_type_arguments

    kind = queue_type_arguments(queue_type)
    dlx = f"{queue}.dlx"
    channel.exchange_declare(exchange, exchange_type="topic", durable=True)
    channel.exchange_declare(dlx, exchange_type="fanout", durable=True)
    channel.queue_declare(f"{queue}.dead", durable=True, arguments=dict(kind) or None)
    channel.queue_bind(f"{queue}.dead", dlx)
    channel.queue_declare(queue, durable=True,
                          arguments={"x-dead-letter-exchange": dlx, **kind})
    channel.queue_bind(queue, exchange, routing_key=BINDING)


class PlatformEventConsumer:
    """Consumes service-updated events; `handler(env_id, event_id)` does the work."""

    def __init__(self, url: str, exchange: str, queue: str,
                 handler: Callable[[uuid.UUID, str | None], Any], *, prefetch: int = 10,
                 source: str = DEFAULT_PLATFORM_EVENT_SOURCE, queue_type: str = "classic",
                 reconnect_for: float = 60.0) -> None:
        self.url, self.exchange, self.queue = url, exchange, queue
        self.queue_type = queue_type
        self.addresses = AddressRing(amqp_parameter_list(url, heartbeat=30))
        # how long the consumer keeps trying to connect before `run` gives up (raises)
        self.reconnect_for = reconnect_for
        self.reconnects = 0  # connections opened again after one was lost
        self._consuming = False
        self.source = source
        self.handler = handler
        self.prefetch = prefetch
        self.stats = ConsumeStats()

    def handle(self, channel: Any, method: Any, props: Any, body: bytes) -> None:
        try:
            env_id, event_id = parse_event(body, self.source)
            if env_id is None:
                self.stats.ignored += 1
            else:
                # each message owns its connection: a dead one goes with the message
                with iteration_scope():
                    result = self.handler(env_id, event_id)
                self.stats.handled += 1
                if hasattr(result, "as_dict"):
                    self.stats.results.append(result.as_dict())
        except Exception as exc:  # noqa: BLE001 - counted, retried, then dead-lettered
            self._failed(channel, method, props, body, exc)
            return
        channel.basic_ack(method.delivery_tag)

    def _failed(self, channel: Any, method: Any, props: Any, body: bytes, exc: Exception) -> None:
        headers = dict(props.headers or {})
        attempts = int(headers.get(ATTEMPTS_HEADER, 1))
        if attempts >= MAX_ATTEMPTS:
            log.warning("dead-lettering a platform event after %d attempts: %s", attempts, exc)
            self.stats.dead_lettered += 1
            channel.basic_reject(method.delivery_tag, requeue=False)
            return
        log.info("platform event failed (attempt %d): %s", attempts, exc)
        headers[ATTEMPTS_HEADER] = attempts + 1
        headers["x-pms-last-error"] = f"{type(exc).__name__}: {exc}"[:500]
        copy = pika.BasicProperties(content_type=props.content_type, delivery_mode=2,
                                    message_id=props.message_id, type=props.type,
                                    headers=headers)
        # The copy goes to the back of the queue (the others keep flowing), then the original
        # is acked; publisher confirms make sure the copy exists before the ack.
        channel.basic_publish("", self.queue, body, properties=copy)
        self.stats.retried += 1
        channel.basic_ack(method.delivery_tag)

    def run(self, stop: threading.Event, *, max_messages: int | None = None,
            idle_timeout: float | None = None) -> ConsumeStats:
        """Consume until `stop` is set, `max_messages` were seen, or idle for `idle_timeout`;
        a lost connection is opened again on the next node (module docstring). Raises the
        broker's error once no node answered for `reconnect_for` seconds."""
        seen = [0]
        failing_since: float | None = None
        delay = 0.1
        connected_before = False
        while not stop.is_set():
            try:
                connection = pika.BlockingConnection(self.addresses.order())
            except pika.exceptions.AMQPError as exc:
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since >= self.reconnect_for:
                    raise
                log.warning("platform consumer: no broker node answered (%s); again in %.1f s",
                            type(exc).__name__, delay)
                stop.wait(delay)
                delay = min(delay * 2, 2.0)
                continue
            self.addresses.connected(connection)
            if connected_before:
                self.reconnects += 1
                log.warning("platform consumer: consuming again through %s",
                            self.addresses.current)
            connected_before = True
            self._consuming = False
            try:
                done = self._consume(connection, stop, seen, max_messages, idle_timeout)
                failing_since, delay = None, 0.1
                if done:
                    break
            except (pika.exceptions.AMQPError, OSError) as exc:
                # the node went away (or the queue's home node with it): the next one
                if self._consuming:  # it had worked: a new outage begins now
                    failing_since, delay = None, 0.1
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since >= self.reconnect_for:
                    raise
                log.warning("platform consumer: connection to %s lost (%s: %s)",
                            self.addresses.current, type(exc).__name__, exc)
                self.addresses.broke()
                stop.wait(delay)
                delay = min(delay * 2, 2.0)
            finally:
                _quiet_close(connection)
        return self.stats

    def _consume(self, connection: Any, stop: threading.Event, seen: list[int],
                 max_messages: int | None, idle_timeout: float | None) -> bool:
        """Consume on one connection; True when the run is over (stop, max, idle)."""
        channel = connection.channel()
        channel.confirm_delivery()
        declare(channel, self.exchange, self.queue, self.queue_type)
        channel.basic_qos(prefetch_count=self.prefetch)
        self._consuming = True
        idle = 0.0
        for method, props, body in channel.consume(self.queue, inactivity_timeout=0.5):
            if stop.is_set():
                break
            if method is None:
                idle += 0.5
                if idle_timeout is not None and idle >= idle_timeout:
                    break
                continue
            idle = 0.0
            self.handle(channel, method, props, body)
            seen[0] += 1
            if max_messages is not None and seen[0] >= max_messages:
                break
        channel.cancel()
        return True


def _quiet_close(connection: Any) -> None:
    try:
        if connection.is_open:
            connection.close()
    except Exception:  # noqa: BLE001 - the connection is being thrown away anyway
        pass
