"""`pms-cli calendar fill`: the upgrade path that fills the calendar rows of room types made
before they were kept ahead (summary table or --json, idempotent, exit codes)."""

from __future__ import annotations

import json
import uuid

import pytest

from pms.config import DEFAULT_CALENDAR_HORIZON_DAYS
from pms.db.uow import read_scope, unit_of_work
from pms.models.inventory import InventoryDay
from tests.cli.migrated import migrated_database, run_cli
from tests.factories import make_booking_hotel


def _days(ctx, room_type_id):
    with read_scope(ctx):
        return [d for (d,) in InventoryDay.select(InventoryDay.date).where(
            InventoryDay.room_type == room_type_id).order_by(InventoryDay.date).tuples()]


@pytest.fixture
def cli_world(tmp_path):
    # the command wires its settings' horizon: restored after
    with migrated_database(tmp_path, "calendar") as (ctx, env):
        hotel = make_booking_hotel(ctx, rooms=1)
        with unit_of_work(ctx):  # as a database made before calendars were kept ahead
            InventoryDay.delete().execute()
        yield ctx, hotel, env



def test_cli_fills_a_room_type_that_has_no_calendar_then_adds_nothing_and_widens(cli_world):
    ctx, hotel, env = cli_world
    out = run_cli(env, "calendar", "fill", "--env", str(ctx.env_id), "--all", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    (result,) = data["results"]
    assert (result["property_code"], result["room_types"], result["rows_added"]) == (
        hotel.prop.code, 1, DEFAULT_CALENDAR_HORIZON_DAYS)
    assert result["from_date"] == hotel.today.isoformat()
    assert len(_days(ctx, hotel.room_type.id)) == DEFAULT_CALENDAR_HORIZON_DAYS
    same = run_cli(env, "calendar", "fill", "--env", str(ctx.env_id), "--all", "--json")
    assert same.exit_code == 0 and json.loads(same.output)["rows_added"] == 0
    wider = run_cli(env, "calendar", "fill", "--env", str(ctx.env_id), "--property",
                 hotel.prop.code, "--days", "600")
    assert wider.exit_code == 0, wider.output
    assert "Calendars filled" in wider.output and "50" in wider.output  # the table: 50 added
    assert len(_days(ctx, hotel.room_type.id)) == 600


def test_cli_fill_bad_input_exits_non_zero(cli_world):
    ctx, hotel, env = cli_world
    env_opt = ("--env", str(ctx.env_id))
    assert run_cli(env, "calendar", "fill", *env_opt).exit_code == 2  # neither --property nor --all
    assert run_cli(env, "calendar", "fill", *env_opt, "--all", "--property", "X").exit_code == 2
    assert run_cli(env, "calendar", "fill", *env_opt, "--all", "--days", "0").exit_code == 2
    assert run_cli(env, "calendar", "fill", "--env", "nope", "--all").exit_code == 2
    assert run_cli(env, "calendar", "fill", *env_opt, "--property", "NOPE").exit_code == 1
    assert run_cli(env, "calendar", "fill", "--env", str(uuid.uuid4()), "--all").exit_code == 1
    assert _days(ctx, hotel.room_type.id) == []  # nothing was filled
    assert "--days" in run_cli(env, "calendar", "fill", "--help").output
