"""Event publishers for the outbox relay: AMQP (pika) in production, in-memory when embedded.

`AmqpEventPublisher` publishes each CloudEvent to the durable topic exchange
`PMS_EVENT_EXCHANGE` with routing key = type with ':' -> '.', `message_id` = event id, persistent
delivery, publisher confirms and the `mandatory` flag, and returns only once the broker confirmed.
A message the broker accepted but could route to no queue (returned) is DELIVERED: the bus has
no subscriber for it yet, which is no fault of the event; the publisher counts them
(`unroutable`). A nacked message raises `PublishRejected` (that row backs off); anything that
breaks the connection raises `BrokerUnavailable` (the relay backs off). Connection set-up,
socket reads, blocked connections (broker alarms) and missed heartbeats are all bounded, so an
outage or a partition cannot hang the relay.

The URL may name several nodes of a cluster, comma separated (PMS_BROKER_URL): each connect
tries them in turn, beginning with the node of the last good connection; once a connection
breaks, the next connect begins with the node after it, so a lost node costs one refused (or
timed-out) attempt, not one per reconnect. Rows whose confirms the lost node never sent stay
unpublished and go again: a consumer may see an event twice, under the same message id (the
outbox row id), never lose one.
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass
from typing import Any

import msgspec
import pika
import pika.exceptions

from pms.config import Settings
from pms.events import routing_key as routing_key_of
from pms.relay.sweep import BrokerUnavailable, PublishRejected

CONTENT_TYPE = "application/cloudevents+json"


# PERF: msgspec encodes a CloudEvent about 10x faster than json.dumps; keys sorted and compact
# as before (non-ASCII text is sent as UTF-8 rather than \u escapes: the same JSON).
_encode_sorted = msgspec.json.Encoder(enc_hook=str, order="sorted").encode


def _body(event: dict[str, Any]) -> bytes:
    return _encode_sorted(event)


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


def amqp_urls(url: str) -> list[str]:
    """The addresses of a broker URL: one, or the comma-separated nodes of a cluster."""
    urls = [u.strip() for u in url.split(",") if u.strip()]
    if not urls:
        raise ValueError("no broker URL")
    return urls


def amqp_parameter_list(url: str, **bounds: Any) -> list[pika.URLParameters]:
    """`amqp_parameters` for each address of `url` (see `amqp_urls`), in order."""
    return [amqp_parameters(u, **bounds) for u in amqp_urls(url)]


class AddressRing:
    """The broker's addresses in the order the next connect tries them: the node that served
    last first, and after a broken connection the node after the one that broke."""

    def __init__(self, params: list[pika.URLParameters]) -> None:
        self.params = params
        self.start = 0

    def order(self) -> list[pika.URLParameters]:
        return self.params[self.start:] + self.params[:self.start]

    def connected(self, connection: Any) -> None:
        """Remember which node the connection reached (pika tried them in `order`)."""
        used = getattr(getattr(connection, "_impl", None), "params", None)
        for index, params in enumerate(self.params):
            if params is used:
                self.start = index
                return

    def broke(self) -> None:
        """The node of the last connection failed: begin the next connect after it."""
        if len(self.params) > 1:
            self.start = (self.start + 1) % len(self.params)

    @property
    def current(self) -> str:
        """host:port of the node tried first (for logs)."""
        params = self.params[self.start]
        return f"{params.host}:{params.port}"


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One AMQP message for the pipelined channel: a CloudEvent to the event exchange, or an
    actor message to its queue through the default exchange (workers.enqueue)."""

    exchange: str
    routing_key: str
    body: bytes
    properties: pika.BasicProperties
    message_id: str


