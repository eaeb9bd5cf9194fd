"""the SQLite check under the write lock refuses exactly what PostgreSQL's exclusion
constraint (migration 029, btree_gist) refuses, on the same random data.

The same seeded sequence of bookings (random element spaces, combinations booking two elements,
random half-open intervals, touching ones included) is offered to both databases: on PostgreSQL
straight to the table (no check: the constraint alone decides, each insert in a savepoint); on
SQLite through `banquets.overlapping_booking` under BEGIN IMMEDIATE, as the service does. Both
accept/refuse lists must equal each other and a pure-Python oracle of interval overlap.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import peewee
import pytest

from pms.db.database import db
from pms.db.uow import read_scope, unit_of_work
from pms.models import BanquetEvent, FunctionSpace, SpaceBooking
from pms.services.groups import banquets
from tests.conftest import _bind
from tests.factories import make_property

pytestmark = pytest.mark.postgres

BASE = datetime(2027, 6, 1, 8, tzinfo=UTC)
ATTEMPTS = 120


def _sequence(seed: int) -> list[tuple[list[int], int, int]]:
    """(element indexes, start minute, end minute): a combination books two elements."""
    rnd = random.Random(seed)
    out = []
    for _ in range(ATTEMPTS):
        elements = rnd.sample(range(4), 2) if rnd.random() < 0.25 else [rnd.randrange(4)]
        start = rnd.randrange(0, 48) * 15
        out.append((elements, start, start + rnd.randrange(1, 12) * 15))
    return out


def _oracle(seq: list[tuple[list[int], int, int]]) -> list[bool]:
    held: list[tuple[int, int, int]] = []
    result = []
    for elements, lo, hi in seq:
        ok = not any(e == x and lo < h and hi > s_ for e in elements for x, s_, h in held)
        if ok:
            held += [(e, lo, hi) for e in elements]
        result.append(ok)
    return result


def _offer(ctx, seq, *, constraint_only: bool) -> list[bool]:
    prop = make_property(ctx)
    with unit_of_work(ctx):
        spaces = [FunctionSpace.create(property=prop.id, name=f"E{i}", capacities={"THEATRE": 9},
                                       element_ids=[], out_of_order=[]) for i in range(4)]
        events = [BanquetEvent.create(
            property=prop.id, space=spaces[0].id, name=f"e{i}", status="TENTATIVE",
            setup_style="THEATRE", start_at=BASE, end_at=BASE + timedelta(hours=1),
            attendees_forecast=1) for i in range(len(seq))]
    accepted = []
    for event, (elements, lo, hi) in zip(events, seq, strict=True):
        ids = [spaces[e].id for e in elements]
        starts, ends = BASE + timedelta(minutes=lo), BASE + timedelta(minutes=hi)
        rows = [{"event": event.id, "space_id": i, "starts": starts, "ends": ends} for i in ids]
        with unit_of_work(ctx):
            if constraint_only:
                try:
                    with db.atomic():
                        SpaceBooking.insert_many(rows).execute()
                    accepted.append(True)
                except peewee.IntegrityError:
                    accepted.append(False)
            elif banquets.overlapping_booking(ids, starts, ends, event.id) is None:
                SpaceBooking.insert_many(rows).execute()
                accepted.append(True)
            else:
                accepted.append(False)
    with read_scope(ctx):
        assert SpaceBooking.select().where(SpaceBooking.event.in_(
            [e.id for e in events])).count() == sum(
            len(el) for ok, (el, _, _) in zip(accepted, seq, strict=True) if ok)
    return accepted


@pytest.mark.parametrize("seed", [1, 2, 3, 34])
def test_sqlite_check_refuses_exactly_what_the_postgres_constraint_refuses(ctx, request, seed):
    seq = _sequence(seed)
    expected = _oracle(seq)
    assert 10 < expected.count(False) < ATTEMPTS - 10  # the data exercises both outcomes
    results = {}
    for name, constraint_only in (("_pg_db", True), ("_sqlite_db", False)):
        binding = _bind(request.getfixturevalue(name))
        next(binding)
        try:
            results[name] = _offer(replace(ctx, env_id=uuid.uuid4()), seq,
                                   constraint_only=constraint_only)
        finally:
            next(binding, None)
    assert results["_pg_db"] == expected
    assert results["_sqlite_db"] == expected


def test_postgres_constraint_exists_and_bites_without_the_check(ctx, pg_db):
    """Two overlapping rows of one element are refused by the database itself (no service
    code between), touching ones are not, another element is free."""
    prop = make_property(ctx)
    with unit_of_work(ctx):
        space = FunctionSpace.create(property=prop.id, name="S", capacities={"THEATRE": 9},
                                     element_ids=[], out_of_order=[])
        ev = BanquetEvent.create(property=prop.id, space=space.id, name="e", status="TENTATIVE",
                                 setup_style="THEATRE", start_at=BASE,
                                 end_at=BASE + timedelta(hours=1), attendees_forecast=1)
        SpaceBooking.create(event=ev.id, space_id=space.id, starts=BASE,
                            ends=BASE + timedelta(hours=2))
        SpaceBooking.create(event=ev.id, space_id=space.id, starts=BASE + timedelta(hours=2),
                            ends=BASE + timedelta(hours=3))
        SpaceBooking.create(event=ev.id, space_id=uuid.uuid4(), starts=BASE,
                            ends=BASE + timedelta(hours=3))
    with pytest.raises(peewee.IntegrityError, match="function_space_no_overlap"), \
            unit_of_work(ctx):
        SpaceBooking.create(event=ev.id, space_id=space.id,
                            starts=BASE + timedelta(minutes=90), ends=BASE + timedelta(hours=4))
