"""`pms-cli end-of-day`: summary table or --json, dry run, safe re-run, exit codes; and
`pms-cli cashiering reconcile`."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from cli.main import app
from pms.context import Ctx
from pms.db.database import db, make_database
from pms.db.migrator import migrate
from pms.devkeys import all_scopes
from tests.factories import make_booking_hotel, make_checked_in, make_reservation
from tests.helpers import EOD_OVERRIDE


@pytest.fixture
def world(tmp_path):
    url = f"sqlite:///{tmp_path}/eod.db"
    migrate(url)
    db.initialize(make_database(url))
    ctx = Ctx(env_id=uuid.uuid4(), sub="t", client_kind="user", scopes=frozenset(all_scopes()),
              now=datetime.now(UTC))
    hotel = make_booking_hotel(ctx, rooms=3)
    make_checked_in(ctx, hotel)
    make_reservation(ctx, hotel)
    env = {"PMS_DATABASE_URL": url, "PMS_MIGRATION_DATABASE_URL": url}
    yield ctx, hotel, env
    if not db.is_closed():
        db.close()


def invoke(env, *args):
    return CliRunner().invoke(app, list(args), env=env)


def test_end_of_day_json_then_safe_rerun(world):
    ctx, hotel, env = world
    first = invoke(env, "end-of-day", "--env", str(ctx.env_id), "--all", "--json",
                   "--override-reason", EOD_OVERRIDE)
    assert first.exit_code == 0, first.output
    data = json.loads(first.output)
    (result,) = data["results"]
    assert data["failed"] == 0 and result["status"] == "DONE"
    assert result["property_code"] == hotel.prop.code
    assert {s["name"]: s["count"] for s in result["steps"]} == {
        "no_shows": 1, "room_charges": 1, "housekeeping": 1, "figures": 1, "block_cut_offs": 0,
        "roll_date": 1}
    again = invoke(env, "end-of-day", "--env", str(ctx.env_id), "--property", hotel.prop.code,
                   "--business-date", result["business_date"], "--json")
    assert again.exit_code == 0
    assert json.loads(again.output)["results"][0]["id"] == result["id"]


def test_end_of_day_table_with_progress_and_dry_run(world):
    ctx, hotel, env = world
    out = invoke(env, "end-of-day", "--env", str(ctx.env_id), "--all", "--dry-run")
    assert out.exit_code == 0, out.output
    assert "Night audit" in out.output and "PREV" in out.output  # the table may wrap
    assert "room_charges" in out.output  # the per-step progress lines
    real = invoke(env, "end-of-day", "--env", str(ctx.env_id), "--all",
                  "--override-reason", EOD_OVERRIDE)
    assert real.exit_code == 0 and "DONE" in real.output


def test_end_of_day_refuses_a_date_not_over_and_says_why(world):
    from pms.db.uow import read_scope
    from pms.models.end_of_day import NightAuditRun
    from pms.models.platform import AuditEntry

    ctx, hotel, env = world
    out = invoke(env, "end-of-day", "--env", str(ctx.env_id), "--all", "--json")
    assert out.exit_code == 1, out.output
    (result,) = json.loads(out.output)["results"]
    assert result["status"] == "REFUSED" and result["code"] == "business_date_not_over"
    assert "not over" in result["error"] and "--override-reason" in result["error"]
    table = invoke(env, "end-of-day", "--env", str(ctx.env_id), "--all")
    assert table.exit_code == 1 and "REFU" in table.output  # the table may wrap
    assert invoke(env, "end-of-day", "--env", str(ctx.env_id), "--all",
                  "--override-reason", " ").exit_code == 2
    db.initialize(make_database(env["PMS_DATABASE_URL"]))
    with read_scope(ctx):
        assert NightAuditRun.select().count() == 0
    done = invoke(env, "end-of-day", "--env", str(ctx.env_id), "--all", "--json",
                  "--override-reason", "the hotel closes tonight")
    assert done.exit_code == 0, done.output
    db.initialize(make_database(env["PMS_DATABASE_URL"]))
    with read_scope(ctx):
        reasons = {a.reason for a in AuditEntry.select().where(
            AuditEntry.action == "night_audit.started")}
    assert reasons == {"the hotel closes tonight"}


def test_end_of_day_bad_input_exits_non_zero(world):
    ctx, hotel, env = world
    assert invoke(env, "end-of-day", "--env", "nope", "--all").exit_code == 2
    assert invoke(env, "end-of-day", "--env", str(ctx.env_id), "--all", "--business-date",
                  "2026-99-01").exit_code == 2
    assert invoke(env, "end-of-day", "--env", str(ctx.env_id), "--property", "NOPE").exit_code == 1
    assert invoke(env, "end-of-day", "--env", str(uuid.uuid4()), "--all").exit_code == 1


def test_end_of_day_requires_property_or_all_and_runs_nothing_without(world):
    from pms.db.uow import read_scope
    from pms.models.end_of_day import NightAuditRun

    ctx, hotel, env = world
    out = invoke(env, "end-of-day", "--env", str(ctx.env_id))
    assert out.exit_code == 2
    assert "--property" in out.output and "--all" in out.output and "Traceback" not in out.output
    db.initialize(make_database(env["PMS_DATABASE_URL"]))
    with read_scope(ctx):
        assert NightAuditRun.select().count() == 0


def test_cashiering_reconcile_json(world):
    ctx, hotel, env = world
    out = invoke(env, "cashiering", "reconcile", "--env", str(ctx.env_id), "--json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == {"captured": 0, "authorized": 0, "failed": 0, "pending": 0,
                                      "ledger_posted": 0}
