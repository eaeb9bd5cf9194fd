"""The Procfile's long-running processes recover from a lost database
connection. `relay` (`pms-cli outbox relay --follow`) and `platform` (`pms-cli platform consume`)
run as written; their PostgreSQL backends are terminated mid-run (pg_terminate_backend, as a
server restart, a failover or a network cut would); events and env initializations then flow
again, on new connections, within a generous deadline."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from pms.context import system_ctx
from pms.services.environments import get_environment
from tests import pg
from tests.e2e import test_procfile as base
from tests.e2e.procfile import Counter, Stack, unique, wait_for
from tests.e2e.test_procfile import ARRIVAL, committed_ids, insert_outbox, new_ctx

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq]

stack = base.stack  # the module's throwaway database and vhost (fixtures)
bound = base.bound

PLATFORM_QUEUE = "hotel-pms.platform-events"  # the consumer's default queue (cli/platform.py)


def named(url: str, name: str) -> str:
    """The database URL with an application_name, so a test can find the process's backends."""
    return f"{url}{'&' if '?' in url else '?'}application_name={name}"


def backends(stack: Stack, name: str) -> list[int]:
    return [r[0] for r in stack.query(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND application_name = %s",
        stack.database.name, name)]


def platform_event(env_id: uuid.UUID) -> bytes:
    return json.dumps({"specversion": "1.0", "id": str(uuid.uuid4()), "source": "platform",
                       "type": "platform:service:updated", "envid": str(env_id),
                       "data": {"service": "hotel-pms", "status": "enabled"}}).encode()


class Platform:
    """Publishes platform events to the test's exchange once the consumer's queue is bound."""

    def __init__(self, url: str, exchange: str) -> None:
        self.conn = pika.BlockingConnection(pika.URLParameters(url))
        self.ch = self._channel()
        self.exchange = exchange

    def _channel(self) -> Any:
        channel = self.conn.channel()
        channel.confirm_delivery()  # (an unroutable mandatory message raises UnroutableError)
        return channel

    def queue_ready(self) -> bool:
        try:
            self.ch.queue_declare(PLATFORM_QUEUE, passive=True)
            return True
        except pika.exceptions.ChannelClosedByBroker:
            self.ch = self._channel()
            return False

    def dead_lettered(self) -> int:
        return self.ch.queue_declare(f"{PLATFORM_QUEUE}.dead", passive=True).method.message_count

    def publish(self, env_id: uuid.UUID) -> None:
        """Publish, mandatory, until the broker routes it: the consumer declares its queue
        before it binds it, so a message sent in between reached no queue (and was lost:
        once, on a loaded machine, the test then waited for an event that never came)."""
        deadline = time.monotonic() + ARRIVAL
        while True:
            try:
                self.ch.basic_publish(self.exchange, "platform.service.updated.hotel-pms",
                                      platform_event(env_id),
                                      properties=pika.BasicProperties(delivery_mode=2),
                                      mandatory=True)
                return
            except pika.exceptions.UnroutableError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def exchange(stack: Stack) -> Iterator[tuple[str, Counter]]:
    name = unique("pms-e2e-rc")
    counter = Counter(stack.amqp_url, name)
    yield name, counter
    counter.close()
    stack.stop_all()


def initialized(env_id: uuid.UUID) -> Any:
    return get_environment(system_ctx(env_id))


@pytest.mark.slow
def test_relay_and_platform_consumer_recover_after_their_backends_are_terminated(
        stack, bound, exchange):
    name, counter = exchange
    env = stack.env(name)
    relay_env = {**env, "PMS_DATABASE_URL": named(stack.database.app_url, "pms-e2e-relay")}
    platform_env = {**env, "PMS_DATABASE_URL": named(stack.database.app_url, "pms-e2e-platform")}
    relay = stack.start("relay", relay_env)
    platform = stack.start("platform", platform_env)
    bus = Platform(stack.amqp_url, name)
    try:
        ctx = new_ctx()
        # Given: both running, each with a connection of its own
        wait_for(bus.queue_ready, timeout=ARRIVAL, what=f"the platform queue ({platform.tail()})")
        env_a = uuid.uuid4()
        bus.publish(env_a)
        insert_outbox(ctx, 5)
        wait_for(lambda: initialized(env_a), timeout=ARRIVAL,
                 what=f"the first env initialization ({platform.tail()})")
        wait_for(lambda: committed_ids(stack, ctx.env_id) <= counter.ids(), timeout=ARRIVAL,
                 what=f"the first events ({relay.tail()})")
        relay_pids = wait_for(lambda: backends(stack, "pms-e2e-relay"), timeout=ARRIVAL,
                              what="a relay backend")
        platform_pids = wait_for(lambda: backends(stack, "pms-e2e-platform"), timeout=ARRIVAL,
                                 what="a platform consumer backend")
        # When: the server drops every connection of both processes
        for pid in relay_pids + platform_pids:
            pg.terminate_backend(pid)
        wait_for(lambda: not set(backends(stack, "pms-e2e-relay")) & set(relay_pids)
                 and not set(backends(stack, "pms-e2e-platform")) & set(platform_pids),
                 timeout=ARRIVAL, what="the terminated backends gone")
        # Then: new events and env initializations flow again, on new connections
        env_b = uuid.uuid4()
        bus.publish(env_b)
        insert_outbox(ctx, 5)
        wait_for(lambda: committed_ids(stack, ctx.env_id) <= counter.ids(), timeout=ARRIVAL,
                 what=f"the events committed after the cut ({relay.tail()} {platform.tail()})")
        wait_for(lambda: initialized(env_b), timeout=ARRIVAL,
                 what=f"an env initialization after the cut ({platform.tail()} {relay.tail()})")
        assert len(committed_ids(stack, ctx.env_id)) == 10
        assert initialized(env_b).ledger_accounts_ready
        assert bus.dead_lettered() == 0  # the message was retried, not dead-lettered
        assert set(backends(stack, "pms-e2e-relay")).isdisjoint(relay_pids)
        assert relay.alive() and platform.alive(), (relay.tail(), platform.tail())
    finally:
        bus.close()
