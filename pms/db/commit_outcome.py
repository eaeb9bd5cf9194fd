"""What happened to a transaction whose connection was lost while its COMMIT was on the way.

A write transaction's last round trip sends its last statements and the COMMIT together
(`PmsPostgresDatabase.execute_and_commit`), or the COMMIT alone. If the connection is lost
during that round trip, the server may have committed (it read the COMMIT and could not answer)
or not (the message never arrived, or the transaction aborted). A 503 `database_unavailable`
there is a lie the load balancer acts on: it retries, and a booking or a cash payment sent
without an Idempotency-Key runs twice. So the outcome is asked:

- Every unit of work on PostgreSQL learns its transaction id with no round trip of its own: a
  prelude (`SELECT pms_announce_xact()`, pms/db/sql/pms_announce_xact.sql) rides in the
  transaction's first message and raises a NOTICE `pms-xact <xid> <server start>`, which
  psycopg2 keeps in `connection.notices` (nothing is read on the happy path; the notices are
  looked at only after a lost commit).
- After a lost commit, a fresh connection (outside the pool, same parameters: through PgBouncer
  too, which keeps no session state for it) asks `pg_xact_status(<xid>)`, polling while the
  server still has it `in progress` (it has not yet noticed the client is gone), for at most
  `COMMIT_STATUS_WAIT_S`, and only of the server that ran it: after a failover the fresh
  connection reaches the promoted standby, which reuses the transaction ids the old primary
  had not sent it, so there the id may be another transaction's. The server's start time
  (in the notice, and asked again with the status) tells them apart; another server is
  `CommitOutcomeUnknown`, never a guess:
  - `committed`: the commit stands; the caller goes on as after any commit (the normal answer),
    on a new connection for whatever it still reads;
  - `aborted`: nothing was done; the original error stands (503 `database_unavailable`, safe to
    retry);
  - anything else (no xid announced: the transaction's first message was its last; the
    database unreachable; still in progress at the deadline; another server answering):
    `CommitOutcomeUnknown`, a 500
    `commit_outcome_unknown` that the balancer never retries.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import psycopg2

from pms.db import failures
from pms.errors import CommitOutcomeUnknown

log = logging.getLogger("pms.db")

ANNOUNCE_SQL = "SELECT pms_announce_xact()"
NOTICE_PREFIX = "pms-xact "
COMMIT_STATUS_WAIT_S = 3.0
_POLL_S = 0.05


def lost(exc: BaseException) -> bool:
    """Whether `exc` is a lost connection (or a server shutting down): the outcome of a COMMIT
    sent in that round trip is not known from the error itself."""
    return failures.classify(exc) == failures.UNAVAILABLE


OTHER_SERVER = "other server"  # the status asked reached a server that did not run it
_SERVER_START = "SELECT (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint"


def announcement(conn: Any) -> tuple[int, int | None] | None:
    """(transaction id, server start) the current transaction announced (the last `pms-xact`
    notice; the start is None in a notice without it), or None. The notices are cleared when
    a unit of work begins."""
    notices = getattr(conn, "notices", None) or ()
    for notice in reversed(notices):
        at = notice.find(NOTICE_PREFIX)
        if at >= 0:
            parts = notice[at + len(NOTICE_PREFIX):].split()
            if not parts or not all(p.isdigit() for p in parts[:2]):
                return None
            return int(parts[0]), int(parts[1]) if len(parts) > 1 else None
    return None


def announced_xid(conn: Any) -> int | None:
    """The announced transaction id alone (see `announcement`)."""
    found = announcement(conn)
    return found[0] if found else None


def xact_status(connect_kwargs: dict[str, Any], xid: int, *, server_start: int | None = None,
                wait_s: float = COMMIT_STATUS_WAIT_S) -> str | None:
    """`pg_xact_status(xid)` asked on fresh connections until it is `committed` or `aborted`
    or `wait_s` has passed (then the last answer: `in progress`, None when none came).
    `OTHER_SERVER` at once when the server answering is not the one that started at
    `server_start` (a promoted standby, a restarted server)."""
    deadline = time.monotonic() + wait_s
    status: str | None = None
    while True:
        try:
            conn = psycopg2.connect(**connect_kwargs)
            try:
                conn.autocommit = True
                with conn.cursor() as cur:
                    if server_start is not None:
                        cur.execute(_SERVER_START)
                        if int(cur.fetchone()[0]) != server_start:
                            return OTHER_SERVER
                    cur.execute("SELECT pg_xact_status(%s::text::xid8)", (str(xid),))
                    row = cur.fetchone()
                    status = row[0] if row else None
            finally:
                conn.close()
        except psycopg2.Error:
            status = None
        if status in ("committed", "aborted") or time.monotonic() >= deadline:
            return status
        time.sleep(_POLL_S)


def settle(exc: BaseException, conn: Any, connect_kwargs: dict[str, Any], *,
           wait_s: float = COMMIT_STATUS_WAIT_S) -> None:
    """After `exc` lost the connection `conn` during a round trip that carried a COMMIT:
    return if the transaction committed; re-raise `exc` if it aborted; else raise
    CommitOutcomeUnknown (see the module docstring)."""
    found = announcement(conn)
    xid, started = found if found else (None, None)
    status = (xact_status(connect_kwargs, xid, server_start=started, wait_s=wait_s)
              if xid is not None else None)
    fields = {"xid": xid, "xact_status": status, **failures.describe(exc)}
    if status == "committed":
        log.warning("connection lost during COMMIT; the transaction committed", extra=fields)
        return
    if status == "aborted":
        log.warning("connection lost during COMMIT; the transaction aborted", extra=fields)
        raise exc
    log.error("connection lost during COMMIT; its outcome is unknown", extra=fields)
    raise CommitOutcomeUnknown(
        "the database connection was lost while the change was being committed, and whether "
        "it was committed could not be learned; look it up before sending the request again"
    ) from exc
