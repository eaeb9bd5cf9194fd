"""`pms-cli calendar fill`: the upgrade path that fills the calendar rows of room types made
before they were kept ahead (summary table or --json, idempotent, exit codes)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from cli.main import app as cli_app
from pms import wiring
from pms.config import DEFAULT_CALENDAR_HORIZON_DAYS
from pms.context import Ctx
from pms.db.database import db, make_database
from pms.db.migrator import migrate
from pms.db.uow import read_scope, unit_of_work
from pms.devkeys import all_scopes
from pms.models.inventory import InventoryDay
from tests.factories import make_booking_hotel


def _days(ctx, room_type_id):
    with read_scope(ctx):
        return [d for (d,) in InventoryDay.select(InventoryDay.date).where(
            InventoryDay.room_type == room_type_id).order_by(InventoryDay.date).tuples()]


@pytest.fixture
def cli_world(tmp_path):
    url = f"sqlite:///{tmp_path}/calendar.db"
    migrate(url)
    previous = db.obj
    db.initialize(make_database(url))
    ctx = Ctx(env_id=uuid.uuid4(), sub="t", client_kind="user", scopes=frozenset(all_scopes()),
              now=datetime.now(UTC))
    with wiring.installed():  # the command wires its settings' horizon: restored after
        hotel = make_booking_hotel(ctx, rooms=1)
        with unit_of_work(ctx):  # as a database made before calendars were kept ahead
            InventoryDay.delete().execute()
        yield ctx, hotel, {"PMS_DATABASE_URL": url, "PMS_MIGRATION_DATABASE_URL": url}
    if not db.is_closed():
        db.close()
    db.initialize(previous)


def _cli(env, *args):
    return CliRunner().invoke(cli_app, list(args), env=env)


def test_cli_fills_a_room_type_that_has_no_calendar_then_adds_nothing_and_widens(cli_world):
    ctx, hotel, env = cli_world
    out = _cli(env, "calendar", "fill", "--env", str(ctx.env_id), "--all", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    (result,) = data["results"]
    assert (result["property_code"], result["room_types"], result["rows_added"]) == (
        hotel.prop.code, 1, DEFAULT_CALENDAR_HORIZON_DAYS)
    assert result["from_date"] == hotel.today.isoformat()
    assert len(_days(ctx, hotel.room_type.id)) == DEFAULT_CALENDAR_HORIZON_DAYS
    same = _cli(env, "calendar", "fill", "--env", str(ctx.env_id), "--all", "--json")
    assert same.exit_code == 0 and json.loads(same.output)["rows_added"] == 0
    wider = _cli(env, "calendar", "fill", "--env", str(ctx.env_id), "--property",
                 hotel.prop.code, "--days", "600")
    assert wider.exit_code == 0, wider.output
    assert "Calendars filled" in wider.output and "50" in wider.output  # the table: 50 added
    assert len(_days(ctx, hotel.room_type.id)) == 600


def test_cli_fill_bad_input_exits_non_zero(cli_world):
    ctx, hotel, env = cli_world
    env_opt = ("--env", str(ctx.env_id))
    assert _cli(env, "calendar", "fill", *env_opt).exit_code == 2  # neither --property nor --all
    assert _cli(env, "calendar", "fill", *env_opt, "--all", "--property", "X").exit_code == 2
    assert _cli(env, "calendar", "fill", *env_opt, "--all", "--days", "0").exit_code == 2
    assert _cli(env, "calendar", "fill", "--env", "nope", "--all").exit_code == 2
    assert _cli(env, "calendar", "fill", *env_opt, "--property", "NOPE").exit_code == 1
    assert _cli(env, "calendar", "fill", "--env", str(uuid.uuid4()), "--all").exit_code == 1
    assert _days(ctx, hotel.room_type.id) == []  # nothing was filled
    assert "--days" in _cli(env, "calendar", "fill", "--help").output
