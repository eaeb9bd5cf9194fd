"""Statements and round trips per request, counted exactly in a short in-process pass.

The load runs measure rates and CPU; how many statements a request sends does not depend on
load, so it is counted apart, once, through the real WSGI app (`pms.app.create_app`, every
middleware) in this process, with psycopg2 wrapped underneath (the method of
/work/shared/research/write-path-profile.md section 1):

- a **round trip** is one `cursor.execute` (psycopg2 sends one query message and waits for its
  answer), each parameter set of `executemany`, or a COMMIT/ROLLBACK/implicit BEGIN that
  psycopg2 sends itself (peewee runs in autocommit and sends those through `execute`);
- a **statement** is one `;`-separated SQL statement in what was sent: the service's
  `BEGIN; SET LOCAL ...; SET LOCAL ...; SET LOCAL ...; <statement>` is one round trip and five
  statements.

Nothing here times anything, so the figures are the same on a quiet and on a loaded machine.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import psycopg2
import psycopg2.extensions as pgext


def count_statements(sql: str | bytes) -> int:
    """The number of non-empty `;`-separated statements in `sql`.

    A `;` inside a string literal ('...', E'...'), a quoted identifier ("..."), a dollar-quoted
    body ($$...$$, $tag$...$tag$) or a comment (-- ..., /* ... */) separates nothing.
    """
    text = sql.decode() if isinstance(sql, bytes) else sql
    count, has_content, i, n = 0, False, 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"":
            end = text.find(ch, i + 1)
            while end != -1 and end + 1 < n and text[end + 1] == ch:  # doubled quote
                end = text.find(ch, end + 2)
            i, has_content = (n if end == -1 else end + 1), True
            continue
        if ch == "-" and text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end == -1 else end + 1
            continue
        if ch == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end == -1 else end + 2
            continue
        if ch == "$":
            tag_end = text.find("$", i + 1)
            tag = text[i:tag_end + 1] if tag_end != -1 else ""
            if tag and (tag == "$$" or tag[1:-1].replace("_", "a").isalnum()) \
                    and not tag[1].isdigit():
                end = text.find(tag, tag_end + 1)
                i, has_content = (n if end == -1 else end + len(tag)), True
                continue
        if ch == ";":
            count += has_content
            has_content = False
        elif not ch.isspace():
            has_content = True
        i += 1
    return count + has_content


@dataclass
class Tally:
    """Round trips and statements sent, thread-safe (gunicorn-like apps use threads)."""

    round_trips: int = 0
    statements: int = 0
    transactions: int = 0  # COMMITs sent
    log: list[str] | None = None  # every SQL text when set to a list (for debugging)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def sent(self, sql: Any, round_trips: int = 1) -> None:
        text = sql.decode() if isinstance(sql, bytes) else str(sql)
        statements = count_statements(text)
        commits = sum(1 for part in text.upper().split(";") if part.strip() in ("COMMIT", "END"))
        with self._lock:
            self.round_trips += round_trips
            self.statements += statements * round_trips
            self.transactions += commits * round_trips
            if self.log is not None:
                self.log.append(text)

    def snapshot(self) -> tuple[int, int, int]:
        with self._lock:
            return self.round_trips, self.statements, self.transactions


def counting_connection_factory(tally: Tally) -> type[pgext.connection]:
    """A psycopg2 connection class whose cursors and transaction calls report to `tally`; pass
    it as psycopg2.connect(connection_factory=...)."""

    def implicit_begin(conn: pgext.connection) -> None:
        # Outside autocommit psycopg2 sends its own BEGIN, a round trip of its own.
        if not conn.autocommit and conn.get_transaction_status() == pgext.TRANSACTION_STATUS_IDLE:
            tally.sent("BEGIN")

    class CountingCursor(pgext.cursor):
        def execute(self, query: Any, vars: Any = None) -> Any:  # noqa: A002 - psycopg2's name
            implicit_begin(self.connection)
            tally.sent(query)
            return super().execute(query, vars)

        def executemany(self, query: Any, vars_list: Any) -> Any:
            params = list(vars_list)
            implicit_begin(self.connection)
            tally.sent(query, round_trips=len(params))
            return super().executemany(query, params)

        def callproc(self, procname: str, parameters: Any = None) -> Any:
            implicit_begin(self.connection)
            tally.sent(f"SELECT * FROM {procname}()")
            return super().callproc(procname, parameters)

    class CountingConnection(pgext.connection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.cursor_factory = CountingCursor  # the default of conn.cursor(), named or not

        def commit(self) -> None:
            if not self.autocommit and self.get_transaction_status() != pgext.TRANSACTION_STATUS_IDLE:
                tally.sent("COMMIT")
            super().commit()

        def rollback(self) -> None:
            if not self.autocommit and self.get_transaction_status() != pgext.TRANSACTION_STATUS_IDLE:
                tally.sent("ROLLBACK")
            super().rollback()

    return CountingConnection


def counting_connect(dsn: str, tally: Tally, **kwargs: Any) -> pgext.connection:
    return psycopg2.connect(dsn, connection_factory=counting_connection_factory(tally), **kwargs)


@dataclass(frozen=True)
class Call:
    """One request of a counting pass."""

    method: str
    path: str
    body: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Counts:
    """Per-request figures of a counting pass (means, with the spread)."""

    requests: int
    statements_per_req: float
    round_trips_per_req: float
    transactions_per_req: float
    round_trips_min: int
    round_trips_max: int
    statuses: dict[int, int]

    def extra(self) -> dict[str, Any]:
        """The keys merged into a Measurement's `extra` (and so into bench/out/*.json)."""
        return {"statements_per_req": self.statements_per_req,
                "round_trips_per_req": self.round_trips_per_req,
                "commits_per_req": self.transactions_per_req,
                "round_trips_range": [self.round_trips_min, self.round_trips_max],
                "counted_requests": self.requests,
                "counted_statuses": {str(k): v for k, v in sorted(self.statuses.items())}}


