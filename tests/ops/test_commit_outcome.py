"""A COMMIT lost with its connection, provoked for real: a TCP proxy between
the app and PostgreSQL (tests/tcpproxy.py) cuts the app's connection at the message that carries
the transaction's COMMIT, after the server got it (it commits, the app never hears back) or
before (it never arrives, the server rolls back).

- committed: the normal answer (201 with the reservation or the payment), written once;
- aborted: 503 `database_unavailable`, nothing written (retrying it is safe);
- unknown (the database unreachable afterwards): 500 `commit_outcome_unknown`, which the balancer
  configuration (tests/ops/haproxy.py, docs/operations/deploys.md) never retries.

PostgreSQL only: SQLite has no connection to lose.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

import falcon.testing
import pytest

from pms.app import create_app
from pms.db.database import connection_scope, make_database
from pms.db.database import db as db_proxy
from pms.db.uow import read_scope
from pms.models import Folio, FolioPayment, Reservation
from tests.conftest import Api
from tests.factories import make_booking_hotel, make_checked_in, reservation_body
from tests.helpers import assert_problem
from tests.tcpproxy import CuttingProxy

pytestmark = pytest.mark.postgres

COMMIT = b"COMMIT\x00"  # the end of the Query message that carries the COMMIT
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def proxy(pg_database: Any) -> Iterator[CuttingProxy]:
    parsed = urlparse(pg_database.app_url)
    p = CuttingProxy(parsed.hostname or "127.0.0.1", parsed.port or 5432)
    yield p
    p.close()


@pytest.fixture
def proxied_db(pg_database: Any, proxy: CuttingProxy) -> Iterator[Any]:
    parsed = urlparse(pg_database.app_url)
    netloc = parsed.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{proxy.port}"
    url = urlunparse(parsed._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host))
    database = make_database(url, pool_size=4)
    database.commit_status_wait_s = 1.0
    db_proxy.initialize(database)
    yield database
    database.close_all()


@pytest.fixture
def cut_api(base_settings: Any, proxied_db: Any, clock: Any, env_id: Any) -> Api:
    app = create_app(base_settings, db=proxied_db, clock=clock)
    return Api(falcon.testing.TestClient(app), base_settings, env_id)


def _own_connection(database: Any) -> None:
    """Give back the connection the test's setup opened on this thread, so the request's
    connection scope opens (and owns, and drops when lost) its own, as a server's does."""
    if not database.is_closed():
        database.close()


def _reservations(ctx: Any, hotel: Any) -> list[Any]:
    with connection_scope(), read_scope(ctx):
        return list(Reservation.select().where(Reservation.property_id == hotel.id))


def test_booking_whose_commit_reached_the_server_answers_201_once(ctx, proxied_db, proxy,
                                                                     cut_api):
    hotel = make_booking_hotel(ctx)
    _own_connection(proxied_db)
    proxy.arm(COMMIT, "after")
    resp = cut_api.post(f"/v1/properties/{hotel.id}/reservations", reservation_body(hotel))
    assert proxy.fired.is_set(), "the booking's COMMIT never went through the proxy"
    assert resp.status_code == 201, resp.text
    rows = _reservations(ctx, hotel)
    assert [str(r.id) for r in rows] == [resp.json["id"]]
    # the app goes on with new connections
    assert cut_api.get(f"/v1/properties/{hotel.id}/reservations/{rows[0].id}").status_code == 200


def test_booking_whose_commit_never_arrived_answers_503_and_wrote_nothing(ctx, proxied_db, proxy,
                                                                         cut_api):
    hotel = make_booking_hotel(ctx)
    _own_connection(proxied_db)
    proxy.arm(COMMIT, "before")
    resp = cut_api.post(f"/v1/properties/{hotel.id}/reservations", reservation_body(hotel))
    assert proxy.fired.is_set()
    assert_problem(resp, 503, "database_unavailable")
    assert resp.headers["Retry-After"] == "1"
    assert _reservations(ctx, hotel) == []


def test_booking_whose_outcome_cannot_be_asked_answers_500_commit_outcome_unknown(
        ctx, proxied_db, proxy, cut_api):
    hotel = make_booking_hotel(ctx)
    _own_connection(proxied_db)
    proxy.arm(COMMIT, "after", down_after=True)  # and the database unreachable afterwards
    resp = cut_api.post(f"/v1/properties/{hotel.id}/reservations", reservation_body(hotel))
    assert proxy.fired.is_set()
    assert_problem(resp, 500, "commit_outcome_unknown")
    assert "Retry-After" not in resp.headers
    proxy.restore()
    # it did commit: a retry would have booked twice
    assert len(_reservations(ctx, hotel)) == 1


@pytest.mark.parametrize("when, status", [("after", 201), ("before", 503)])
def test_cash_payment_with_a_lost_commit_answers_what_happened(ctx, proxied_db, proxy, cut_api,
                                                               when, status):
    hotel = make_booking_hotel(ctx)
    res = make_checked_in(ctx, hotel)
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == res.id)
    _own_connection(proxied_db)
    proxy.arm(COMMIT, when)
    resp = cut_api.post(f"/v1/properties/{hotel.id}/folios/{folio.id}/payments",
                        {"amount": "40.00", "method": "CASH"})
    assert proxy.fired.is_set()
    assert resp.status_code == status, resp.text
    with connection_scope(), read_scope(ctx):
        paid = list(FolioPayment.select().where(FolioPayment.folio == folio.id))
    assert len(paid) == (1 if status == 201 else 0)


def _retry_on(text: str) -> list[list[str]]:
    return [line.split()[1:] for line in re.findall(r"retry-on[^\n\"]*", text)]


