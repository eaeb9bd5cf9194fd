"""Actor messages of a pass of the relay's reactions, sent to RabbitMQ together.

Dramatiq's RabbitmqBroker publishes each message on a confirming channel and waits for its
confirm: one broker round trip per message. The relay runs the reactions of hundreds of rows a
batch (a booking's confirmation email, a check-out's housekeeping task, ...), and under load
that wait was most of its time (py-spy on `pms-cli outbox relay --follow` under the `ari`
bench: 43% in `RabbitmqBroker.enqueue`). So while a pass of reactions runs, `BatchingBroker`
only prepares each message (delay queue, `before_enqueue` middleware: the traceparent rides
along) and `EnqueueBatch` gathers them; at the end of the pass they go out on the relay's
pipelined confirming channel (workers.publisher `send_many`: all in flight, one wait), to the
default exchange with the queue as routing key, persistent and `mandatory`, exactly where
`RabbitmqBroker.enqueue` puts them. A message the broker nacks or cannot route (its queue was
deleted: it is declared again on the next try) fails its row's reactions, which back off on
their own cursor (pms.relay.dispatch). Outside a pass, `BatchingBroker.enqueue` is Dramatiq's.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pika
from dramatiq import Message
from dramatiq.brokers.rabbitmq import RabbitmqBroker, dq_name, q_name
from dramatiq.common import current_millis

from workers.publisher import AmqpEventPublisher, Outgoing

_GATHERING: contextvars.ContextVar[tuple[EnqueueBatch, Any] | None] = contextvars.ContextVar(
    "pms_enqueue_batch", default=None)


class BatchingBroker(RabbitmqBroker):
    """RabbitmqBroker whose `enqueue`, inside `EnqueueBatch.row(...)`, gathers the message for
    the batch instead of publishing it alone."""

    def enqueue(self, message: Message, *, delay: int | None = None) -> Message:
        gathering = _GATHERING.get()
        if gathering is None:
            return super().enqueue(message, delay=delay)
        batch, key = gathering
        return batch.add(self, key, message, delay)


class EnqueueBatch:
    """One pass of reactions (pms.relay.core.ReactionBatch): gathers, then sends together."""

    def __init__(self, publisher: AmqpEventPublisher) -> None:
        self.publisher = publisher
        self._gathered: list[tuple[Any, BatchingBroker, Message, int | None]] = []

    @contextmanager
    def row(self, key: Any) -> Iterator[None]:
        token = _GATHERING.set((self, key))
        try:
            yield
        finally:
            _GATHERING.reset(token)

    def add(self, broker: BatchingBroker, key: Any, message: Message,
            delay: int | None) -> Message:
        """What RabbitmqBroker.enqueue does before its publish (the same queue, the same
        middleware), the publish left to `flush`."""
        canonical = message.queue_name
        if delay is not None:
            message = message.copy(queue_name=dq_name(canonical),
                                   options={"eta": current_millis() + delay})
        broker.declare_queue(canonical, ensure=True)  # once per queue and process
        broker.emit_before("enqueue", message, delay)
        self._gathered.append((key, broker, message, delay))
        return message

    def flush(self) -> dict[Any, str]:
        """Send what was gathered (all in flight, one wait); the rows whose messages the
        broker did not take, with why. Nothing gathered: no broker work at all."""
        gathered, self._gathered = self._gathered, []
        if not gathered:
            return {}
        outgoing = [Outgoing("", message.queue_name, message.encode(),
                             pika.BasicProperties(
                                 delivery_mode=2, message_id=message.message_id,
                                 priority=message.options.get("broker_priority")),
                             message.message_id)
                    for _key, _broker, message, _delay in gathered]
        outcomes = self.publisher.send_many(outgoing, require_route=True)
        refused: dict[Any, str] = {}
        for (key, broker, message, delay), outcome in zip(gathered, outcomes, strict=True):
            if outcome is None:
                broker.emit_after("enqueue", message, delay)
                continue
            refused.setdefault(key, f"{type(outcome).__name__}: {outcome}")
            # an unroutable message: its queue is declared again before the next try
            broker.queues_pending.add(q_name(message.queue_name))
        return refused


def reaction_batching(publisher: Any, broker: Any) -> Callable[[], EnqueueBatch] | None:
    """The relay's `Reactions.batching`: its reactions' messages ride its own pipelined
    channel when it publishes to RabbitMQ and the actors' `broker` is a BatchingBroker (else
    None: each enqueue goes out alone, e.g. to the embedded StubBroker)."""
    if not isinstance(publisher, AmqpEventPublisher) or not isinstance(broker, BatchingBroker):
        return None
    return lambda: EnqueueBatch(publisher)


__all__ = ["BatchingBroker", "EnqueueBatch", "reaction_batching"]
