"""a random history of bookings, cancels, out-of-order periods, room blocks (held DEFINITE,
picked up, cancelled with their pick-ups), rooms created and deleted, sell-limit, rate-plan
allotment (some holding rooms until a release period), restriction (stop-sell, closed to
arrival), rate and package-price writes (and the
same from parallel writers), relayed from the real outbox rows to the real RabbitMQ, applied by
a consumer in aggregateversion order: its projection equals the search night by night, its
allotment map each night equals the plan's rooms left, and the price it holds for each night and
occupancy (the night's `prices` plus the plan's `per_stay`) is the search's total for that many
guests (PostgreSQL)."""

from __future__ import annotations

import random
import threading
from datetime import timedelta

import msgspec
import pytest

from pms.db.database import db
from pms.db.locking import LockTimeout
from pms.errors import (
    AllotmentExhausted,
    MaintenanceConflict,
    PmsError,
    RoomTypeUnavailable,
    ValidationFailed,
)
from pms.schemas import catalog as catalog_schemas
from pms.schemas.availability import AvailabilityIn
from pms.schemas.inventory import AllotmentIn, AllotmentQuery, MaintenanceIn, SellLimitIn
from pms.schemas.rates import RatesIn, RestrictionIn
from pms.schemas.room_blocks import BlockIn, PickupIn
from pms.services.catalog import catalog
from pms.services.distribution.ari_events import ARI_UPDATED
from pms.services.groups import block_changes, pickups, room_blocks
from pms.services.housekeeping import maintenance
from pms.services.inventory import allotments, availability, inventory
from pms.services.rates import rates
from pms.services.reservations import reservations
from tests.factories import (
    load_rates,
    make_booking_hotel,
    make_package,
    make_reservation,
    make_room,
    make_room_type,
    reservation_body,
)
from tests.services.test_ari_events import Projection
from workers.publisher import AmqpEventPublisher
from workers.relay import OutboxRelay

pytestmark = [pytest.mark.rabbitmq, pytest.mark.parametrize(
    "backend", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)]

WINDOW = 10


def two_type_hotel(ctx):
    hotel = make_booking_hotel(ctx, rooms=3)
    second = make_room_type(ctx, hotel.id, max_occupancy=2)
    rooms = [make_room(ctx, hotel.id, second.id, room_number=f"2{i:02d}") for i in range(2)]
    load_rates(ctx, hotel.id, hotel.rate_plan.id, second.id, amount="80.00")
    types = {hotel.room_type.id: hotel.rooms, second.id: rooms}
    # a per-guest supplement and a per-stay package: prices differ by occupancy
    hotel.packages = [make_package(ctx, hotel.id, code=code, price=price, calculation=calc)
                      for code, price, calc in (("BKF", "12.00", "PER_PERSON_PER_NIGHT"),
                                                ("WELCOME", "20.00", "PER_STAY"))]
    catalog.update_child(ctx, catalog.RATE_PLAN, hotel.id, hotel.rate_plan.id, msgspec.convert(
        {"package_codes": ["BKF", "WELCOME"]}, catalog_schemas.RatePlanPatch))
    return hotel, types


def relayed(ctx, bus, queue):
    """Publish every pending outbox row through the relay to RabbitMQ; the ARI events read
    back from the queue."""
    pub = AmqpEventPublisher(bus.url, bus.exchange)
    try:
        for _ in range(50):
            if not OutboxRelay(pub, env_id=ctx.env_id, batch_size=200).run_once().published:
                break
    finally:
        pub.close()
    return [e for _, e in bus.drain(queue) if e["type"] == ARI_UPDATED]


closed_seen: set[tuple[str, bool]] = set()  # the restriction flags the comparison met


