"""Fixtures for worker tests: a throwaway exchange on the real RabbitMQ, a cuttable proxy."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlparse

import pytest

from tests.conftest import need_server
from tests.workers.amqp import Bus, TcpProxy, amqp_url, available


@pytest.fixture
def bus() -> Iterator[Bus]:
    ok, why = available()
    need_server(ok, "RabbitMQ", why)
    b = Bus(amqp_url())
    yield b
    b.close()


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    ok, why = available()
    need_server(ok, "RabbitMQ", why)
    parsed = urlparse(amqp_url())
    p = TcpProxy(parsed.hostname or "127.0.0.1", parsed.port or 5672)
    yield p
    p.close()
