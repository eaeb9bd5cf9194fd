"""Configuration from environment variables (CONTRACT §1).

`load_settings(environ)` is the only reader of the environment; nothing here runs at import.
Every variable has an embedded default so that a fresh machine can serve with nothing installed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlparse

EMBEDDED_PLATFORM = "embedded"

# How many days ahead every room type's calendar (its `inventory_day` rows) is kept, counted from
# its property's business date (PMS_CALENDAR_HORIZON_DAYS). Neither SPEC nor CONTRACT limits how
# far ahead a stay may be booked, so the default is what the large PMSs keep open for sale,
# about 18 months (550 days); a night beyond it still books (its row is made by the booking, one
# more round trip). Room type creation fills it, the night audit extends it by the day it rolls,
# `pms-cli calendar fill` fills it for room types made before (README, "Calendar horizon").
DEFAULT_CALENDAR_HORIZON_DAYS = 550
MAX_CALENDAR_HORIZON_DAYS = 3660

# the key set is read again once it is this old (seconds; PMS_JWKS_MAX_AGE_SECONDS,
# 1..3600), and platform events are accepted only from this CloudEvents source.
DEFAULT_JWKS_MAX_AGE_S = 300.0
MAX_JWKS_MAX_AGE_S = 3600.0
DEFAULT_PLATFORM_EVENT_SOURCE = "platform"
# Variables whose unset value falls back to a development default (a local key set whose
# private key lies beside it, the sandbox payments): allowed only on the embedded default.
DEVELOPMENT_FALLBACKS = ("PMS_JWKS_URL", "PMS_PLATFORM_URL")


@dataclass(frozen=True)
class Limits:
    """Intended limits, published on /v1/health; the gateway enforces the rate limits."""

    max_body_bytes: int = 1024 * 1024
    max_page_size: int = 200
    default_page_size: int = 50
    request_timeout_s: float = 30.0
    statement_timeout_ms: int = 5000
    lock_timeout_ms: int = 2000
    rate_limits_per_minute: Mapping[str, int] = field(
        default_factory=lambda: {
            "reads": 1200,
            "writes": 300,
            "search": 120,
            "identification": 30,
        }
    )


@dataclass(frozen=True)
class Settings:
    """Everything the processes need, resolved once at start-up."""

    # The embedded files live under PMS_HOME (see `default_home`), never the working directory.
    database_url: str = field(default_factory=lambda: embedded_database_url(default_home()))
    migration_database_url: str = field(
        default_factory=lambda: embedded_database_url(default_home()))
    # PMS_BROKER_URL: `stub://` (the embedded in-process broker) or the AMQP URL of RabbitMQ;
    # a comma-separated list of amqp(s):// URLs names the nodes of a cluster, tried in turn on
    # every connect and reconnect (the workers, the relay, the platform consumer)
    broker_url: str = "stub://"
    # PMS_BROKER_QUEUE_TYPE: how the worker's queues (with their delay and dead-letter queues)
    # and the platform consumer's queue and dead-letter queue are declared: "classic" (one
    # node's queue, the single development broker) or "quorum" (replicated over a cluster: a
    # node lost loses no message). A queue keeps the type it was first declared with.
    broker_queue_type: str = "classic"
    event_exchange: str = "platform.events"
    jwks_url: str = field(default_factory=lambda: embedded_jwks_url(default_home()))
    jwt_issuer: str = "pms-dev"
    jwt_audience: str = "hotel-pms"
    jwt_algorithms: tuple[str, ...] = ("RS256", "ES256")
    # the longest lifetime a token may have (exp - iat, and exp - now), in seconds
    # (PMS_JWT_MAX_LIFETIME_S): a leaked long-lived token stays useful for at most this long
    jwt_max_lifetime_s: int = 24 * 3600
    platform_url: str = EMBEDDED_PLATFORM
    platform_token_url: str = ""
    platform_client_id: str = ""
    platform_client_secret: str = ""
    port: int = 8000
    web_concurrency: int = field(default_factory=lambda: 2 * (os.cpu_count() or 1))
    db_pool_size: int = 8
    # hot standbys for the reads of GET requests (PMS_DATABASE_REPLICA_URLS, comma
    # separated; none by default), and how far behind one may be and still serve them
    database_replica_urls: tuple[str, ...] = ()
    replica_max_lag_s: float = 30.0
    replica_max_lag_bytes: int = 16 * 1024 * 1024
    drain_seconds: float = 5.0
    log_level: str = "INFO"
    idempotency_ttl_hours: int = 72
    outbox_retention_days: int = 7
    # how often a long-running process checks for due schedules (pms.scheduling)
    schedule_check_seconds: float = 15.0
    calendar_horizon_days: int = DEFAULT_CALENDAR_HORIZON_DAYS
    # stub:// only: run the Dramatiq worker threads and the relay inside the web process.
    # Off for processes that share a database with a real relay (test servers, benchmarks).
    embedded_runtime: bool = True
    limits: Limits = field(default_factory=Limits)
    home: Path = field(default_factory=lambda: default_home())
    # (README "Keys, configuration and what leaves the service"):
    # how old the cached key set may grow before it is read again (PMS_JWKS_MAX_AGE_SECONDS)
    jwks_max_age_s: float = DEFAULT_JWKS_MAX_AGE_S
    # the CloudEvents `source` the platform consumer accepts (PMS_PLATFORM_EVENT_SOURCE)
    platform_event_source: str = DEFAULT_PLATFORM_EVENT_SOURCE
    # the variables that were unset and took their development default (load_settings); a
    # serving process outside the embedded default refuses to start while any is here
    defaulted: frozenset[str] = frozenset()
    # the demo token `pms-cli serve` wrote, added to the admin console's calls from
    # the loopback interface, on the embedded default only (pms/api/console.py)
    console_token_file: Path | None = None

    @property
    def development(self) -> bool:
        """The embedded default: SQLite and the in-process stub broker (no PostgreSQL, AMQP)."""
        return not self.is_postgres and self.broker_url.startswith("stub://")

    @property
    def broker_urls(self) -> tuple[str, ...]:
        """The broker addresses of PMS_BROKER_URL, in the order they are tried."""
        return broker_urls(self.broker_url)

    @property
    def is_postgres(self) -> bool:
        return self.database_url.startswith(("postgres://", "postgresql://"))

    @property
    def embedded_platform(self) -> bool:
        return self.platform_url == EMBEDDED_PLATFORM

    @property
    def jwks_is_local_file(self) -> bool:
        return self.jwks_url.startswith("file://")

    @property
    def jwks_path(self) -> Path:
        """The local key-set path of a `file://` JWKS URL (`load_settings` anchors relative
        paths under PMS_HOME)."""
        return Path(file_url_path(self.jwks_url))

    @property
    def private_jwk_path(self) -> Path:
        return self.jwks_path.with_name(self.jwks_path.stem + "-private.json")

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]


def file_url_path(url: str) -> str:
    """`file://var/x` -> `var/x` (relative), `file:///abs/x` -> `/abs/x`."""
    rest = url[len("file://"):]
    return rest


def sqlite_path(url: str) -> str:
    """`sqlite:///var/pms.db` -> `var/pms.db`; `sqlite:////abs.db` -> `/abs.db`."""
    parsed = urlparse(url)
    path = parsed.path
    return path[1:] if path.startswith("/") else path


def default_home(environ: Mapping[str, str] | None = None) -> Path:
    """Where the embedded default keeps its files (SQLite database, development keys).

    `PMS_HOME` when set. Otherwise, when the package runs from its source checkout (the
    repository's `setup.cfg` beside it: `make run`, an editable install), the checkout's `var/`
    directory, whatever the working directory; installed anywhere else, the per-user data
    directory (`$XDG_DATA_HOME/hotel-pms`, by default `~/.local/share/hotel-pms`). Never the
    working directory: `pms-cli` run from elsewhere must find the same database, not silently
    create an empty one.
    """
    env = os.environ if environ is None else environ
    if env.get("PMS_HOME"):
        return Path(env["PMS_HOME"]).expanduser().resolve()
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "setup.cfg").is_file() and (checkout / "pms" / "config.py").is_file():
        return checkout / "var"
    data = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data).expanduser() / "hotel-pms"


def embedded_database_url(home: Path) -> str:
    return f"sqlite:///{home / 'pms.db'}"


def embedded_jwks_url(home: Path) -> str:
    return f"file://{home / 'dev-jwks.json'}"


def anchor_url(url: str, home: Path) -> str:
    """A `sqlite:///relative` or `file://relative` URL made absolute under `home` (other URLs,
    absolute paths and in-memory SQLite unchanged)."""
    for prefix in ("sqlite:///", "file://"):
        if url.startswith(prefix):
            rest = url[len(prefix):]
            if rest and not rest.startswith("/") and rest != ":memory:":
                return prefix + str(home / rest)
    return url


def _read_dotenv(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values[key.strip()] = value.strip().strip('"').strip("'")
    return values


def calendar_horizon_days(value: str | None) -> int:
    """PMS_CALENDAR_HORIZON_DAYS: a whole number of days, 1..MAX_CALENDAR_HORIZON_DAYS (unset
    or empty: the default); anything else is refused at start-up rather than guessed."""
    if value is None or not value.strip():
        return DEFAULT_CALENDAR_HORIZON_DAYS
    try:
        days = int(value)
    except ValueError:
        raise ValueError(f"PMS_CALENDAR_HORIZON_DAYS must be a whole number of days, "
                         f"not {value!r}") from None
    if not 1 <= days <= MAX_CALENDAR_HORIZON_DAYS:
        raise ValueError(f"PMS_CALENDAR_HORIZON_DAYS must be 1..{MAX_CALENDAR_HORIZON_DAYS}, "
                         f"not {days}")
    return days


def load_settings(environ: Mapping[str, str] | None = None, *, dotenv: Path | None = None) -> Settings:
    """Build Settings from the environment (and a development `.env`, which never overrides).

    Args:
        environ: the variables to read; `os.environ` when omitted.
        dotenv: a `.env` file read first; `./.env` when omitted and `environ` is omitted.
    """
    env: dict[str, str] = {}
    if environ is None:
        env.update(_read_dotenv(dotenv or Path(".env")))
        env.update(os.environ)
    else:
        env.update(environ)
    base = Settings()
    home = default_home(env)
    database_url = anchor_url(env.get("PMS_DATABASE_URL") or embedded_database_url(home), home)
    algorithms = tuple(
        a.strip() for a in env.get("PMS_JWT_ALGORITHMS", ",".join(base.jwt_algorithms)).split(",")
        if a.strip()
    )
    return Settings(
        database_url=database_url,
        migration_database_url=anchor_url(env.get("PMS_MIGRATION_DATABASE_URL") or database_url,
                                          home),
        broker_url=checked_broker_url(env.get("PMS_BROKER_URL", base.broker_url)),
        broker_queue_type=broker_queue_type(env.get("PMS_BROKER_QUEUE_TYPE")),
        event_exchange=env.get("PMS_EVENT_EXCHANGE", base.event_exchange),
        jwks_url=anchor_url(env.get("PMS_JWKS_URL") or embedded_jwks_url(home), home),
        jwt_issuer=env.get("PMS_JWT_ISSUER", base.jwt_issuer),
        jwt_audience=env.get("PMS_JWT_AUDIENCE", base.jwt_audience),
        jwt_algorithms=algorithms,
        jwt_max_lifetime_s=int(env.get("PMS_JWT_MAX_LIFETIME_S", base.jwt_max_lifetime_s)),
        platform_url=env.get("PMS_PLATFORM_URL", base.platform_url),
        platform_token_url=env.get("PMS_PLATFORM_TOKEN_URL", ""),
        platform_client_id=env.get("PMS_PLATFORM_CLIENT_ID", ""),
        platform_client_secret=env.get("PMS_PLATFORM_CLIENT_SECRET", ""),
        port=int(env.get("PORT", base.port)),
        web_concurrency=int(env.get("WEB_CONCURRENCY", base.web_concurrency)),
        db_pool_size=int(env.get("PMS_DB_POOL_SIZE", base.db_pool_size)),
        database_replica_urls=replica_urls(env.get("PMS_DATABASE_REPLICA_URLS")),
        replica_max_lag_s=float(env.get("PMS_REPLICA_MAX_LAG_SECONDS", base.replica_max_lag_s)),
        replica_max_lag_bytes=int(env.get("PMS_REPLICA_MAX_LAG_BYTES",
                                          base.replica_max_lag_bytes)),
        drain_seconds=float(env.get("PMS_DRAIN_SECONDS", base.drain_seconds)),
        schedule_check_seconds=float(env.get("PMS_SCHEDULE_CHECK_SECONDS",
                                             base.schedule_check_seconds)),
        log_level=env.get("PMS_LOG_LEVEL", base.log_level),
        embedded_runtime=env.get("PMS_EMBEDDED_RUNTIME", "1").lower() not in ("0", "false", "no"),
        calendar_horizon_days=calendar_horizon_days(env.get("PMS_CALENDAR_HORIZON_DAYS")),
        home=home,
        jwks_max_age_s=jwks_max_age_s(env.get("PMS_JWKS_MAX_AGE_SECONDS")),
        platform_event_source=(env.get("PMS_PLATFORM_EVENT_SOURCE") or "").strip()
        or DEFAULT_PLATFORM_EVENT_SOURCE,
        defaulted=frozenset(name for name in DEVELOPMENT_FALLBACKS if not env.get(name)),
        console_token_file=(Path(env["PMS_CONSOLE_TOKEN_FILE"])
                            if env.get("PMS_CONSOLE_TOKEN_FILE") else None),
    )


BROKER_QUEUE_TYPES = ("classic", "quorum")


def broker_urls(value: str) -> tuple[str, ...]:
    """PMS_BROKER_URL split into its addresses (one for `stub://` or a single node)."""
    return tuple(u.strip() for u in value.split(",") if u.strip())


def checked_broker_url(value: str) -> str:
    """PMS_BROKER_URL as given (spaces around the commas dropped); a list must hold only
    amqp(s):// URLs, refused at start-up otherwise."""
    urls = broker_urls(value)
    if not urls:
        raise ValueError("PMS_BROKER_URL is empty: stub:// or amqp://... (comma-separated "
                         "for the nodes of a cluster)")
    if len(urls) > 1 and not all(u.startswith(("amqp://", "amqps://")) for u in urls):
        raise ValueError("PMS_BROKER_URL with several addresses takes amqp:// or amqps:// "
                         "URLs only, comma separated")
    return ",".join(urls)


def broker_queue_type(value: str | None) -> str:
    """PMS_BROKER_QUEUE_TYPE: classic (unset or empty) or quorum; anything else refused."""
    kind = (value or "").strip().lower() or "classic"
    if kind not in BROKER_QUEUE_TYPES:
        raise ValueError(f"PMS_BROKER_QUEUE_TYPE must be classic or quorum, not {value!r}")
    return kind


def replica_urls(value: str | None) -> tuple[str, ...]:
    """PMS_DATABASE_REPLICA_URLS: PostgreSQL URLs of hot standbys, comma separated."""
    urls = tuple(u.strip() for u in (value or "").split(",") if u.strip())
    for url in urls:
        if not url.startswith(("postgres://", "postgresql://")):
            raise ValueError("PMS_DATABASE_REPLICA_URLS takes postgresql:// URLs of hot standbys")
    return urls


def jwks_max_age_s(value: str | None) -> float:
    """PMS_JWKS_MAX_AGE_SECONDS: 1..3600 seconds (unset or empty: 300); else refused."""
    if value is None or not value.strip():
        return DEFAULT_JWKS_MAX_AGE_S
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"PMS_JWKS_MAX_AGE_SECONDS must be a number of seconds, "
                         f"not {value!r}") from None
    if not 1 <= seconds <= MAX_JWKS_MAX_AGE_S:
        raise ValueError(f"PMS_JWKS_MAX_AGE_SECONDS must be 1..{MAX_JWKS_MAX_AGE_S:.0f}, "
                         f"not {value}")
    return seconds