def assert_projection_is_the_search(ctx, hotel, types, projection):
    priced = 0
    for i in range(WINDOW):
        day = hotel.today + timedelta(days=i)
        for guests in (1, 2):
            out = availability.search_property(ctx, hotel.id, msgspec.convert(
                {"arrival_date": day.isoformat(),
                 "departure_date": str(day + timedelta(days=1)), "adults": guests},
                AvailabilityIn))
            for rt in out.room_types:
                assert rt.room_type_id in types
                held = projection.sellable.get((str(rt.room_type_id), day.isoformat()))
                assert held == rt.available, (day, rt.code)
                for offer in rt.offers:  # the price per occupancy, sold out or not
                    total = projection.stay_total(rt.room_type_id, offer.rate_plan_id, [day],
                                                  guests)
                    assert total == offer.total, (day, rt.code, guests, offer.reasons)
                    priced += 1
                    # the stop-sell and closed-to-arrival the channel holds are the search's
                    rule = projection.restrictions.get(
                        (str(rt.room_type_id), day.isoformat()), {}).get(
                        str(offer.rate_plan_id), {})
                    codes = {r.code for r in offer.reasons}
                    for flag in ("closed", "closed_to_arrival"):
                        assert bool(rule.get(flag)) == (flag in codes), (day, rt.code, flag)
                        closed_seen.add((flag, bool(rule.get(flag))))
    assert priced
    last = hotel.today + timedelta(days=WINDOW - 1)
    left = allotments.list_allotments(ctx, hotel.id, hotel.rate_plan.id, msgspec.convert(
        {"from_date": str(hotel.today), "to_date": str(last)}, AllotmentQuery)).data
    plan = str(hotel.rate_plan.id)
    expected = {(str(n.room_type_id), n.date.isoformat()): {plan: n.left} for n in left}
    for rt in types:
        for i in range(WINDOW):
            key = (str(rt), (hotel.today + timedelta(days=i)).isoformat())
            # a night never told of an allotment, or told an empty map, has none
            assert projection.allotments.get(key, {}) == expected.get(key, {}), key
    return expected


def block_or_room_change(ctx, hotel, types, rng, kind, rt, start, blocks, periods):
    """A room block's life (made DEFINITE, so it holds its rooms; a guest picked up; cancelled
    with its pick-ups), a room created or deleted, or a restriction (a stop-sell or closed to
    arrival, or the range opened) while the rest of the history runs."""
    if kind == "restrict":
        rates.set_restrictions(ctx, hotel.id, hotel.rate_plan.id, msgspec.convert(
            {"from_date": start.isoformat(),
             "to_date": str(start + timedelta(days=rng.randint(0, 3))),
             "room_type_id": rng.choice([str(rt), None]),
             "closed": rng.random() < 0.5, "closed_to_arrival": rng.random() < 0.3},
            RestrictionIn))
    elif kind == "block":
        block = room_blocks.create_block(ctx, hotel.id, msgspec.convert(
            {"code": f"G{rng.randrange(10 ** 8)}", "name": "Group", "arrival_date": str(start),
             "departure_date": str(start + timedelta(days=2)),
             "rate_plan_id": str(hotel.rate_plan.id),
             "allocation": [{"room_type_id": str(rt), "date": str(start),
                             "to_date": str(start + timedelta(days=1)),
                             "allotted": rng.randint(1, 2)}]}, BlockIn))
        blocks.append((block.id, rt, start))
        block_changes.transition(ctx, hotel.id, block.id, "definite")
    elif kind == "pick" and blocks:
        block_id, block_rt, arrival = rng.choice(blocks)
        pickups.pick_up(ctx, hotel.id, block_id, msgspec.convert(reservation_body(
            hotel, room_type_id=str(block_rt), arrival_date=str(arrival),
            departure_date=str(arrival + timedelta(days=rng.randint(1, 2)))), PickupIn))
    elif kind == "end_block" and blocks:
        block_id, _, _ = blocks.pop(rng.randrange(len(blocks)))
        block_changes.transition(ctx, hotel.id, block_id, "cancel", cancel_picked=True)
    elif kind == "add_room":
        types[rt].append(make_room(ctx, hotel.id, rt))
    elif kind == "drop_room" and len(types[rt]) > 1:
        room = rng.choice(types[rt])
        catalog.delete_child(ctx, catalog.ROOM, hotel.id, room.id)
        types[rt].remove(room)
        periods[:] = [p for p in periods if p.room_id != room.id]  # gone with their room


OTHER_KINDS = {"restrict", "block", "pick", "end_block", "add_room", "drop_room"}
blocks_and_rooms_done: list[str] = []  # the block, room and restriction changes applied