class _Inflight:
    """One batch's bookkeeping: delivery tag -> index, outcomes, returns. The channel callbacks
    reach it while it is in flight (from `start_sending` to the end of its `finish_many`)."""

    def __init__(self, message_ids: list[str], *, require_route: bool = False) -> None:
        self.require_route = require_route  # audit rows: unroutable = nobody takes them yet
        self.outcomes: list[Exception | None] = (
            [BrokerUnavailable("not confirmed")] * len(message_ids))
        self.pending: dict[int, int] = {}
        self.returned: set[str] = set()
        self.unroutable = 0  # confirmed, but no queue was bound for them (still delivered)
        self.nacked = False
        self.message_ids = message_ids

    def confirm(self, method: Any) -> None:
        nack = isinstance(method, pika.spec.Basic.Nack)
        tags = ([t for t in self.pending if t <= method.delivery_tag] if method.multiple
                else [method.delivery_tag])
        for tag in tags:
            index = self.pending.pop(tag, None)
            if index is None:
                continue
            if nack:
                self.outcomes[index] = PublishRejected("nacked by the broker")
                self.nacked = True
                continue
            if self.message_ids[index] in self.returned:
                if self.require_route:
                    self.outcomes[index] = PublishRejected(
                        "unroutable: no queue is bound for this routing key")
                    continue
                self.unroutable += 1  # accepted, no subscriber yet: delivered all the same
            self.outcomes[index] = None

    def fail_pending(self, exc: Exception) -> None:
        for index in self.pending.values():
            self.outcomes[index] = exc
        self.pending = {}


