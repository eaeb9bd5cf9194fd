"""`pms-cli ari push` (issue 35): a property's ARI pushed again as a job, 365 days or the months
asked, on a database made by the migrations (SQLite: the migration 035 runs here)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from cli.main import app as cli_app
from pms import wiring
from pms.context import Ctx
from pms.db.database import db, make_database
from pms.db.migrator import migrate
from pms.devkeys import all_scopes
from pms.services.jobs import get_job
from tests.factories import make_booking_hotel
from tests.services.test_ari_events import ari_rows


@pytest.fixture
def cli_world(tmp_path):
    url = f"sqlite:///{tmp_path}/ari.db"
    migrate(url)
    previous = db.obj
    db.initialize(make_database(url))
    ctx = Ctx(env_id=uuid.uuid4(), sub="t", client_kind="user", scopes=frozenset(all_scopes()),
              now=datetime.now(UTC))
    with wiring.installed():
        hotel = make_booking_hotel(ctx, rooms=1)
        yield ctx, hotel, {"PMS_DATABASE_URL": url, "PMS_MIGRATION_DATABASE_URL": url}
    if not db.is_closed():
        db.close()
    db.initialize(previous)


def _cli(env, *args):
    return CliRunner().invoke(cli_app, list(args), env=env)


def test_ari_push_of_a_property_is_a_job_of_365_days(cli_world):
    ctx, hotel, env = cli_world
    before = {e["id"] for e in ari_rows(ctx)}
    result = _cli(env, "ari", "push", "--env", str(ctx.env_id), "--property", hotel.prop.code,
                  "--json")
    assert result.exit_code == 0, result.output
    (one,) = json.loads(result.output)["results"]
    assert one["status"] == "SUCCEEDED" and one["nights"] == 365
    assert get_job(ctx, uuid.UUID(one["job_id"])).kind == "ari_push"
    pushed = [e for e in ari_rows(ctx) if e["id"] not in before]
    assert len(pushed) == one["events"] and one["events"] in (12, 13)
    assert sum(len(e["data"]["nights"]) for e in pushed) == 365


def test_ari_push_of_some_months(cli_world):
    ctx, hotel, env = cli_world
    result = _cli(env, "ari", "push", "--env", str(ctx.env_id), "--property", hotel.prop.code,
                  "--month", "2030-02", "--month", "2030-03", "--json")
    assert result.exit_code == 0, result.output
    (one,) = json.loads(result.output)["results"]
    assert one["events"] == 2 and one["nights"] == 28 + 31


def test_ari_push_needs_a_property_choice_and_good_months(cli_world):
    ctx, hotel, env = cli_world
    assert _cli(env, "ari", "push", "--env", str(ctx.env_id)).exit_code == 2
    bad = _cli(env, "ari", "push", "--env", str(ctx.env_id), "--property", hotel.prop.code,
               "--month", "2030-13")
    assert bad.exit_code == 2
    assert _cli(env, "ari", "push", "--env", str(ctx.env_id), "--property", "NOPE").exit_code == 1