def random_change(ctx, hotel, types, rng, live, periods, blocks=None):
    rt = rng.choice(list(types))
    start = hotel.today + timedelta(days=rng.randrange(WINDOW - 1))
    kind = rng.choice(["book", "book", "book", "cancel", "ooo", "end_ooo", "limit", "allot",
                       "rate", "package", "restrict", "block", "pick", "end_block",
                       "add_room", "drop_room"])
    if kind in OTHER_KINDS:
        try:
            block_or_room_change(ctx, hotel, types, rng, kind, rt, start,
                                 [] if blocks is None else blocks, periods)
        except PmsError:  # refused (no room for the block, a room still in use): no change
            return
        if blocks is not None:
            blocks_and_rooms_done.append(kind)
        return
    try:
        if kind == "book":
            row = make_reservation(ctx, hotel, room_type_id=str(rt),
                                   arrival_date=start.isoformat(),
                                   departure_date=str(start + timedelta(days=rng.randint(1, 3))))
            live.append(row)
        elif kind == "cancel" and live:
            row = live.pop(rng.randrange(len(live)))
            reservations.cancel_reservation(ctx, hotel.id, row.id)
        elif kind == "ooo":
            room = rng.choice(types[rt])
            made, _ = maintenance.create_maintenance(ctx, hotel.id, msgspec.convert(
                {"room_id": str(room.id), "kind": rng.choice(["OUT_OF_ORDER", "OUT_OF_SERVICE"]),
                 "from_date": start.isoformat(),
                 "to_date": str(start + timedelta(days=rng.randint(0, 2)))}, MaintenanceIn))
            periods.append(made)
        elif kind == "end_ooo" and periods:
            made = periods.pop(rng.randrange(len(periods)))
            maintenance.end_maintenance(ctx, hotel.id, made.id)
        elif kind == "limit":
            inventory.set_sell_limits(ctx, hotel.id, msgspec.convert(
                {"room_type_id": str(rt), "from_date": start.isoformat(),
                 "to_date": str(start + timedelta(days=rng.randint(0, 3))),
                 "sell_limit": rng.choice([None, 0, 1, 2])}, SellLimitIn))
        elif kind == "allot":
            allotments.set_allotments(ctx, hotel.id, hotel.rate_plan.id, msgspec.convert(
                {"room_type_id": str(rt), "from_date": start.isoformat(),
                 "to_date": str(start + timedelta(days=rng.randint(0, 3))),
                 "allotment": rng.choice([None, 0, 1, 2]),
                 # some allotments hold their plan's rooms until their release (the house's
                 # sellable in the events and the search leaves them out)
                 "release_days": rng.choice([None, None, 1, 5])}, AllotmentIn))
        elif kind == "rate":
            rates.set_rates(ctx, hotel.id, hotel.rate_plan.id, msgspec.convert(
                {"rates": [{"room_type_id": str(rt), "from_date": start.isoformat(),
                            "to_date": str(start + timedelta(days=rng.randint(0, 3))),
                            "amount": f"{rng.randint(60, 140)}.{rng.choice(['00', '50'])}"}]},
                RatesIn))
        elif kind == "package":
            package = rng.choice(hotel.packages)
            catalog.update_child(ctx, catalog.PACKAGE, hotel.id, package.id, msgspec.convert(
                {"price": f"{rng.randint(5, 30)}.00"}, catalog_schemas.PackagePatch))
    except (RoomTypeUnavailable, AllotmentExhausted, MaintenanceConflict, LockTimeout):
        pass
    except ValidationFailed as exc:  # a booking the restrictions refuse; nothing else
        if exc.code != "stay_not_bookable":
            raise


def test_a_random_history_replayed_from_the_bus_is_the_search_night_by_night(ctx, database,
                                                                              bus):
    queue = bus.queue("#")
    hotel, types = two_type_hotel(ctx)
    rng = random.Random(35)
    live, periods, blocks = [], [], []
    blocks_and_rooms_done.clear()
    for _ in range(60):
        random_change(ctx, hotel, types, rng, live, periods, blocks)
    # the history held, picked up and cancelled blocks, created and deleted rooms, restricted
    assert set(blocks_and_rooms_done) == OTHER_KINDS, blocks_and_rooms_done
    events = relayed(ctx, bus, queue)
    assert events
    projection = Projection()
    projection.apply(list(reversed(events)))  # (order of arrival does not matter)
    closed_seen.clear()
    assert assert_projection_is_the_search(ctx, hotel, types, projection)  # allotments too
    # restrictions too: nights closed and open, closed to arrival and not, were compared
    assert closed_seen == {(f, v) for f in ("closed", "closed_to_arrival") for v in (True, False)}


