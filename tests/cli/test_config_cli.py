"""`pms-cli config export|apply`: the bundle of a property written to a file, its dry
run on another property showing every row to create, the apply, then nothing left to change;
a bundle that does not validate exits 2, an unknown property 1. On a database made by the
migrations (SQLite)."""

from __future__ import annotations

import json

import msgspec
import pytest

from pms.schemas import catalog as cs
from pms.services.catalog import catalog
from tests.cli.migrated import migrated_database, run_cli


@pytest.fixture
def cli_env(tmp_path):
    with migrated_database(tmp_path, "config") as (ctx, env):
        for code in ("SRC", "NEW"):
            prop = catalog.create_property(ctx, msgspec.convert(
                {"propertyCode": code, "timezone": "UTC", "currencyCode": "EUR"}, cs.PropertyIn))
            if code == "SRC":
                catalog.create_child(ctx, catalog.PACKAGE, prop.id, msgspec.convert(
                    {"code": "BRKF", "name": "Breakfast", "price": "12.00"}, cs.PackageIn))
                catalog.create_child(ctx, catalog.ROOM_TYPE, prop.id, msgspec.convert(
                    {"code": "DBL", "name": "Double"}, cs.RoomTypeIn))
                catalog.create_child(ctx, catalog.RATE_PLAN, prop.id, msgspec.convert(
                    {"code": "BB", "name": "B&B", "package_codes": ["BRKF"]}, cs.RatePlanIn))
        yield ctx, env



def test_export_dry_run_apply_then_unchanged(cli_env, tmp_path):
    ctx, env = cli_env
    path = tmp_path / "bundle.json"
    done = run_cli(env, "config", "export", "--env", str(ctx.env_id), "--property", "SRC",
                "--out", str(path), "--json")
    assert done.exit_code == 0, done.output
    summary = json.loads(done.output)
    bundle = json.loads(path.read_text())
    assert summary["content_hash"] == bundle["content_hash"] and bundle["bundle_version"] == 1
    assert [p["code"] for p in bundle["rate_plans"]] == ["BB"]

    def apply(*flags):
        result = run_cli(env, "config", "apply", str(path), "--env", str(ctx.env_id),
                      "--property", "NEW", "--json", *flags)
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    dry = apply("--dry-run")
    rows = [c for c in dry["changes"] if c["section"] != "lovs"]
    assert dry["dry_run"] is True and [c["action"] for c in rows] == ["create"] * 3
    assert apply("--dry-run") == dry  # nothing was written
    assert apply()["counts"]["create"] == 3
    again = apply("--dry-run")
    assert {c["action"] for c in again["changes"]} == {"unchanged"}
    # without --out: the bundle on stdout, the same content
    printed = run_cli(env, "config", "export", "--env", str(ctx.env_id), "--property", "NEW")
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.output)["content_hash"] == bundle["content_hash"]


def test_a_bad_bundle_exits_2_and_an_unknown_property_1(cli_env, tmp_path):
    ctx, env = cli_env
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"bundle_version": 7}))
    result = run_cli(env, "config", "apply", str(bad), "--env", str(ctx.env_id), "--property", "NEW")
    assert result.exit_code == 2 and "not a valid bundle" in result.output
    orphan = tmp_path / "orphan.json"
    orphan.write_text(json.dumps({"bundle_version": 1, "rate_plans": [
        {"code": "BB", "name": "B&B", "package_codes": ["NOPE"]}]}))
    result = run_cli(env, "config", "apply", str(orphan), "--env", str(ctx.env_id),
                  "--property", "NEW", "--dry-run")
    assert result.exit_code == 2 and "rate_plans[0].package_codes" in result.output
    result = run_cli(env, "config", "export", "--env", str(ctx.env_id), "--property", "NOPE")
    assert result.exit_code == 1


def test_an_initialized_env_exports_and_dry_runs_with_exit_0(cli_env, tmp_path):
    """An initialized env's seeded lists hold `F&B` and `mini bar`: its bundle still applies."""
    from pms.platform.ledger import EmbeddedLedger
    from pms.services.environments import initialize_environment

    ctx, env = cli_env
    initialize_environment(ctx.env_id, ledger=EmbeddedLedger())
    path = tmp_path / "bundle.json"
    done = run_cli(env, "config", "export", "--env", str(ctx.env_id), "--property", "SRC",
                   "--out", str(path), "--json")
    assert done.exit_code == 0, done.output
    assert "F&B" in json.loads(path.read_text())["lovs"]["folio-item-categories"]
    dry = run_cli(env, "config", "apply", str(path), "--env", str(ctx.env_id),
                  "--property", "NEW", "--json", "--dry-run")
    assert dry.exit_code == 0, dry.output