class AmqpEventPublisher:
    """One pika BlockingConnection with confirms; reconnects lazily after a failure.

    Owned by ONE thread (pika connections are not thread-safe): the first thread that
    publishes owns it, and any other thread gets a RuntimeError instead of corrupting the
    connection. Build one publisher per relay thread.
    """

    def __init__(self, url: str, exchange: str, *, connect_timeout: float = 3.0,
                 heartbeat: int = 5, blocked_timeout: float = 10.0,
                 declare_exchange: bool = True, confirm_timeout: float = 15.0) -> None:
        self.url = url
        self.exchange = exchange
        self.addresses = AddressRing(amqp_parameter_list(
            url, connect_timeout=connect_timeout, heartbeat=heartbeat,
            blocked_timeout=blocked_timeout))
        self.declare_exchange = declare_exchange
        self._connection: pika.BlockingConnection | None = None
        self._channel: Any = None
        self._pipe: Any = None
        self._next_tag = 1
        # batches sent and not yet finished: the relay's batch of events, and the reactions'
        # messages of the batch before it (workers.enqueue), share the pipe
        self._inflight: list[_Inflight] = []
        self._owner: int | None = None
        self.confirm_timeout = confirm_timeout
        self.unroutable = 0  # events confirmed with no queue bound for them (delivered)
        # Each wait for confirms is a slice of pika's I/O loop; it ends early at the last
        # confirm of the batch (see _on_confirm), so the slice only bounds how often the
        # deadline is checked.
        self.confirm_slice_s = 0.05

    def _check_thread(self) -> None:
        ident = threading.get_ident()
        if self._owner is None:
            self._owner = ident
        elif self._owner != ident:
            raise RuntimeError("AmqpEventPublisher used from a second thread; pika connections "
                               "are not thread-safe: build one publisher per thread")

    def _open(self) -> Any:
        if self._channel is not None and self._channel.is_open:
            return self._channel
        self.abort()
        try:
            self._connection = pika.BlockingConnection(self.addresses.order())
            self.addresses.connected(self._connection)
            channel = self._connection.channel()
            channel.confirm_delivery()
            if self.declare_exchange:
                channel.exchange_declare(self.exchange, exchange_type="topic", durable=True)
        except (pika.exceptions.AMQPError, OSError) as exc:
            self.abort()
            raise BrokerUnavailable(f"cannot connect: {type(exc).__name__} {exc}") from exc
        self._channel = channel
        return channel

    def publish(self, event: dict[str, Any], *, routing_key: str | None = None,
                require_route: bool = False) -> None:
        """Publish one event and wait for the broker's confirm (see module docstring).
        `require_route`: an unroutable message is refused (PublishRejected), for the audit
        push, which keeps its rows until someone takes them."""
        self._check_thread()
        channel = self._open()
        props = self._props(event)
        try:
            channel.basic_publish(self.exchange, routing_key or routing_key_of(event["type"]),
                                  _body(event), properties=props, mandatory=True)
        except pika.exceptions.UnroutableError as exc:
            if require_route:
                raise PublishRejected("unroutable: no queue is bound for this routing key") from exc
            self.unroutable += 1  # accepted, no subscriber yet: delivered (module docstring)
        except pika.exceptions.NackError as exc:
            self.abort()  # see finish_many: the next publish goes on a new connection
            raise PublishRejected("nacked by the broker") from exc
        except (pika.exceptions.AMQPError, OSError) as exc:
            self.abort()
            raise BrokerUnavailable(f"{type(exc).__name__} {exc}") from exc

    # -- pipelined publishing (many messages in flight, one wait for their confirms) -----------

    def _open_pipe(self) -> Any:
        """A second channel in confirm mode driven through pika's channel object, so a whole
        batch can be in flight; BlockingChannel would wait for each confirm in turn."""
        if self._pipe is not None and self._pipe.is_open:
            return self._pipe
        self._open()
        try:
            pipe = self._connection.channel()
            ready: list[bool] = []
            pipe._impl.confirm_delivery(ack_nack_callback=self._on_confirm,
                                        callback=lambda _frame: ready.append(True))
            pipe._impl.add_on_return_callback(self._on_return)
            deadline = time.monotonic() + self.confirm_timeout
            while not ready:
                if time.monotonic() > deadline:
                    raise BrokerUnavailable("confirm mode was not acknowledged in time")
                self._connection.process_data_events(time_limit=0.05)
        except BrokerUnavailable:
            self.abort()
            raise
        except (pika.exceptions.AMQPError, OSError) as exc:
            self.abort()
            raise BrokerUnavailable(f"{type(exc).__name__} {exc}") from exc
        self._pipe = pipe
        self._next_tag = 1
        return pipe

    def _on_confirm(self, frame: Any) -> None:
        # Confirms arrive only while this thread drives the connection; each batch in flight
        # takes the tags it sent (they are numbered across batches). One that belongs to no
        # batch in flight belongs to an abandoned one and is dropped.
        for batch in self._inflight:
            if not batch.pending:
                continue
            batch.confirm(frame.method)
            if not batch.pending and self._connection is not None:
                # PERF: process_data_events(time_limit) only returns early for BlockingChannel
                # events, not for these channel-level callbacks: without this, every wait
                # ran out its whole time slice (50 ms a batch) after the last confirm came.
                self._connection.call_later(0, _nothing)

    def _on_return(self, _channel: Any, _method: Any, props: Any, _body: bytes) -> None:
        for batch in self._inflight:  # message ids are unique: only its batch knows it
            batch.returned.add(props.message_id)

    def publish_many(self, events: list[dict[str, Any]], *,
                     require_route: bool = False) -> list[Exception | None]:
        """Publish a batch with all messages in flight; one outcome per event, in order.

        None = confirmed (routed or not, unless `require_route`); PublishRejected = nacked, or
        returned with `require_route` (that row backs off);
        BrokerUnavailable = not confirmed because the connection failed or the confirms did not
        come within `confirm_timeout` (the row stays as it was).
        """
        return self.finish_many(self.start_many(events, require_route=require_route))

    def start_many(self, events: list[dict[str, Any]], *,
                   require_route: bool = False) -> _Inflight:
        """Send a batch of events without waiting for its confirms; `finish_many` waits for
        them (the relay marks the previous batch and claims the next one meanwhile)."""
        return self.start_sending([self._outgoing(e) for e in events],
                                  require_route=require_route)

    def send_many(self, messages: list[Outgoing], *,
                  require_route: bool = False) -> list[Exception | None]:
        """`publish_many` for messages built by the caller (any exchange, any routing key)."""
        return self.finish_many(self.start_sending(messages, require_route=require_route))

    def start_sending(self, messages: list[Outgoing], *,
                      require_route: bool = False) -> _Inflight:
        """Send messages without waiting for their confirms (see `start_many`). Several
        batches may be in flight; each `finish_many` waits for its own."""
        self._check_thread()
        batch = _Inflight([m.message_id for m in messages], require_route=require_route)
        if not messages:
            return batch
        try:
            pipe = self._open_pipe()
            self._inflight.append(batch)
            for index, message in enumerate(messages):
                pipe._impl.basic_publish(message.exchange, message.routing_key, message.body,
                                         properties=message.properties, mandatory=True)
                batch.pending[self._next_tag] = index
                self._next_tag += 1
            # pika only buffers: one turn of its I/O loop hands the batch to the socket now,
            # so the broker works on it while the caller does its database work
            self._connection.process_data_events(time_limit=0)
        except BrokerUnavailable as exc:
            self._give_up(batch, exc)
        except (pika.exceptions.AMQPError, OSError, AttributeError) as exc:
            # AttributeError: pika's impl after its connection vanished under it
            self._give_up(batch, BrokerUnavailable(f"{type(exc).__name__} {exc}"))
        return batch

    def finish_many(self, batch: _Inflight) -> list[Exception | None]:
        """Wait (at most `confirm_timeout`) for the confirms of a batch `start_many` sent."""
        self._check_thread()
        try:
            deadline = time.monotonic() + self.confirm_timeout
            while batch.pending:
                if time.monotonic() > deadline:
                    raise BrokerUnavailable("publisher confirms did not arrive in time")
                self._connection.process_data_events(time_limit=self.confirm_slice_s)
        except BrokerUnavailable as exc:
            self._give_up(batch, exc)
        except (pika.exceptions.AMQPError, OSError, AttributeError) as exc:
            self._give_up(batch, BrokerUnavailable(f"{type(exc).__name__} {exc}"))
        finally:
            if batch in self._inflight:
                self._inflight.remove(batch)
        self.unroutable += batch.unroutable
        if batch.nacked:
            # A nack is the broker's own failure, and it can stick to the channel: one opened
            # on a surviving node while a quorum queue's leader was being replaced went on
            # nacking every publish to that queue for minutes (RabbitMQ 3.10), though the
            # queue had a new leader. The next batch goes on a new connection (the batches
            # still in flight fail as unconfirmed and go again).
            self.abort()
        return list(batch.outcomes)

    def _give_up(self, batch: _Inflight, exc: Exception) -> None:
        """The connection is gone: every batch in flight on it failed."""
        for other in [batch, *self._inflight]:
            other.fail_pending(exc)
        self._inflight = []
        self.abort()

    def _outgoing(self, event: dict[str, Any], routing_key: str | None = None) -> Outgoing:
        return Outgoing(self.exchange, routing_key or routing_key_of(event["type"]),
                        _body(event), self._props(event), event["id"])

    def message(self, event: dict[str, Any], *, routing_key: str) -> Outgoing:
        """The message of a CloudEvent on the event exchange under another routing key than
        its type's (the audit push: pms.relay.audit_push), for `send_many`."""
        return self._outgoing(event, routing_key)

    def _props(self, event: dict[str, Any]) -> pika.BasicProperties:
        return pika.BasicProperties(
            content_type=CONTENT_TYPE, delivery_mode=2, message_id=event["id"],
            type=event["type"], timestamp=int(time.time()), app_id="hotel-pms")

    def abort(self) -> None:
        """Give up on the connection without waiting: a graceful close would wait for the
        broker's close-ok, which a stalled or partitioned broker never sends. Batches in
        flight on it will never be confirmed: they fail now."""
        for batch in self._inflight:
            batch.fail_pending(BrokerUnavailable("the connection was abandoned"))
        self._inflight = []
        self._pipe = None
        connection, self._connection, self._channel = self._connection, None, None
        if connection is not None:
            self.addresses.broke()  # a connection is abandoned only when it failed
            threading.Thread(target=_quiet_close, args=(connection,), daemon=True,
                             name="pms-amqp-abandon").start()

    def close(self) -> None:
        self._pipe = None
        connection, self._connection, self._channel = self._connection, None, None
        if connection is not None:
            try:
                if connection.is_open:
                    connection.close()
            except Exception:  # noqa: BLE001 - the connection is being thrown away anyway
                pass


