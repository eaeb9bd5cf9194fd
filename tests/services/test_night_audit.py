"""The night audit: no-shows, room/tax/package charges exactly once per stay and night (checked by
SQL, also after a forced crash and a re-run), rooms dirty, business date rolled, the day's
figures, a second run answering with the first's result, and a dry run that writes nothing."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import msgspec
import pytest

from pms.db.database import db
from pms.db.uow import read_scope
from pms.models import FolioCharge, Property, Reservation, Room
from pms.models.end_of_day import NightAuditRun, NightAuditStep
from pms.schemas.cashiering import TransactionCodeIn
from pms.services.cashiering.transaction_codes import TRANSACTION_CODE
from pms.services.catalog import catalog
from pms.services.night_audit.end_of_day import Hooks, SimulatedCrash, run_night_audit
from tests.factories import make_booking_hotel, make_checked_in, make_reservation
from tests.helpers import EOD_OVERRIDE, counts


def room_code(ctx, property_id, *, rate="7", inclusive=True):
    body = {"code": "ROOM", "name": "Lodging", "category": "room", "ledger_account": "room_revenue",
            "tax_rules": [{"code": "VAT", "kind": "percentage", "rate": rate,
                           "inclusive": inclusive, "name": "VAT"}]}
    return catalog.create_child(ctx, TRANSACTION_CODE, property_id,
                                msgspec.convert(body, TransactionCodeIn))


@pytest.fixture
def hotel(ctx, database):
    hotel = make_booking_hotel(ctx, rooms=4)
    room_code(ctx, hotel.id)
    return hotel


def room_charges_per_night(ctx, property_id):
    """SQL: number of room charges per (reservation, night) of the property."""
    with read_scope(ctx):
        rows = db.execute_sql(
            "SELECT c.reservation_id, c.night, COUNT(*) FROM folio_charge c "
            "JOIN reservation r ON r.id = c.reservation_id "
            "WHERE c.env_id = %s AND r.property_id = %s AND c.kind = 'room' "
            "GROUP BY c.reservation_id, c.night".replace("%s", _ph()),
            (_param(ctx.env_id), _param(property_id))).fetchall()
    return rows


def _ph():
    from pms.db.database import is_postgres

    return "%s" if is_postgres() else "?"


def _param(value):
    from pms.db.database import is_postgres

    return value if is_postgres() else value.hex


def no_hooks():
    return Hooks()


def test_night_audit_posts_charges_no_shows_rolls_date_and_keeps_figures(ctx, hotel):
    # Given two stays in house and one arrival that never came
    a = make_checked_in(ctx, hotel)
    b = make_checked_in(ctx, hotel)
    late = make_reservation(ctx, hotel)
    day = hotel.today
    # When
    result = run_night_audit(ctx, hotel.id, hooks=no_hooks(), override_reason=EOD_OVERRIDE)
    # Then
    assert result.status == "DONE" and result.business_date == day
    assert [s.name for s in result.steps] == ["no_shows", "room_charges", "housekeeping",
                                              "figures", "block_cut_offs", "roll_date"]
    assert {s.name: s.count for s in result.steps}["room_charges"] == 2
    rows = room_charges_per_night(ctx, hotel.id)
    assert sorted(r[2] for r in rows) == [1, 1]
    with read_scope(ctx):
        assert Reservation.get_by_id(late.id).status == "NO_SHOW"
        assert Property.get_by_id(hotel.id).business_date == day + timedelta(days=1)
        lines = list(FolioCharge.select().where(FolioCharge.reservation == a.id))
        room = next(c for c in lines if c.kind == "room")
        tax = next(c for c in lines if c.kind == "tax")
        assert (room.amount, tax.amount) == (Decimal("93.46"), Decimal("6.54"))
        assert tax.parent_id == room.id and tax.category == "tax"
        dirty = {r.hk_status for r in Room.select().where(Room.id.in_([a.room_id, b.room_id]))}
        assert dirty == {"DIRTY"}
    figures = result.figures
    assert figures["rooms_sold"] == 2 and figures["rooms_total"] == 4
    assert figures["occupancy_percent"] == "50.00" and figures["no_shows"] == 1
    assert figures["revenue_by_category"] == {"room": "186.92", "tax": "13.08"}
    assert figures["adr"] == "93.46" and figures["revpar"] == "46.73"


def test_second_run_for_the_same_date_answers_with_the_first(ctx, hotel):
    make_checked_in(ctx, hotel)
    first = run_night_audit(ctx, hotel.id, hooks=no_hooks(), override_reason=EOD_OVERRIDE)
    before = counts(ctx)
    again = run_night_audit(ctx, hotel.id, business_date=first.business_date, hooks=no_hooks(), override_reason=EOD_OVERRIDE)
    assert again.id == first.id and again.status == "DONE"
    assert counts(ctx) == before  # no outbox or audit rows for the answer
    assert len(room_charges_per_night(ctx, hotel.id)) == 1


def test_crash_mid_audit_then_rerun_posts_every_charge_exactly_once(ctx, hotel):
    stays = [make_checked_in(ctx, hotel) for _ in range(3)]
    with pytest.raises(SimulatedCrash):
        run_night_audit(ctx, hotel.id, hooks=Hooks(crash_in="room_charges"), override_reason=EOD_OVERRIDE)
    assert room_charges_per_night(ctx, hotel.id) == []  # the step rolled back whole
    with read_scope(ctx):
        run = NightAuditRun.get()
        assert run.status == "RUNNING"
        assert [s.name for s in NightAuditStep.select()] == ["no_shows"]
    # a crash after the charges committed, in a later step
    with pytest.raises(SimulatedCrash):
        run_night_audit(ctx, hotel.id, hooks=Hooks(crash_in="figures"), override_reason=EOD_OVERRIDE)
    assert len(room_charges_per_night(ctx, hotel.id)) == 3
    result = run_night_audit(ctx, hotel.id, hooks=no_hooks(), override_reason=EOD_OVERRIDE)
    assert result.status == "DONE" and result.attempts == 3
    rows = room_charges_per_night(ctx, hotel.id)
    assert len(rows) == len(stays) and all(r[2] == 1 for r in rows)


def test_next_night_posts_the_next_night_once(ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    run_night_audit(ctx, hotel.id, hooks=no_hooks(), override_reason=EOD_OVERRIDE)
    second = run_night_audit(ctx, hotel.id, hooks=no_hooks(), override_reason=EOD_OVERRIDE)
    assert second.business_date == hotel.today + timedelta(days=1)
    rows = room_charges_per_night(ctx, hotel.id)
    assert len(rows) == 2 and all(r[2] == 1 for r in rows)
    assert {str(r[0]).replace("-", "") for r in rows} == {stay.id.hex}


def test_dry_run_shows_the_plan_and_writes_nothing(ctx, hotel):
    make_checked_in(ctx, hotel)
    make_reservation(ctx, hotel)
    before = counts(ctx)
    preview = run_night_audit(ctx, hotel.id, dry_run=True, hooks=no_hooks())
    assert preview.dry_run and preview.status == "PREVIEW" and preview.id is None
    plan = {s.name: s.count for s in preview.steps}
    assert plan["no_shows"] == 1 and plan["room_charges"] == 1
    assert counts(ctx) == before
    assert room_charges_per_night(ctx, hotel.id) == []
    with read_scope(ctx):
        assert NightAuditRun.select().count() == 0


def test_packages_and_housekeeping_fan_out_are_called(ctx, database):
    from pms.services.catalog.catalog import RATE_PLAN
    from tests.factories import make_package

    hotel = make_booking_hotel(ctx, rooms=2)
    pkg = make_package(ctx, hotel.id, price="15.00", calculation="PER_PERSON_PER_NIGHT",
                       category="F&B")
    from pms.schemas.catalog import RatePlanPatch

    catalog.update_child(ctx, RATE_PLAN, hotel.id, hotel.rate_plan.id,
                         msgspec.convert({"package_codes": [pkg.code]}, RatePlanPatch))
    make_checked_in(ctx, hotel, adults=2)
    called = []
    result = run_night_audit(ctx, hotel.id, hooks=Hooks(
        fan_out=lambda env, prop, day: called.append((env, prop, day)) or 1), override_reason=EOD_OVERRIDE)
    assert called == [(ctx.env_id, hotel.id, result.business_date)]
    assert result.figures["revenue_by_category"]["F&B"] == "30.00"


def test_check_out_posts_missing_nights_with_the_same_tax_lines_and_a_ledger_posting(ctx, hotel):
    from pms.errors import FolioNotClosable
    from pms.models.cashiering import LedgerPosting
    from pms.services.cashiering.folios import post_room_charges
    from pms.services.frontdesk import checkout

    stay = make_checked_in(ctx, hotel)
    with pytest.raises(FolioNotClosable) as refused:
        checkout.check_out(ctx, hotel.id, stay.id)
    assert refused.value.extra["balance"] == "100.00"  # the night, taxes included in the gross
    from pms.db.uow import unit_of_work

    with unit_of_work(ctx):
        rows = post_room_charges(Reservation.get_by_id(stay.id), hotel.today,
                                 business_date=hotel.today)
    assert [r.amount for r in rows] == [Decimal("93.46")]
    with read_scope(ctx):
        tax = FolioCharge.get((FolioCharge.kind == "tax") & (FolioCharge.parent_id == rows[0].id))
        assert tax.amount == Decimal("6.54")
        posting = LedgerPosting.get()
        assert posting.status == "PENDING" and {ln["account"] for ln in posting.lines} == {
            "guest_ledger", "room_revenue", "tax_payable"}


def test_night_audit_reports_guests_in_house_past_departure(ctx, hotel, caplog):
    # Given a guest who should have left on the business date and is still checked in
    stay = make_checked_in(ctx, hotel, departure_date=(hotel.today + timedelta(days=1)).isoformat())
    departure = hotel.today + timedelta(days=1)
    run_night_audit(ctx, hotel.id, business_date=hotel.today, override_reason=EOD_OVERRIDE)
    # When the audit of the departure date runs
    with caplog.at_level("WARNING", logger="pms.night_audit"):
        result = run_night_audit(ctx, hotel.id, business_date=departure, override_reason=EOD_OVERRIDE)
    # Then the date rolls (an overstay does not block) but the guest is reported, not hidden
    assert result.status == "DONE" and result.next_business_date == departure + timedelta(days=1)
    (late,) = result.figures["overstays"]
    assert late["reservation_id"] == str(stay.id) and late["departure_date"] == str(departure)
    roll = next(s for s in result.steps if s.name == "roll_date")
    assert roll.detail["overstays"] == [late]
    assert any("past departure" in r.getMessage() for r in caplog.records)


def test_night_audit_retries_a_locked_database_then_finishes(ctx, hotel):
    import peewee

    make_checked_in(ctx, hotel)
    locked = [peewee.OperationalError("database is locked") for _ in range(2)]
    result = run_night_audit(ctx, hotel.id, hooks=Hooks(fail_in={"room_charges": locked}), override_reason=EOD_OVERRIDE)
    assert result.status == "DONE" and locked == []
    assert all(n == 1 for *_, n in room_charges_per_night(ctx, hotel.id))


def test_a_crashed_night_audit_run_is_marked_failed_and_re_runnable(ctx, hotel):
    make_checked_in(ctx, hotel)
    # Given a step that keeps failing (a lock that outlasts every retry, or a bug)
    failing = [RuntimeError("boom") for _ in range(2)]
    failed = run_night_audit(ctx, hotel.id, hooks=Hooks(fail_in={"housekeeping": failing}), override_reason=EOD_OVERRIDE)
    # Then the run is FAILED with the error, not left RUNNING forever
    assert failed.status == "FAILED" and failed.error.startswith("internal_error: ")
    assert "boom" not in failed.error  # the exception's text goes to the log only
    with read_scope(ctx):
        assert NightAuditRun.get_by_id(failed.id).status == "FAILED"
    # And a re-run (also through the run id a job holds) resumes and finishes it
    again = run_night_audit(ctx, hotel.id, run_id=failed.id, business_date=failed.business_date, override_reason=EOD_OVERRIDE)
    assert again.status == "DONE" and again.id == failed.id
    assert [s.name for s in again.steps] == ["no_shows", "room_charges", "housekeeping",
                                             "figures", "block_cut_offs", "roll_date"]
