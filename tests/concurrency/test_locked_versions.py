"""A locked aggregate's event versions under real concurrency on PostgreSQL: a change
to a row read FOR UPDATE takes its next version in Python, with no `version + 1 ... RETURNING`
statement, and writes it with the COMMIT (`UnitOfWork.locked`). Twelve folio charges posted at
once on one folio (each in its own thread and connection, started together, each pausing after
its read) must give the folio's events twelve consecutive versions, and leave the folio's stored
version at the last one.

The control run shows the test can fail: the folio is read without its lock (the TEST-ONLY
`locking_enabled=False`) but declared locked all the same, so every poster counts on from the
version it read, and the events repeat versions.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest

from pms import wiring
from pms.db import locking as locking_module
from pms.db.current import current_unit_of_work
from pms.db.database import db
from pms.db.uow import read_scope
from pms.models import Folio
from pms.models.platform import OutboxEvent
from pms.schemas.cashiering import ChargeIn
from pms.services.cashiering import cashiering, folio_state
from tests.factories import make_fb_stay

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

POSTERS = 12
# Locked: each poster holds the folio through its pause while the others wait for the lock.
LOCKED_PAUSE_S = 0.02
# Control: no lock, so the pause lets every poster read before any commits.
CONTROL_PAUSE_S = 0.5


def _post_all(ctx, hotel, folio, *, pause: float, **switches) -> list[BaseException]:
    barrier = threading.Barrier(POSTERS, timeout=120)

    def post() -> None:
        barrier.wait()
        try:
            cashiering.post_charge(ctx, hotel.id, folio.id, ChargeIn(
                transaction_code="FB", amount=Decimal("1.00")))
        finally:
            db.close()

    with wiring.installed(pause_after_open_check=lambda: time.sleep(pause), **switches), \
            ThreadPoolExecutor(max_workers=POSTERS) as pool:
        futures = [pool.submit(post) for _ in range(POSTERS)]
    errors = []
    for future in futures:
        try:
            future.result()
        except BaseException as exc:  # noqa: BLE001 - reported by the assertions
            errors.append(exc)
    return errors


def _versions(ctx, folio) -> tuple[list[int], int]:
    with read_scope(ctx):
        events = [e.aggregate_version for e in OutboxEvent.select().where(
            (OutboxEvent.subject == str(folio.id))
            & (OutboxEvent.type == "hotel:pms:folio:charge_posted"))]
        stored = Folio.get_by_id(folio.id).version
    return sorted(events), stored


def test_concurrent_charges_on_one_folio_take_consecutive_versions(ctx, pg_db):
    hotel, _, folio = make_fb_stay(ctx)
    with read_scope(ctx):
        start = Folio.get_by_id(folio.id).version
    errors = _post_all(ctx, hotel, folio, pause=LOCKED_PAUSE_S)
    assert errors == []
    versions, stored = _versions(ctx, folio)
    assert versions == list(range(start + 1, start + POSTERS + 1))
    assert stored == start + POSTERS


def test_control_declaring_an_unlocked_read_locked_repeats_versions(ctx, pg_db, monkeypatch):
    hotel, _, folio = make_fb_stay(ctx)
    with read_scope(ctx):
        start = Folio.get_by_id(folio.id).version
    # the declaration without the lock it stands for: the read takes no lock (the wiring's
    # switch), but the folio's unlocked reads declare it all the same (TEST-ONLY: the
    # declaration skips its locking check, and the unlocked statements say they lock)
    def declare_regardless(model, row_id, version) -> None:
        current_unit_of_work().locked_version(model, row_id, version)

    monkeypatch.setattr(locking_module, "declare_locked_version", declare_regardless)
    for statement in (folio_state.STATE, folio_state.CODE_STATE):
        monkeypatch.setattr(statement, "locks", folio_state._folio_model)
    errors = _post_all(ctx, hotel, folio, pause=CONTROL_PAUSE_S, locking_enabled=False)
    assert errors == []
    versions, stored = _versions(ctx, folio)
    assert len(versions) == POSTERS
    assert len(set(versions)) < POSTERS, versions  # posters counted on from the same version
    assert stored < start + POSTERS  # and the stored version lost increments
