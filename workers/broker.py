"""`build_broker(settings)`: the Dramatiq broker for `PMS_BROKER_URL`, with our middleware.

`stub://` (the embedded default) gives a StubBroker whose messages are run by worker threads
inside the web or CLI process (see workers.runtime); anything else is RabbitMQ with publisher
confirms and bounded connection waits, whose enqueues the relay's reactions can gather and send
together (workers.enqueue). Nothing here runs at import.

Several comma-separated URLs are the nodes of a cluster: pika tries them in order on every
connect and reconnect (Dramatiq's consumers reconnect on their own after a node is lost). Each
process starts the list at a random node, so the workers' connections spread over the cluster
and a lost node is not the first address every process tries again. `PMS_BROKER_QUEUE_TYPE=
quorum` declares the actors' queues, their delay queues and their dead-letter queues as quorum
queues (replicated: a lost node loses none of their messages); quorum queues take no
`x-max-priority`, so a quorum broker refuses `max_priority`.
"""

from __future__ import annotations

import random
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlparse, urlunparse

import dramatiq
from dramatiq.brokers.rabbitmq import DEAD_MESSAGE_TTL, xq_name
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import CurrentMessage

from pms.config import Settings
from workers.enqueue import BatchingBroker
from workers.middleware import WorkerBoot
from workers.tracing import TraceMessages

# Bounded waits for the broker connection (pika URL query parameters), unless the URL sets them.
AMQP_DEFAULTS = {
    "heartbeat": "10",
    "blocked_connection_timeout": "10",
    "socket_timeout": "3",
    "stack_timeout": "5",
    "connection_attempts": "2",
    "retry_delay": "1",
}


def bounded_amqp_url(url: str) -> str:
    """`url` with the bounded-wait defaults added (explicit query values win)."""
    parsed = urlparse(url)
    query = dict(AMQP_DEFAULTS)
    query.update(dict(parse_qsl(parsed.query)))
    return urlunparse(parsed._replace(query=urlencode(query)))


def broker_addresses(settings: Settings, *, start: int | None = None) -> list[str]:
    """The bounded URLs of the broker's nodes, rotated to begin at `start` (random when
    None: see the module docstring)."""
    urls = [bounded_amqp_url(u) for u in settings.broker_urls]
    first = random.randrange(len(urls)) if start is None else start % len(urls)
    return urls[first:] + urls[:first]


def queue_type_arguments(queue_type: str) -> dict[str, Any]:
    """The declare arguments of a queue of `queue_type` (PMS_BROKER_QUEUE_TYPE)."""
    if queue_type == "quorum":
        return {"x-queue-type": "quorum"}
    if queue_type == "classic":
        return {}
    raise ValueError(f"unknown queue type {queue_type!r} (classic or quorum)")


class PmsRabbitmqBroker(BatchingBroker):
    """BatchingBroker whose queues are declared with the queue type of the deployment."""

    def __init__(self, *, queue_type: str = "classic", **kwargs: Any) -> None:
        self.queue_arguments = queue_type_arguments(queue_type)
        if self.queue_arguments and kwargs.get("max_priority"):
            raise ValueError("quorum queues take no x-max-priority: leave max_priority unset")
        super().__init__(**kwargs)
        self.queue_type = queue_type

    def _build_queue_arguments(self, queue_name: str) -> dict[str, Any]:
        # the actor's queue and its delay queue
        return {**super()._build_queue_arguments(queue_name), **self.queue_arguments}

    def _declare_xq_queue(self, queue_name: str) -> Any:
        # Dramatiq's dead-letter queue, with its TTL, of the same type
        return self.channel.queue_declare(
            queue=xq_name(queue_name), durable=True,
            arguments={"x-message-ttl": DEAD_MESSAGE_TTL, **self.queue_arguments})


def is_stub(settings: Settings) -> bool:
    return settings.broker_url.startswith("stub://")


def build_broker(settings: Settings) -> dramatiq.Broker:
    """The broker for `settings`: CurrentMessage (the message id becomes the request id of
    what an actor writes) and WorkerBoot (wires a `worker` process after boot). The tenant and
    the connection of each message are opened by `@tenant_actor`, not by middleware."""
    broker: dramatiq.Broker
    if is_stub(settings):
        broker = StubBroker()
        broker.emit_after("process_boot")
    else:
        addresses = broker_addresses(settings)
        broker = PmsRabbitmqBroker(url=addresses[0] if len(addresses) == 1 else addresses,
                                   confirm_delivery=True,
                                   queue_type=settings.broker_queue_type)
    broker.add_middleware(CurrentMessage())
    broker.add_middleware(WorkerBoot(settings))
    broker.add_middleware(TraceMessages())  # the sender's traceparent rides on each message
    return broker
