"""`build_broker(settings)`: the Dramatiq broker for `PMS_BROKER_URL`, with our middleware.

`stub://` (the embedded default) gives a StubBroker whose messages are run by worker threads
inside the web or CLI process (see workers.runtime); anything else is RabbitMQ with publisher
confirms and bounded connection waits, whose enqueues the relay's reactions can gather and send
together (workers.enqueue). Nothing here runs at import.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlparse, urlunparse

import dramatiq
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
        broker = BatchingBroker(url=bounded_amqp_url(settings.broker_url), confirm_delivery=True)
    broker.add_middleware(CurrentMessage())
    broker.add_middleware(WorkerBoot(settings))
    broker.add_middleware(TraceMessages())  # the sender's traceparent rides on each message
    return broker
