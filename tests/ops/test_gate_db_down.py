"""A request the gate allowed on cached policy rules, when the database goes away before any of
its statements ran: the version check the gate still owes it cannot be sent either, and the
answer is the database's 503 `database_unavailable` with Retry-After (nothing was done, safe to
retry), never a 500. This is what a primary's failover looks like to a web process.

PostgreSQL only: SQLite has no connection to lose.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse, urlunparse

import falcon.testing
import pytest

from pms.app import create_app
from pms.db.database import db as db_proxy
from pms.db.database import make_database
from tests.conftest import Api
from tests.factories import make_booking_hotel, reservation_body
from tests.helpers import assert_problem
from tests.tcpproxy import CuttingProxy

pytestmark = pytest.mark.postgres


@pytest.fixture
def proxy(pg_database: Any) -> Iterator[CuttingProxy]:
    parsed = urlparse(pg_database.app_url)
    p = CuttingProxy(parsed.hostname or "127.0.0.1", parsed.port or 5432)
    yield p
    p.close()


@pytest.fixture
def proxied_api(pg_database: Any, proxy: CuttingProxy, base_settings: Any, clock: Any,
                env_id: Any) -> Iterator[tuple[Api, Any]]:
    parsed = urlparse(pg_database.app_url)
    user, _, _ = parsed.netloc.rpartition("@")
    url = urlunparse(parsed._replace(netloc=f"{user}@127.0.0.1:{proxy.port}"))
    database = make_database(url, pool_size=2)
    db_proxy.initialize(database)
    app = create_app(base_settings, db=database, clock=clock)
    yield Api(falcon.testing.TestClient(app), base_settings, env_id), database
    database.close_all()


def _drop_connections(database: Any) -> None:
    if not database.is_closed():
        database.close()
    database.close_all()


@pytest.mark.parametrize("down", [True, False], ids=["database-down", "control-up"])
def test_a_request_allowed_on_cached_rules_answers_503_when_the_database_is_gone(
        ctx: Any, proxy: CuttingProxy, proxied_api: tuple[Api, Any], down: bool) -> None:
    api, database = proxied_api
    hotel = make_booking_hotel(ctx)
    path = f"/v1/properties/{hotel.id}/reservations"
    assert api.get(f"/v1/properties/{hotel.id}").status_code == 200  # the rules cached
    _drop_connections(database)
    if down:
        proxy.mode = "down"
    resp = api.post(path, reservation_body(hotel))
    if down:
        assert_problem(resp, 503, "database_unavailable")
        assert resp.headers["Retry-After"] == "1"
        proxy.restore()
        _drop_connections(database)
    else:
        assert resp.status_code == 201, resp.text
