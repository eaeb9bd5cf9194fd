"""`pms-cli` through typer.testing.CliRunner: --help on every command (enumerated from the Typer
app, so new commands are covered without editing this file), `db migrate|status`, `dev
keys|token`, `demo seed` and `openapi`. Configuration goes in through the environment
(PMS_DATABASE_URL, PMS_MIGRATION_DATABASE_URL, PMS_JWKS_URL), pointing at temp paths."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
import typer.main
from typer.testing import CliRunner

from cli.main import app
from pms.db.database import db as db_proxy

runner = CliRunner()


@pytest.fixture(autouse=True)
def _unbind_database() -> Iterator[None]:
    """The CLI binds the global database handle; leave it unbound for the next test."""
    yield
    if db_proxy.obj is not None and not db_proxy.obj.is_closed():
        db_proxy.obj.close()
    db_proxy.initialize(None)


def _all_command_paths() -> list[list[str]]:
    root = typer.main.get_command(app)
    paths: list[list[str]] = []

    def walk(command: object, path: list[str]) -> None:
        paths.append(path)
        # typer vendors its own click: duck-type groups by their `commands` mapping
        children = getattr(command, "commands", None) or {}
        for name, sub in sorted(children.items()):
            walk(sub, [*path, name])

    walk(root, [])
    return paths


@pytest.fixture
def sqlite_env(tmp_path: Path) -> dict[str, str]:
    url = f"sqlite:///{tmp_path}/cli.db"
    return {"PMS_DATABASE_URL": url, "PMS_MIGRATION_DATABASE_URL": url,
            "PMS_JWKS_URL": f"file://{tmp_path}/keys/jwks.json"}


def invoke(args: list[str], env: dict[str, str]):  # noqa: ANN201
    return runner.invoke(app, args, env=env, catch_exceptions=False)


# -- help ------------------------------------------------------------------------------------------

def test_the_command_tree_has_the_contract_commands():
    paths = {" ".join(p) for p in _all_command_paths()}
    assert {"db migrate", "db status", "dev keys", "dev token", "demo seed", "serve",
            "openapi"} <= paths


@pytest.mark.parametrize("path", _all_command_paths(), ids=lambda p: " ".join(p) or "(root)")
def test_every_command_and_group_has_help(path: list[str]):
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output
    assert "--help" in result.output


@pytest.mark.parametrize("path", _all_command_paths(), ids=lambda p: " ".join(p) or "(root)")
def test_help_shows_no_python_type_after_options(path: list[str]):
    import re

    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert not re.search(r"<(str|bool|int|float|UUID|list\[\w+\])>", result.output), result.output


# -- db ----------------------------------------------------------------------------------------------

def test_db_status_exits_3_while_migrations_are_pending_then_0(sqlite_env):
    before = invoke(["db", "status", "--json"], sqlite_env)
    assert before.exit_code == 3, before.output
    state = json.loads(before.stdout)
    assert state["done"] == [] and state["pending"]
    assert all(isinstance(name, str) for name in state["pending"])

    applied = invoke(["db", "migrate", "--json"], sqlite_env)
    assert applied.exit_code == 0, applied.output
    assert json.loads(applied.stdout)["applied"] == state["pending"]

    after = invoke(["db", "status", "--json"], sqlite_env)
    assert after.exit_code == 0, after.output
    assert json.loads(after.stdout) == {"done": state["pending"], "pending": []}


def test_db_migrate_twice_applies_nothing_the_second_time(sqlite_env):
    assert invoke(["db", "migrate"], sqlite_env).exit_code == 0
    again = invoke(["db", "migrate", "--json"], sqlite_env)
    assert again.exit_code == 0
    assert json.loads(again.stdout) == {"applied": []}
    table = invoke(["db", "status"], sqlite_env)
    assert table.exit_code == 0 and "applied" in table.stdout


def test_db_commands_fail_non_zero_on_an_unusable_database_url(sqlite_env):
    env = {**sqlite_env, "PMS_DATABASE_URL": "mysql://nowhere/db",
           "PMS_MIGRATION_DATABASE_URL": "mysql://nowhere/db"}
    for args in (["db", "migrate"], ["db", "status"]):
        result = invoke(args, env)
        assert result.exit_code not in (0, 3), (args, result.output)
        assert "error" in result.stderr


@pytest.mark.postgres
def test_db_migrate_on_postgresql_as_owner_granting_the_service_role(sqlite_env):
    from tests import pg

    ok, why = pg.available()
    if not ok:
        pytest.skip(why)
    database = pg.create_database(prefix="pmscli")
    try:
        env = {**sqlite_env, "PMS_DATABASE_URL": database.app_url,
               "PMS_MIGRATION_DATABASE_URL": database.owner_url}
        assert invoke(["db", "status", "--json"], env).exit_code == 3
        applied = invoke(["db", "migrate", "--json"], env)
        assert applied.exit_code == 0, applied.output
        assert json.loads(applied.stdout)["applied"]
        assert invoke(["db", "status", "--json"], env).exit_code == 0
    finally:
        db_proxy.initialize(None)
        database.drop()


# -- dev ---------------------------------------------------------------------------------------------

def test_dev_keys_writes_a_key_set_once(sqlite_env, tmp_path):
    first = invoke(["dev", "keys", "--json"], sqlite_env)
    assert first.exit_code == 0, first.output
    out = json.loads(first.stdout)
    assert Path(out["jwks"]) == tmp_path / "keys" / "jwks.json"
    jwks = json.loads(Path(out["jwks"]).read_text())
    assert [k["kid"] for k in jwks["keys"]] == [out["kid"]]
    assert "d" not in jwks["keys"][0]  # the public set carries no private part
    second = invoke(["dev", "keys", "--json"], sqlite_env)
    assert json.loads(second.stdout)["kid"] == out["kid"]


def test_dev_token_is_signed_for_the_env_and_scopes(sqlite_env, tmp_path):
    env_id = uuid.uuid4()
    result = invoke(["dev", "token", "--env", str(env_id), "--scope", "hotel:pms:health:read",
                     "--scope", "hotel:pms:properties:read", "--ttl", "120", "--json"],
                    sqlite_env)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["env_id"] == str(env_id)
    jwks = json.loads((tmp_path / "keys" / "jwks.json").read_text())
    key = jwt.algorithms.RSAAlgorithm.from_jwk(jwks["keys"][0])
    claims = jwt.decode(out["token"], key=key, algorithms=["RS256"], audience="hotel-pms",
                        issuer="pms-dev")
    assert claims["env_id"] == str(env_id)
    assert claims["scope"].split() == ["hotel:pms:health:read", "hotel:pms:properties:read"]
    assert claims["exp"] - claims["iat"] == 120
    plain = invoke(["dev", "token", "--env", str(env_id)], sqlite_env)
    assert plain.exit_code == 0 and plain.stdout.strip().count(".") == 2


@pytest.mark.parametrize("jwks_url", ["https://idp.example/.well-known/jwks.json",
                                      "http://127.0.0.1:9/jwks.json"])
@pytest.mark.parametrize("args", [["dev", "keys"], ["dev", "token", "--env", str(uuid.uuid4())]])
def test_dev_commands_refuse_a_non_file_jwks(sqlite_env, jwks_url, args):
    result = invoke(args, {**sqlite_env, "PMS_JWKS_URL": jwks_url})
    assert result.exit_code != 0
    assert "refused" in result.stderr
    assert result.stdout.strip() == ""


def test_dev_token_needs_a_valid_env(sqlite_env):
    result = runner.invoke(app, ["dev", "token", "--env", "not-a-uuid"], env=sqlite_env)
    assert result.exit_code == 2


# -- demo ------------------------------------------------------------------------------------------

def test_demo_seed_creates_the_hotel_once(sqlite_env):
    from cli.demo import DEMO_ENV_ID
    from pms.context import system_ctx
    from pms.db.database import init_db
    from pms.db.uow import read_scope
    from pms.models import Profile, Property

    assert invoke(["db", "migrate"], sqlite_env).exit_code == 0
    first = invoke(["demo", "seed", "--json"], sqlite_env)
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)
    assert summary["created"] is True
    assert summary["env_id"] == str(DEMO_ENV_ID)
    assert summary["room_types"] >= 3 and summary["rooms"] >= 10 and summary["rate_plans"] >= 2
    assert summary["lists_of_values"] > 0  # the env is initialized too

    second = invoke(["demo", "seed", "--json"], sqlite_env)
    assert second.exit_code == 0, second.output
    again = json.loads(second.stdout)
    assert again["created"] is False
    assert {k: v for k, v in again.items() if k != "created"} == \
        {k: v for k, v in summary.items() if k != "created"}

    init_db(sqlite_env["PMS_DATABASE_URL"], pool_size=1)
    with read_scope(system_ctx(DEMO_ENV_ID)):
        assert Property.select().count() == 1
        assert Profile.select().where(Profile.email == "grace@example.com").count() == 1


def test_demo_seed_into_another_env_keeps_envs_apart(sqlite_env):
    assert invoke(["db", "migrate"], sqlite_env).exit_code == 0
    env_id = uuid.uuid4()
    result = invoke(["demo", "seed", "--env", str(env_id), "--json"], sqlite_env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["env_id"] == str(env_id)
    table = invoke(["demo", "seed"], sqlite_env)  # the default demo env, as a table
    assert table.exit_code == 0 and "property_id" in table.stdout


def test_demo_hotel_takes_its_first_fnb_charge(sqlite_env):
    from decimal import Decimal

    import msgspec

    from cli.demo import DEMO_ENV_ID
    from pms.context import system_ctx
    from pms.db.database import init_db
    from pms.schemas.cashiering import ChargeIn
    from pms.schemas.reservations import CheckInIn, ReservationIn
    from pms.services.cashiering import cashiering
    from pms.services.cashiering.folios import get_reservation_folio
    from pms.services.frontdesk import checkin
    from pms.services.reservations import reservations

    assert invoke(["db", "migrate"], sqlite_env).exit_code == 0
    seeded = invoke(["demo", "seed", "--json"], sqlite_env)
    summary = json.loads(seeded.stdout)
    assert summary["transaction_codes"] >= 2
    # Given a guest checked in at the freshly seeded demo hotel
    init_db(sqlite_env["PMS_DATABASE_URL"], pool_size=1)
    ctx = system_ctx(DEMO_ENV_ID)
    prop_id = uuid.UUID(summary["property_id"])
    from pms.db.uow import read_scope
    from pms.models import RatePlan, RoomType
    from pms.services.catalog.catalog import load_property
    from pms.services.reservations.reservations import business_date

    with read_scope(ctx):
        room_type = RoomType.get((RoomType.property == prop_id) & (RoomType.code == "STD"))
        plan = RatePlan.get((RatePlan.property == prop_id) & (RatePlan.code == "BAR"))
        today = business_date(load_property(prop_id), ctx.now)
    body = msgspec.convert({
        "room_type_id": str(room_type.id), "rate_plan_id": str(plan.id),
        "arrival_date": str(today), "departure_date": str(today.fromordinal(today.toordinal() + 1)),
        "adults": 1, "guest": {"first_name": "Ada", "last_name": "Lovelace"}}, ReservationIn)
    res, _ = reservations.create_reservation(ctx, prop_id, body)
    checkin.check_in(ctx, prop_id, res.id, CheckInIn())
    folio = get_reservation_folio(ctx, prop_id, res.id)
    # When the restaurant posts the first F&B charge, it is taken (with its VAT line)
    out = cashiering.post_charge(ctx, prop_id, folio.id, msgspec.convert(
        {"transaction_code": "FB", "amount": "11.90"}, ChargeIn))
    assert out.charges_total == Decimal("11.90")
    assert {c.category for c in out.charges} == {"F&B", "tax"}


# -- embedded paths (pms-cli only worked from the repository root) -----------------------

def test_embedded_paths_do_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    from pms.config import default_home, load_settings

    monkeypatch.chdir(tmp_path)
    anchored = load_settings({})
    assert anchored.home == default_home({}) and anchored.home.is_absolute()
    assert anchored.database_url == f"sqlite:///{anchored.home}/pms.db"
    assert anchored.jwks_path == anchored.home / "dev-jwks.json"
    home = tmp_path / "home"
    assert load_settings({"PMS_HOME": str(home)}).database_url == f"sqlite:///{home}/pms.db"
    relative = load_settings({"PMS_HOME": str(home), "PMS_DATABASE_URL": "sqlite:///x/a.db",
                              "PMS_JWKS_URL": "file://k/jwks.json"})
    assert relative.database_url == f"sqlite:///{home}/x/a.db"
    assert relative.jwks_path == home / "k" / "jwks.json"


def test_cli_elsewhere_refuses_a_missing_or_unmigrated_database_without_traceback(tmp_path,
                                                                              monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    env = {"PMS_HOME": str(tmp_path / "home"), "PMS_DATABASE_URL": "",
           "PMS_MIGRATION_DATABASE_URL": "", "PMS_JWKS_URL": ""}
    for args in (["end-of-day", "--env", str(uuid.uuid4()), "--all"], ["demo", "seed"],
                 ["email", "list", "--env", str(uuid.uuid4())]):
        result = runner.invoke(app, args, env=env)
        assert result.exit_code == 1, (args, result.output)
        assert "pms-cli db migrate" in result.output and "Traceback" not in result.output
    assert list(elsewhere.iterdir()) == []  # no var/pms.db made in the working directory
    assert not (tmp_path / "home" / "pms.db").exists()  # nor an empty one in PMS_HOME
    # an existing but unmigrated file is refused as clearly
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "pms.db").touch()
    result = runner.invoke(app, ["demo", "seed"], env=env)
    assert result.exit_code == 1 and "not migrated" in result.output, result.output
    # after `db migrate` (into PMS_HOME) the same command works from here
    assert runner.invoke(app, ["db", "migrate"], env=env).exit_code == 0
    assert runner.invoke(app, ["demo", "seed", "--json"], env=env).exit_code == 0
    assert list(elsewhere.iterdir()) == []


# -- openapi -----------------------------------------------------------------------------------------

def test_openapi_prints_a_valid_openapi_3_1_document(sqlite_env):
    result = invoke(["openapi"], sqlite_env)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["openapi"] == "3.1.0"
    assert {"info", "paths", "components"} <= set(doc)
    assert "/v1/health" in doc["paths"] and "/v1/properties/{property_id}" in doc["paths"]
    compact = invoke(["openapi", "--indent", "0"], sqlite_env)
    assert json.loads(compact.stdout) == doc


def test_a_command_releases_its_connection_when_it_ends(sqlite_env):
    """The rule (one connection scope per entry point): a CLI command's database connection is
    opened for the command and released when it ends, not left to the process's exit."""
    from pms.db.database import db

    assert invoke(["db", "migrate"], sqlite_env).exit_code == 0
    assert invoke(["demo", "seed", "--json"], sqlite_env).exit_code == 0
    assert db.obj is not None and db.is_closed()