def test_the_balancer_configuration_never_retries_a_500():
    """The 500 `commit_outcome_unknown` relies on it: neither the tests' HAProxy nor the
    configuration the operations guide gives (docs/operations/deploys.md), nor any other the
    docs or deploy/ show, retries a 500 (nor every 5xx)."""
    shown = [p for p in sorted([*ROOT.glob("docs/**/*.md"), *ROOT.glob("deploy/**/*")])
             if p.is_file() and "retry-on" in p.read_text(errors="replace")]
    assert ROOT / "docs/operations/deploys.md" in shown
    for path in (ROOT / "tests/ops/haproxy.py", *shown):
        found = _retry_on(path.read_text(errors="replace"))
        assert found, f"no retry-on line in {path}"
        for tokens in found:
            assert "500" not in tokens and "all-retryable-errors" not in tokens, (path, tokens)
            assert not any(t.startswith("5xx") for t in tokens), (path, tokens)


# -- with an Idempotency-Key: the key follows the change -----------------------------------------

@pytest.mark.parametrize("when, status", [("after", 201), ("before", 503), ("unknown", 500)])
def test_booking_with_an_idempotency_key_and_a_lost_commit(ctx, proxied_db, proxy, cut_api,
                                                           when, status):
    """The booking's key commits with the booking (one transaction): the retry with the same
    key replays the booking when it committed, and books when it did not."""
    hotel = make_booking_hotel(ctx)
    key = {"Idempotency-Key": f"k-{uuid.uuid4().hex}"}
    body = reservation_body(hotel)
    _own_connection(proxied_db)
    proxy.arm(COMMIT, "before" if when == "before" else "after", down_after=when == "unknown")
    resp = cut_api.post(f"/v1/properties/{hotel.id}/reservations", body, headers=key)
    assert proxy.fired.is_set()
    assert resp.status_code == status, resp.text
    proxy.restore()
    _own_connection(proxied_db)
    retry = cut_api.post(f"/v1/properties/{hotel.id}/reservations", body, headers=key)
    assert retry.status_code == 201, retry.text
    assert len(_reservations(ctx, hotel)) == 1
    if when != "before":  # it had committed: the retry is the replay
        assert retry.headers.get("Idempotent-Replayed") == "true"


def test_cash_payment_with_an_idempotency_key_and_an_unknown_outcome_keeps_the_key(
        ctx, proxied_db, proxy, cut_api):
    """A payment's key is claimed in a transaction of its own (the general path): after a 500
    `commit_outcome_unknown` the claim stays, so a retry with the key is refused while it is
    fresh (409) instead of paying again; the abandoned claim's recovery (after 2 minutes)
    then reads the audit row to tell."""
    hotel = make_booking_hotel(ctx)
    res = make_checked_in(ctx, hotel)
    with read_scope(ctx):
        folio = Folio.get(Folio.reservation == res.id)
    path = f"/v1/properties/{hotel.id}/folios/{folio.id}/payments"
    key = {"Idempotency-Key": f"k-{uuid.uuid4().hex}"}
    _own_connection(proxied_db)
    proxy.arm(COMMIT, "after", down_after=True, skip=1)  # (the first: the key's claim)
    resp = cut_api.post(path, {"amount": "40.00", "method": "CASH"}, headers=key)
    assert proxy.fired.is_set()
    assert_problem(resp, 500, "commit_outcome_unknown")
    proxy.restore()
    _own_connection(proxied_db)
    retry = cut_api.post(path, {"amount": "40.00", "method": "CASH"}, headers=key)
    assert_problem(retry, 409, "idempotency_key_in_use")
    with connection_scope(), read_scope(ctx):
        assert FolioPayment.select().where(FolioPayment.folio == folio.id).count() == 1


# -- the same server, or no answer ------------------------------------------------------------

def test_a_lost_commit_is_asked_of_the_server_that_ran_it_and_no_other(pg_database):
    """After a failover the fresh connection reaches the promoted standby, which reuses the
    transaction ids the old primary never sent it: its `pg_xact_status` for such an id may be
    another transaction's. The announcement names the server's start; a status asked of a
    server that started at another time is `commit_outcome_unknown`, never a guess."""
    import psycopg2

    from pms.db import commit_outcome
    from pms.errors import CommitOutcomeUnknown

    conn = psycopg2.connect(pg_database.app_url)
    try:
        with conn.cursor() as cur:
            cur.execute(commit_outcome.ANNOUNCE_SQL)
            cur.execute("SELECT 1")
        conn.commit()
        announced = commit_outcome.announcement(conn)
    finally:
        conn.close()
    assert announced is not None and announced[1] is not None  # the id and the server's start
    xid, started = announced
    dsn = {"dsn": pg_database.app_url}
    assert commit_outcome.xact_status(dsn, xid, server_start=started, wait_s=0) == "committed"
    # the control: the same id asked of "another server" (another start) is not answered
    assert commit_outcome.xact_status(dsn, xid, server_start=started + 1,
                                      wait_s=0) == commit_outcome.OTHER_SERVER

    class Lost:  # a connection whose COMMIT answer was lost, as psycopg2 leaves it
        notices = [f"NOTICE:  pms-xact {xid} {started + 1}\n"]

    with pytest.raises(CommitOutcomeUnknown):
        commit_outcome.settle(ConnectionError("lost"), Lost(), dsn, wait_s=0)
    Lost.notices = [f"NOTICE:  pms-xact {xid} {started}\n"]
    commit_outcome.settle(ConnectionError("lost"), Lost(), dsn, wait_s=0)  # committed: returns
