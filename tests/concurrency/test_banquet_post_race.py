"""parallel posts of one ACTUAL banquet event to its block's master folio, on
PostgreSQL.

- Over HTTP (gunicorn, 4 workers): eight `POST .../events/{id}/post` at once post each resource
  once (the event row's lock serializes them; the later ones find the posting and post nothing).
- In process, three runs of the same race, every thread held after it read what was posted
  until all eight have read (TEST-ONLY `pause_after_check`):
  * `locked`: as shipped; the lock serializes (the pause runs under it, one at a time);
  * `key-only`: row locking off (TEST-ONLY wiring): the unique key (env_id, event_id,
    resource_id) of event_posting lets one post win, the others answer 409 event_posting_raced
    and their lines roll back with them;
  * `control`: row locking off on a database without that key: every thread posts, the
    duplication the lock and the key prevent, so this test is known to be able to fail.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import msgspec
import pytest

from pms import wiring
from pms.db.database import db
from pms.db.uow import read_scope
from pms.errors import Conflict
from pms.models import EventPosting, FolioCharge
from pms.schemas.banquets import (
    BanquetEventIn,
    EventResourceIn,
    FunctionSpaceIn,
    ResourceItemIn,
)
from pms.schemas.cashiering import TransactionCodeIn
from pms.schemas.room_blocks import BlockIn
from pms.services.cashiering.transaction_codes import TRANSACTION_CODE
from pms.services.catalog import catalog
from pms.services.groups import banquets, room_blocks
from tests.concurrency.conftest import altered_database, fire
from tests.factories import make_booking_hotel

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

THREADS = 8
START = datetime(2027, 3, 1, 9, tzinfo=UTC)


def _actual_event(ctx: Any) -> tuple[Any, Any, Any]:
    """(property id, ACTUAL event of a block with two projectors at 40.00, the block)."""
    hotel = make_booking_hotel(ctx, rooms=1)
    catalog.create_child(ctx, TRANSACTION_CODE, hotel.id, msgspec.convert(
        {"code": "FB", "name": "F&B", "category": "F&B"}, TransactionCodeIn))
    block = room_blocks.create_block(ctx, hotel.id, msgspec.convert({
        "code": "RACE", "name": "Race group", "arrival_date": "2027-03-01",
        "departure_date": "2027-03-03", "rate_plan_id": str(hotel.rate_plan.id)}, BlockIn))
    space = banquets.create_space(ctx, hotel.id, msgspec.convert(
        {"name": "Hall", "capacities": {"THEATRE": 100}}, FunctionSpaceIn))
    ev = banquets.create_event(ctx, hotel.id, msgspec.convert({
        "name": "Keynote", "space_id": str(space.id), "setup_style": "THEATRE",
        "start_at": START.isoformat(), "end_at": (START + timedelta(hours=2)).isoformat(),
        "attendees_forecast": 50, "block_id": str(block.id)}, BanquetEventIn))
    item = banquets.create_item(ctx, hotel.id, msgspec.convert(
        {"code": "PROJ", "name": "Projector", "kind": "EQUIPMENT", "stock": 5,
         "unit_price": "40.00", "transaction_code": "FB"}, ResourceItemIn))
    banquets.book_resource(ctx, hotel.id, ev.id, EventResourceIn(item_id=item.id, quantity=2))
    for trigger in ("definite", "actual"):
        banquets.transition(ctx, hotel.id, ev.id, trigger)
    return hotel.id, ev, block


def _posted(ctx: Any, block: Any, ev: Any) -> tuple[list[Decimal], int]:
    """(the master folio's non-tax line amounts, the event's posting rows)."""
    with read_scope(ctx):
        lines = [Decimal(str(c.amount)) for c in FolioCharge.select().where(
            (FolioCharge.folio == block.folio_id) & (FolioCharge.kind != "tax"))
            .order_by(FolioCharge.created_at, FolioCharge.id)]
        return lines, EventPosting.select().where(EventPosting.event == ev.id).count()


def test_parallel_post_requests_post_once(ctx, pg_db, pms_server):
    prop_id, ev, block = _actual_event(ctx)
    headers = pms_server.headers(ctx.env_id)
    url = f"{pms_server.base_url}/v1/properties/{prop_id}/events/{ev.id}/post"

    def send(i: int, session: Any) -> tuple[int, str]:
        resp = session.post(url, headers=headers, timeout=60)
        return resp.status_code, resp.json().get("code", "")

    results = fire(THREADS, send)
    # 503 lock_timeout (Retry-After): a lock wait over the timeout on a loaded machine
    assert {s for s, _ in results} <= {200, 503}, (results, pms_server.log_tail())
    assert any(s == 200 for s, _ in results), results
    assert _posted(ctx, block, ev) == ([Decimal("80.00")], 1)


# the unique index of event_posting's (env_id, event_id, resource_id), by peewee's name
POSTING_KEY = "eventposting_env_id_event_id_resource_id"


@pytest.fixture
def unkeyed(_pg_db: Any) -> Iterator[Any]:
    """CONTROL: a fresh migrated database without event_posting's unique key, bound for the
    test (then the session's database again)."""
    yield from altered_database(_pg_db, "pmsbqp", f'DROP INDEX "{POSTING_KEY}"')


def _race(ctx: Any, *, locked: bool) -> tuple[Counter[str], Any, Any]:
    prop_id, ev, block = _actual_event(ctx)
    start = threading.Barrier(THREADS, timeout=120)

    def post(_: int) -> str:
        try:
            start.wait(timeout=30)
            out = banquets.post_event(ctx, prop_id, ev.id)
            return "posted" if any(p.posted_now for p in out.postings) else "nothing"
        except Conflict as exc:
            return exc.code
        finally:
            db.close()

    changes: dict[str, Any] = {}
    if not locked:
        read_all = threading.Barrier(THREADS, timeout=120)
        changes = {"locking_enabled": False,
                   "pause_after_check": lambda: read_all.wait(timeout=60)}
    with wiring.installed(**changes), ThreadPoolExecutor(max_workers=THREADS) as pool:
        outcomes = Counter(pool.map(post, range(THREADS)))
    return outcomes, ev, block


def test_locked_parallel_posts_post_once(ctx, pg_db):
    outcomes, ev, block = _race(ctx, locked=True)
    assert outcomes == Counter({"posted": 1, "nothing": THREADS - 1}), outcomes
    assert _posted(ctx, block, ev) == ([Decimal("80.00")], 1)


def test_the_unique_key_alone_keeps_one_posting_when_unlocked(ctx, pg_db):
    outcomes, ev, block = _race(ctx, locked=False)
    assert outcomes == Counter({"posted": 1, "event_posting_raced": THREADS - 1}), outcomes
    assert _posted(ctx, block, ev) == ([Decimal("80.00")], 1)


def test_control_without_the_lock_and_the_key_the_race_posts_twice(ctx, unkeyed):
    """CONTROL: the unlocked race on a database without the key: every thread posts."""
    outcomes, ev, block = _race(ctx, locked=False)
    assert outcomes == Counter({"posted": THREADS}), outcomes
    assert _posted(ctx, block, ev) == ([Decimal("80.00")] * THREADS, THREADS)
