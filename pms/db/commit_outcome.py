"""What happened to a transaction whose connection was lost while its COMMIT was on the way.

A write transaction's last round trip sends its last statements and the COMMIT together
(`PmsPostgresDatabase.execute_and_commit`), or the COMMIT alone. If the connection is lost
during that round trip, the server may have committed (it read the COMMIT and could not answer)
or not (the message never arrived, or the transaction aborted). A 503 `database_unavailable`
there is a lie the load balancer acts on: it retries, and a booking or a cash payment sent
without an Idempotency-Key runs twice. So the outcome is asked:

- Every unit of work on PostgreSQL learns its transaction id with no round trip of its own: a
  prelude (`SELECT pms_announce_xact()`, migration 022) rides in the transaction's first
  message and raises a NOTICE `pms-xact <xid>`, which psycopg2 keeps in `connection.notices`
  (nothing is read on the happy path; the notices are looked at only after a lost commit).
- After a lost commit, a fresh connection (outside the pool, same parameters: through PgBouncer
  too, which keeps no session state for it) asks `pg_xact_status(<xid>)`, polling while the
  server still has it `in progress` (it has not yet noticed the client is gone), for at most
  `COMMIT_STATUS_WAIT_S`:
  - `committed`: the commit stands; the caller goes on as after any commit (the normal answer),
    on a new connection for whatever it still reads;
  - `aborted`: nothing was done; the original error stands (503 `database_unavailable`, safe to
    retry);
  - anything else (no xid announced: the transaction's first message was its last; the
    database unreachable; still in progress at the deadline): `CommitOutcomeUnknown`, a 500
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


def announced_xid(conn: Any) -> int | None:
    """The transaction id the current transaction announced (the last `pms-xact` notice), or
    None. The notices are cleared when a unit of work begins."""
    notices = getattr(conn, "notices", None) or ()
    for notice in reversed(notices):
        at = notice.find(NOTICE_PREFIX)
        if at >= 0:
            digits = notice[at + len(NOTICE_PREFIX):].strip()
            return int(digits) if digits.isdigit() else None
    return None


def xact_status(connect_kwargs: dict[str, Any], xid: int, *,
                wait_s: float = COMMIT_STATUS_WAIT_S) -> str | None:
    """`pg_xact_status(xid)` asked on fresh connections until it is `committed` or `aborted`
    or `wait_s` has passed (then the last answer: `in progress`, None when none came)."""
    deadline = time.monotonic() + wait_s
    status: str | None = None
    while True:
        try:
            conn = psycopg2.connect(**connect_kwargs)
            try:
                conn.autocommit = True
                with conn.cursor() as cur:
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
    xid = announced_xid(conn)
    status = xact_status(connect_kwargs, xid, wait_s=wait_s) if xid is not None else None
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
