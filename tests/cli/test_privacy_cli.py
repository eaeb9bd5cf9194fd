"""`pms-cli privacy purge`: --dry-run counts and changes nothing, --json reports, a real run
erases the profiles past the rule, a re-run takes nothing again; a bad --env exits 2."""

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
from pms.db.uow import read_scope
from pms.devkeys import all_scopes
from pms.models import Profile
from tests.factories import make_booking_hotel, make_profile


@pytest.fixture
def world(tmp_path):
    url = f"sqlite:///{tmp_path}/privacy.db"
    migrate(url)
    db.initialize(make_database(url))
    ctx = Ctx(env_id=uuid.uuid4(), sub="t", client_kind="user", scopes=frozenset(all_scopes()),
              now=datetime.now(UTC))
    hotel = make_booking_hotel(ctx, rooms=1)
    guest = make_profile(ctx, hotel.id)
    env = {"PMS_DATABASE_URL": url, "PMS_MIGRATION_DATABASE_URL": url,
           "PMS_PRIVACY_PROFILE_RETENTION_DAYS": "0"}
    yield ctx, guest, env
    if not db.is_closed():
        db.close()


def invoke(env, *args):
    return CliRunner().invoke(app, list(args), env=env)


def test_purge_dry_run_then_run_then_nothing_left(world):
    ctx, guest, env = world
    dry = invoke(env, "privacy", "purge", "--env", str(ctx.env_id), "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.output)["profiles"] == 1
    with read_scope(ctx):
        assert Profile.get_by_id(guest.id).email == guest.email
    run = invoke(env, "privacy", "purge", "--env", str(ctx.env_id), "--json")
    assert run.exit_code == 0, run.output
    assert json.loads(run.output)["profiles_erased"] == 1
    with read_scope(ctx):
        assert Profile.get_by_id(guest.id).email is None
    table = invoke(env, "privacy", "purge", "--env", str(ctx.env_id))
    assert table.exit_code == 0, table.output
    assert "Retention purge" in table.output
    assert invoke(env, "privacy", "purge", "--env", "nope").exit_code == 2