def run_pass(wsgi_app: Any, tally: Tally, calls: Iterable[Call], *, warmup: Iterable[Call] = ()
             ) -> Counts:
    """Send `warmup` (not counted: pool connections, caches) then `calls` through `wsgi_app`
    one at a time, and return the per-request means."""
    from falcon import testing

    client = testing.TestClient(wsgi_app)

    def send(call: Call) -> int:
        headers = dict(call.headers)
        if call.body is not None:
            headers.setdefault("Content-Type", "application/json")
        result = client.simulate_request(call.method, call.path, headers=headers,
                                         body=call.body)
        return result.status_code

    for call in warmup:
        send(call)
    per_request: list[tuple[int, int, int]] = []
    statuses: dict[int, int] = {}
    for call in calls:
        before = tally.snapshot()
        status = send(call)
        after = tally.snapshot()
        per_request.append(tuple(a - b for a, b in zip(after, before, strict=True)))  # type: ignore[arg-type]
        statuses[status] = statuses.get(status, 0) + 1
    if not per_request:
        raise ValueError("a counting pass needs at least one request")
    count = len(per_request)
    trips = [p[0] for p in per_request]
    return Counts(requests=count,
                  round_trips_per_req=round(sum(trips) / count, 2),
                  statements_per_req=round(sum(p[1] for p in per_request) / count, 2),
                  transactions_per_req=round(sum(p[2] for p in per_request) / count, 2),
                  round_trips_min=min(trips), round_trips_max=max(trips), statuses=statuses)


def count_service(settings: Any, calls: Iterable[Call], *, warmup: Iterable[Call] = ()) -> Counts:
    """A counting pass through `pms.app.create_app(settings)` with its own counting database
    object; the process's database binding (the seeding one) is restored afterwards."""
    from pms.app import create_app
    from pms.db.database import db as proxy
    from pms.db.database import make_database

    tally = Tally()
    database = make_database(settings.database_url, pool_size=2,
                             statement_timeout_ms=settings.limits.statement_timeout_ms)
    # peewee hands connect_params to psycopg2.connect: every connection counts
    database.connect_params["connection_factory"] = counting_connection_factory(tally)
    previous = proxy.obj
    try:
        app = create_app(settings, db=database)
        return run_pass(app, tally, calls, warmup=warmup)
    finally:
        database.close_all()
        if previous is not None:
            proxy.initialize(previous)


def unique_calls(make: Callable[[str], Call], n: int, *, idempotency: bool = False) -> list[Call]:
    """`n` calls from `make(token)` with a unique token each (and a fresh Idempotency-Key)."""
    calls = []
    for _ in range(n):
        token = uuid.uuid4().hex[:12]
        call = make(token)
        if idempotency:
            call = Call(call.method, call.path, call.body,
                        {**call.headers, "Idempotency-Key": f"count-{token}"})
        calls.append(call)
    return calls