def _nothing() -> None:
    """A zero-delay timer's callback: its only job is to end the current wait."""


def _quiet_close(connection: Any) -> None:
    try:
        if connection.is_open:
            connection.close()
    except Exception:  # noqa: BLE001 - the connection is abandoned
        pass


class LocalEventPublisher:
    """The embedded default's bus: confirms at once and keeps the last events in memory."""

    def __init__(self, keep: int = 1000) -> None:
        self.events: collections.deque[tuple[str, dict[str, Any]]] = collections.deque(maxlen=keep)
        self._lock = threading.Lock()

    def publish_many(self, events: list[dict[str, Any]], *,
                     require_route: bool = False) -> list[Exception | None]:
        for event in events:
            self.publish(event)
        return [None] * len(events)

    def publish(self, event: dict[str, Any], *, routing_key: str | None = None,
                require_route: bool = False) -> None:
        with self._lock:
            self.events.append((routing_key or routing_key_of(event["type"]), event))

    def close(self) -> None:
        return None


def build_publisher(settings: Settings) -> AmqpEventPublisher | LocalEventPublisher:
    """AMQP when the broker URL is amqp(s)://, the in-memory bus for the embedded stub://."""
    if settings.broker_url.startswith(("amqp://", "amqps://")):
        return AmqpEventPublisher(settings.broker_url, settings.event_exchange)
    return LocalEventPublisher()
