"""No timing oracle by construction: a kiosk lookup that misses runs the same
statements as one that matches, in the same order, on SQLite and PostgreSQL. Captured from the
database driver's log (every statement peewee sends, raw or built), compared by their text
(values aside) and count; misses of every cause are compared to the hit. Only once its answer
is decided and committed does a hit read more (what the stay owes, the rule check-out uses):
reads only, after every statement a miss runs, on a path whose answer (200, not 404) already
says it matched."""

from __future__ import annotations

import pytest
from playhouse.test_utils import count_queries

from pms.errors import NotFound
from pms.schemas.kiosk import KioskLookupIn
from pms.services.kiosk import kiosk_lookup
from tests.api.kiosk_recipes import KIOSK_SCOPES, configure
from tests.factories import make_booking_hotel, make_checked_in, make_reservation


def _statements(kctx, hotel, **body):
    with count_queries() as counted:
        try:
            kiosk_lookup.lookup(kctx, hotel.id, KioskLookupIn(**body))
            outcome = "hit"
        except NotFound:
            outcome = "miss"
    return outcome, [q.msg[0] for q in counted.get_queries()]


def test_a_miss_runs_the_same_statements_as_a_hit(ctx, database):
    hotel = make_booking_hotel(ctx, rooms=3)
    configure(ctx, hotel)
    row = make_reservation(ctx, hotel, guest={"last_name": "Lovelace"})
    stay = make_checked_in(ctx, hotel, guest={"last_name": "Byron"})
    kctx = ctx.with_(client_kind="kiosk", sub="kiosk-statements", scopes=frozenset(KIOSK_SCOPES))
    number = row.confirmation_number
    _statements(kctx, hotel, last_name="Lovelace", confirmation_number=number)  # first use
    outcome, hit = _statements(kctx, hotel, last_name="Lovelace", confirmation_number=number)
    assert outcome == "hit" and hit
    misses = {
        "wrong name": {"last_name": "Babbage", "confirmation_number": number},
        "unknown number": {"last_name": "Lovelace", "confirmation_number": "NOPE-1"},
        "in-house by confirmation, wrong name": {
            "last_name": "Keats", "confirmation_number": stay.confirmation_number},
        "room of no in-house stay": {"last_name": "Lovelace", "room_number": "999"},
    }
    shared = None
    for cause, body in misses.items():
        outcome, miss = _statements(kctx, hotel, **body)
        assert outcome == "miss", cause
        shared = miss if shared is None else shared
        assert miss == shared, cause
        assert hit[:len(miss)] == miss, (cause, miss, hit)
        _reads_only(hit[len(miss):])
    # a hit by room number runs them too
    outcome, by_room = _statements(kctx, hotel, last_name="byron",
                                   room_number=_room_number(ctx, stay))
    assert outcome == "hit" and by_room[:len(shared)] == shared
    _reads_only(by_room[len(shared):])


def _reads_only(statements):
    """Reads, and a read scope's own framing (BEGIN, SET LOCAL, COMMIT, ROLLBACK)."""
    for sql in statements:
        for part in (p.strip().upper() for p in sql.split(";") if p.strip()):
            assert part.startswith(("SELECT", "WITH", "BEGIN", "SET LOCAL", "COMMIT",
                                    "ROLLBACK")), sql


def _room_number(ctx, stay):
    from pms.db.uow import read_scope
    from pms.models import Reservation

    with read_scope(ctx):
        return Reservation.get_by_id(stay.id).room.room_number


def test_the_capture_sees_a_different_statement(ctx, database):
    """The comparison can fail: a lookup refused for its budget runs fewer statements."""
    hotel = make_booking_hotel(ctx, rooms=1)
    configure(ctx, hotel)
    kctx = ctx.with_(client_kind="kiosk", sub="kiosk-blocked", scopes=frozenset(KIOSK_SCOPES))
    body = {"last_name": "X", "confirmation_number": "NOPE-1"}
    _, miss = _statements(kctx, hotel, **body)
    for _ in range(kiosk_lookup.FAILURE_BUDGET - 1):
        _statements(kctx, hotel, **body)
    with count_queries() as counted, pytest.raises(Exception) as refused:
        kiosk_lookup.lookup(kctx, hotel.id, KioskLookupIn(**body))
    assert getattr(refused.value, "status", None) == 429
    assert [q.msg[0] for q in counted.get_queries()] != miss
