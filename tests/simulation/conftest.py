"""The simulation's processes: started once per module on each database (see stack.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import pg
from tests.conftest import need_server
from tests.simulation.stack import Stack, postgres_stack, sqlite_stack
from tests.workers.amqp import amqp_url
from tests.workers.amqp import available as amqp_available


@pytest.fixture(scope="module", params=["sqlite", pytest.param(
    "postgres", marks=[pytest.mark.postgres, pytest.mark.rabbitmq])])
def sim_stack(request: pytest.FixtureRequest, base_settings, tmp_path_factory) -> Iterator[Stack]:
    logs = tmp_path_factory.mktemp("sim")
    if request.param == "sqlite":
        with sqlite_stack(base_settings, logs) as stack:
            yield stack
        return
    ok, why = pg.available()
    need_server(ok, "PostgreSQL", why)
    ok, why = amqp_available()
    need_server(ok, "RabbitMQ", why)
    with postgres_stack(base_settings, logs, amqp_url()) as stack:
        yield stack
