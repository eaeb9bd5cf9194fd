"""`pms-cli ari push`: a property's ARI pushed again as a job, 365 days or the months
asked, on a database made by the migrations (SQLite: the migration 035 runs here)."""

from __future__ import annotations

import json
import uuid

import pytest

from pms.services.jobs import get_job
from tests.cli.migrated import migrated_database, run_cli
from tests.factories import make_booking_hotel
from tests.services.test_ari_events import ari_rows


@pytest.fixture
def cli_world(tmp_path):
    with migrated_database(tmp_path, "ari") as (ctx, env):
        yield ctx, make_booking_hotel(ctx, rooms=1), env



def test_ari_push_of_a_property_is_a_job_of_365_days(cli_world):
    ctx, hotel, env = cli_world
    before = {e["id"] for e in ari_rows(ctx)}
    result = run_cli(env, "ari", "push", "--env", str(ctx.env_id), "--property", hotel.prop.code,
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
    result = run_cli(env, "ari", "push", "--env", str(ctx.env_id), "--property", hotel.prop.code,
                  "--month", "2030-02", "--month", "2030-03", "--json")
    assert result.exit_code == 0, result.output
    (one,) = json.loads(result.output)["results"]
    assert one["events"] == 2 and one["nights"] == 28 + 31


def test_ari_push_needs_a_property_choice_and_good_months(cli_world):
    ctx, hotel, env = cli_world
    assert run_cli(env, "ari", "push", "--env", str(ctx.env_id)).exit_code == 2
    bad = run_cli(env, "ari", "push", "--env", str(ctx.env_id), "--property", hotel.prop.code,
               "--month", "2030-13")
    assert bad.exit_code == 2
    assert run_cli(env, "ari", "push", "--env", str(ctx.env_id), "--property", "NOPE").exit_code == 1


def test_ari_digest_prints_the_apis_digest_as_json_and_as_a_table(cli_world):
    ctx, hotel, env = cli_world
    args = ("ari", "digest", "--env", str(ctx.env_id), "--property", hotel.prop.code)
    result = run_cli(env, *args, "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    from pms.services.distribution import ari_push

    assert out == json.loads(json.dumps(ari_push.digest(ctx, hotel.id, None, None)))
    assert sum(d["nights"] for d in out["data"]) == 365
    some = run_cli(env, *args, "--from", "2030-02", "--to", "2030-03", "--json")
    assert [d["month"] for d in json.loads(some.output)["data"]] == ["2030-02", "2030-03"]
    table = run_cli(env, *args)
    assert table.exit_code == 0 and out["data"][0]["hash"][:8] in table.output
    assert run_cli(env, *args, "--from", "2030-13").exit_code == 2
    assert run_cli(env, "ari", "digest", "--env", str(ctx.env_id), "--property",
                   "NOPE").exit_code == 1