def test_parallel_writers_replayed_from_the_bus_are_the_search_night_by_night(ctx, database,
                                                                              bus):
    """Four writers at once on the same nights: the versions follow the commits, so the last
    version of each night is its last committed state."""
    queue = bus.queue("#")
    hotel, types = two_type_hotel(ctx)
    errors: list[BaseException] = []

    def writer(seed):
        rng = random.Random(seed)
        live, periods, blocks = [], [], []
        try:
            for _ in range(12):  # each writer holds blocks and picks guests up into them
                random_change(ctx, hotel, types, rng, live, periods, blocks)
        except PmsError:
            pass
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            db.close()  # this thread's pooled connection goes back

    threads = [threading.Thread(target=writer, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert_claim_order_is_version_order(ctx)
    events = relayed(ctx, bus, queue)
    projection = Projection()
    projection.apply(events)
    assert_projection_is_the_search(ctx, hotel, types, projection)


def assert_claim_order_is_version_order(ctx):
    """The relay claims by (created_at, id) and holds a later version back while an earlier one
    of its aggregate is unpublished: an ARI row built before a concurrent writer's but committed
    after it must not sort first (its created_at is taken after the stream's lock)."""
    from pms.db.uow import read_scope
    from pms.models import OutboxEvent

    with read_scope(ctx):
        rows = list(OutboxEvent.select(OutboxEvent.subject, OutboxEvent.aggregate_version)
                    .where(OutboxEvent.type == ARI_UPDATED)
                    .order_by(OutboxEvent.created_at, OutboxEvent.id).tuples())
    by_subject: dict[str, list[int]] = {}
    for subject, version in rows:
        by_subject.setdefault(subject, []).append(version)
    assert by_subject and all(v == sorted(v) for v in by_subject.values()), by_subject


@pytest.fixture
def hooks():
    from pms.services.distribution.ari_events import TEST_HOOKS

    yield TEST_HOOKS
    TEST_HOOKS.pause_after_read = None
    TEST_HOOKS.read_before_lock = False


def _push_racing_a_booking(ctx, hotel, hooks, *, expect_wait: bool = True):
    """A re-push of this month pauses after reading its nights; meanwhile a booking of one of
    them tries to commit. Returns (whether the booking waited for the push, the events)."""
    from pms.services.distribution import ari_push

    read, go = threading.Event(), threading.Event()

    def pause():
        if threading.current_thread().name == "push":
            read.set()
            go.wait(30)

    hooks.pause_after_read = pause
    errors = []

    def push():
        try:
            ari_push.run_push(ctx, hotel.id, [hotel.today.strftime("%Y-%m")])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            db.close()

    def book():
        try:
            make_reservation(ctx, hotel, departure_date=str(hotel.today + timedelta(days=1)))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            db.close()

    p = threading.Thread(target=push, name="push")
    p.start()
    assert read.wait(10)
    b = threading.Thread(target=book, name="book")
    b.start()
    # with the guard the booking's COMMIT waits for the push's stream lock (still there after
    # a second); without it the booking ends while the push is paused (however loaded)
    b.join(1.0 if expect_wait else 20)
    waited = b.is_alive()
    go.set()
    p.join(30)
    b.join(30)
    assert not errors, errors
    from tests.services.test_ari_events import ari_rows

    return waited, ari_rows(ctx)


def _today_in_projection(ctx, hotel, events):
    projection = Projection()
    projection.apply(events)
    key = (str(hotel.room_type.id), hotel.today.isoformat())
    body = msgspec.convert({"arrival_date": str(hotel.today),
                            "departure_date": str(hotel.today + timedelta(days=1)),
                            "adults": 1}, AvailabilityIn)
    (rt,) = availability.search_property(ctx, hotel.id, body).room_types
    return projection.sellable[key], rt.available


def test_a_push_and_a_booking_at_once_keep_the_versions_in_commit_order(ctx, database, hooks):
    hotel = make_booking_hotel(ctx, rooms=3)
    waited, events = _push_racing_a_booking(ctx, hotel, hooks)
    assert waited
    held, searched = _today_in_projection(ctx, hotel, events)
    assert held == searched == 2


def test_control_read_before_the_stream_lock_loses_the_booking(ctx, database, hooks):
    """The control: reading the nights before locking the stream lets the booking commit in
    between with a lower version; the push's stale night then wins in every projection."""
    hooks.read_before_lock = True
    hotel = make_booking_hotel(ctx, rooms=3)
    waited, events = _push_racing_a_booking(ctx, hotel, hooks, expect_wait=False)
    assert not waited
    held, searched = _today_in_projection(ctx, hotel, events)
    assert (held, searched) == (3, 2)
