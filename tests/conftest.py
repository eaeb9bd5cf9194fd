"""Fixtures: real databases (SQLite file and a throwaway PostgreSQL), dev keys, tokens, the app.

Tests are isolated by tenant: every test gets a fresh `env_id`, so the per-run databases can be
shared without leftovers leaking between tests. PostgreSQL tests skip locally when the server is
missing and fail in CI (`CI=true`), dramatiq-style.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from pms.app import create_app
from pms.clock import FixedClock
from pms.config import Settings
from pms.context import Ctx
from pms.db.database import db as db_proxy
from pms.db.database import make_database
from pms.db.migrator import migrate
from pms.devkeys import all_scopes, generate_keys, mint_token
from tests import pg
from tests.helpers import RawBody

CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def need_server(ok: bool, what: str, why: str) -> None:
    if ok:
        return
    if CI:
        pytest.fail(f"{what} is required in CI but unavailable: {why}", pytrace=False)
    pytest.skip(f"{what} unavailable ({why}); start it to run these tests")


# -- parallel runs (`make test`: pytest-xdist, `-n 2 --dist loadgroup`) ----------------------------
#
# Every worker process has its own session fixtures: its own PostgreSQL database and roles, SQLite
# file, key directory and (under PMS_TEST_VIA_PGBOUNCER) PgBouncer; ports, exchanges, vhosts and
# /dev/shm files are unique per process. The modules that start whole process trees (gunicorn
# instances, the Procfile's worker and relay, HAProxy) form one scheduling unit, so they run one
# after another on a single worker while the light tests fill the other: two such trees at once on
# two cores would only slow each other down and stretch their deadlines. Being the largest unit,
# it is handed out first.
#
# The unit is made by the scheduler from the node ids (xdist's own `xdist_group` mark renames
# items' node ids, which pytest 9 no longer lets it do, so the mark alone groups nothing).

PROCESS_TREES = "process-trees"
_PROCESS_TREE_PATHS = (
    "tests/e2e/",                          # the Procfile's worker + relay, RabbitMQ vhost
    "tests/concurrency/",                  # gunicorn x4 (session server) + control servers
    "tests/ops/test_rolling_deploy.py",    # two gunicorns behind HAProxy (+ PgBouncer)
    "tests/ops/test_gunicorn.py",          # gunicorn drain timing
    "tests/ops/test_hostile_http.py",      # a gunicorn per test
    "tests/cli/test_serve.py",             # `pms-cli serve` under gunicorn
    "tests/simulation/",                   # the Procfile's web (+ worker, relay) per database
)


def scheduling_unit(nodeid: str) -> str | None:
    """The shared unit of a node id that must not run beside its kind, else None."""
    return PROCESS_TREES if nodeid.startswith(_PROCESS_TREE_PATHS) else None


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, absent from serial runs
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class ProcessTreeScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scheduling_unit(nodeid) or super()._split_scope(nodeid)

    return ProcessTreeScheduling(config, log)


# -- keys and settings ---------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _empty_stub_broker() -> None:
    """Every test starts with the embedded StubBroker empty: a message an earlier test left
    behind (one retrying with backoff after its test's database went away) would otherwise
    hold any later wait for the queues to drain (the embedded commands' join)."""
    import sys

    actors = sys.modules.get("workers.actors")
    broker = getattr(actors, "broker", None) if actors is not None else None
    if broker is not None and hasattr(broker, "flush_all"):
        broker.flush_all()


@pytest.fixture(scope="session")
def keydir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("keys")


@pytest.fixture(scope="session")
def base_settings(keydir: Path) -> Settings:
    # home: where the embedded object store keeps uploaded images, never the checkout
    settings = Settings(jwks_url=f"file://{keydir}/jwks.json", home=keydir / "home")
    generate_keys(settings)
    return settings


# -- databases -----------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("sqlite") / "pms.db"
    url = f"sqlite:///{path}"
    migrate(url)
    return url


@pytest.fixture(scope="session")
def pg_database() -> Iterator[pg.PgDatabase]:
    ok, why = pg.available()
    need_server(ok, "PostgreSQL", why)
    database = pg.create_database()
    try:
        migrate(database.owner_url, service_url=database.app_url)
        yield database
    finally:
        db_proxy.initialize(None)
        database.drop()


@pytest.fixture(scope="session")
def _sqlite_db(sqlite_url: str) -> Any:
    return make_database(sqlite_url)


@pytest.fixture(scope="session")
def _pg_db(pg_database: pg.PgDatabase) -> Iterator[Any]:
    database = make_database(pg_database.app_url, pool_size=16)
    yield database
    database.close_all()


def _bind(database: Any) -> Iterator[Any]:
    db_proxy.initialize(database)
    yield database
    if not database.is_closed():
        database.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def database(backend: str, request: pytest.FixtureRequest) -> Iterator[Any]:
    """The bound database for this test's backend (both, for tests that use it)."""
    fixture = "_pg_db" if backend == "postgres" else "_sqlite_db"
    yield from _bind(request.getfixturevalue(fixture))


@pytest.fixture
def sqlite_db(_sqlite_db: Any) -> Iterator[Any]:
    yield from _bind(_sqlite_db)


@pytest.fixture
def pg_db(_pg_db: Any) -> Iterator[Any]:
    yield from _bind(_pg_db)


# -- tenant, clock, app --------------------------------------------------------------------------

@pytest.fixture
def env_id() -> uuid.UUID:
    return uuid.uuid4()


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
def ctx(env_id: uuid.UUID, clock: FixedClock) -> Ctx:
    return Ctx(env_id=env_id, sub="test-user", client_kind="user",
               scopes=frozenset(all_scopes()), now=clock.now())


@pytest.fixture
def settings(base_settings: Settings, backend: str) -> Settings:
    return base_settings


@pytest.fixture
def app(settings: Settings, database: Any, clock: FixedClock) -> falcon.App:
    return create_app(settings, db=database, clock=clock)


class Api:
    """A TestClient that sends the bearer and tenant headers of one env by default."""

    def __init__(self, client: falcon.testing.TestClient, settings: Settings, env_id: uuid.UUID):
        self.client = client
        self.settings = settings
        self.env_id = env_id
        self.token = mint_token(settings, env_id=env_id)

    def headers(self, extra: dict[str, str] | None = None, *, token: str | None = None,
                env: Any = None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {token or self.token}",
                   "X-Platform-Env-Id": str(env or self.env_id)}
        headers.update(extra or {})
        return {k: v for k, v in headers.items() if v is not None}

    def request(self, method: str, path: str, *, json: Any = None, headers: dict[str, str] | None = None,
                params: dict[str, Any] | None = None, token: str | None = None, env: Any = None,
                raw_headers: dict[str, str] | None = None, body: bytes | None = None) -> Any:
        hdrs = raw_headers if raw_headers is not None else self.headers(headers, token=token, env=env)
        if isinstance(json, RawBody):  # a form, or JSON with headers (tests/helpers.py)
            hdrs = {**hdrs, **json.headers}
            json, body = json.json, json.data if json.data is not None else body
        return self.client.simulate_request(method, path, json=json, headers=hdrs, params=params,
                                            body=body)

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, json: Any = None, **kw: Any) -> Any:
        return self.request("POST", path, json=json, **kw)

    def put(self, path: str, json: Any = None, **kw: Any) -> Any:
        return self.request("PUT", path, json=json, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        return self.request("DELETE", path, **kw)

    def for_env(self, env_id: uuid.UUID) -> Api:
        return Api(self.client, self.settings, env_id)


@pytest.fixture
def api(app: falcon.App, settings: Settings, env_id: uuid.UUID) -> Api:
    return Api(falcon.testing.TestClient(app), settings, env_id)


@pytest.fixture
def platform(settings: Settings) -> Any:
    """The embedded platform bundle (payments, locks, email sandboxes) of `kapi`'s app."""
    from pms.platform import build_platform

    return build_platform(settings)


@pytest.fixture
def kapi(settings: Settings, database: Any, clock: FixedClock, env_id: uuid.UUID,
         platform: Any) -> Api:
    """The API with a platform bundle the test can look into (payments, locks, email)."""
    app = create_app(settings, db=database, clock=clock, platform=platform)
    return Api(falcon.testing.TestClient(app), settings, env_id)
