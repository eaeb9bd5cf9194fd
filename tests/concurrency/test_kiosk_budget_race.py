"""The kiosk's failure budget under real parallel requests on PostgreSQL: many
concurrent misses from one terminal, spread over the four gunicorn worker processes (as over
several web hosts), never run more lookups than the budget; the rest are 429 with Retry-After.
The terminal's budget row is locked (FOR UPDATE) before it is read, so the lookups of one
terminal queue. The control run's server takes no row lock (PMS_TEST_DISABLE_LOCKING=1) and
pauses after the budget read: there the misses overlap and more than the budget are looked up,
which shows the real test is able to fail.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from pms.db.uow import read_scope
from pms.devkeys import mint_token
from pms.models import KioskSession
from pms.services.kiosk import kiosk_lookup
from tests.api.kiosk_recipes import KIOSK_SCOPES, configure
from tests.concurrency.conftest import fire, start_server
from tests.factories import make_booking_hotel, make_reservation

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

MISSES = 16
BUDGET = kiosk_lookup.FAILURE_BUDGET


def _race(server: Any, ctx: Any, terminal: str) -> tuple[Counter, int]:
    hotel = make_booking_hotel(ctx, rooms=1)
    configure(ctx, hotel)
    row = make_reservation(ctx, hotel, guest={"last_name": "Lovelace"})
    token = mint_token(server.settings, env_id=ctx.env_id, client_kind="kiosk", sub=terminal,
                       scopes=KIOSK_SCOPES)
    headers = {"Authorization": f"Bearer {token}", "X-Platform-Env-Id": str(ctx.env_id)}
    url = f"{server.base_url}/v1/properties/{hotel.id}/kiosk/lookup"
    # the terminal's row exists before the race (its first lookup, a hit): the misses contend
    # on its lock, not on its first insert
    first = {"last_name": "Lovelace", "confirmation_number": row.confirmation_number}
    resp = server_post(url, first, headers)
    assert resp.status_code == 200, resp.text
    miss = {"last_name": "Babbage", "confirmation_number": row.confirmation_number}

    def send(i: int, session: Any) -> tuple[int, str, bool]:
        answer = session.post(url, json=miss, headers=headers, timeout=60)
        code = answer.json().get("code", "") if answer.status_code >= 400 else ""
        return answer.status_code, code, "retry-after" in answer.headers

    outcome = Counter(fire(MISSES, send))
    with read_scope(ctx):  # every lookup that ran wrote its session row: the misses counted
        looked_up = KioskSession.select().where(KioskSession.terminal == terminal,
                                                KioskSession.reservation_id.is_null()).count()
    return outcome, looked_up


def server_post(url: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    import requests

    return requests.post(url, json=body, headers=headers, timeout=60)


def test_concurrent_misses_from_one_terminal_never_exceed_the_budget(pms_server, pg_db, ctx):
    outcome, looked_up = _race(pms_server, ctx, "kiosk-race")
    assert outcome == Counter({(404, "reservation_not_found", False): BUDGET,
                               (429, "too_many_lookups", True): MISSES - BUDGET}), (
        outcome, pms_server.log_tail())
    assert looked_up == BUDGET


def test_control_without_the_terminal_lock_exceeds_the_budget(pg_database, base_settings, pg_db,
                                                              ctx, tmp_path):
    server = start_server(pg_database, base_settings, tmp_path, workers=2, extra_env={
        "PMS_TEST_DISABLE_LOCKING": "1", "PMS_TEST_PAUSE_AFTER_LOOKUP_BUDGET_MS": "300"})
    try:
        outcome, looked_up = _race(server, ctx, "kiosk-race-control")
    finally:
        server.stop()
    misses = outcome[(404, "reservation_not_found", False)]
    assert misses > BUDGET, outcome  # the race the lock prevents is real
    assert looked_up > BUDGET
