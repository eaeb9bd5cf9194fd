"""`pms-cli outbox|platform|email` through Typer's runner on a temp SQLite (embedded default)."""

from __future__ import annotations

import json
import uuid

import pytest
from typer.testing import CliRunner

from cli.main import app
from pms.context import Ctx
from pms.db.database import init_db
from pms.db.migrator import migrate
from pms.devkeys import all_scopes
from pms.platform.email import EmbeddedEmail
from tests.factories import make_profile, make_property

runner = CliRunner()


@pytest.fixture
def cli_env(tmp_path):
    url = f"sqlite:///{tmp_path}/cli.db"
    migrate(url)
    env = {"PMS_DATABASE_URL": url, "PMS_MIGRATION_DATABASE_URL": url,
           "PMS_BROKER_URL": "stub://", "PMS_PLATFORM_URL": "embedded"}
    init_db(url)
    ctx = Ctx(env_id=uuid.uuid4(), scopes=frozenset(all_scopes()))
    prop = make_property(ctx)
    make_profile(ctx, prop.id)
    return env, ctx


def run(env, *args):
    result = runner.invoke(app, list(args), env=env)
    return result


def test_status_reports_the_backlog(cli_env):
    env, ctx = cli_env
    result = run(env, "outbox", "status", "--env", str(ctx.env_id), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["backlog"] == 2 and data["oldest_unpublished_age_s"] >= 0
    assert run(env, "outbox", "status").exit_code == 0


def test_list_filters_and_prints_json(cli_env):
    env, ctx = cli_env
    result = run(env, "outbox", "list", "--env", str(ctx.env_id), "--type",
                 "hotel:pms:profile:created", "--unpublished", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["type"] for r in rows] == ["hotel:pms:profile:created"]
    assert run(env, "outbox", "list", "--since", "not-a-date").exit_code == 2


def test_relay_once_publishes_then_replay_keeps_ids(cli_env):
    env, ctx = cli_env
    result = run(env, "outbox", "relay", "--once", "--env", str(ctx.env_id), "--no-audit", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["published"] == 2
    listed = json.loads(run(env, "outbox", "list", "--env", str(ctx.env_id), "--json").stdout)
    assert all(r["published_at"] for r in listed)
    dry = run(env, "outbox", "replay", "--env", str(ctx.env_id), "--dry-run", "--json")
    assert dry.exit_code == 0 and json.loads(dry.stdout)["count"] == 2
    again = run(env, "outbox", "replay", "--id", listed[0]["id"], "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) == {"selected": 1, "published": 1, "failed": 0,
                                         "broker_error": None}
    after = json.loads(run(env, "outbox", "list", "--env", str(ctx.env_id), "--json").stdout)
    assert [r["id"] for r in after] == [r["id"] for r in listed]


def test_replay_refuses_an_empty_filter_and_relay_needs_a_mode(cli_env):
    env, _ = cli_env
    assert run(env, "outbox", "replay").exit_code == 2
    assert run(env, "outbox", "relay").exit_code == 2
    assert run(env, "outbox", "replay", "--id", "nope").exit_code == 2


def test_relay_exits_non_zero_when_the_broker_is_down(cli_env):
    env, ctx = cli_env
    down = dict(env, PMS_BROKER_URL="amqp://guest:guest@127.0.0.1:1/%2F")
    result = run(down, "outbox", "relay", "--once", "--env", str(ctx.env_id), "--json")
    assert result.exit_code == 1, result.output


def test_platform_init_and_email_list(cli_env):
    env, ctx = cli_env
    result = run(env, "platform", "init", "--env", str(ctx.env_id), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ledger_accounts_ready"] is True
    again = json.loads(run(env, "platform", "init", "--env", str(ctx.env_id), "--json").stdout)
    assert again["created"] is False
    EmbeddedEmail().send(ctx.env_id, to="a@example.com", subject="Hi", body="x",
                         idempotency_key="k1")
    listed = run(env, "email", "list", "--env", str(ctx.env_id), "--json")
    assert listed.exit_code == 0, listed.output
    assert [m["to"] for m in json.loads(listed.stdout)] == ["a@example.com"]
    assert run(env, "platform", "consume").exit_code == 2


class Refusing:
    """A fake bus that refuses every event (as an unroutable type would)."""

    def publish(self, event, *, routing_key=None):
        from pms.relay.sweep import PublishRejected

        raise PublishRejected("unroutable: no queue is bound for this routing key")


def test_parked_rows_are_listed_counted_and_replay_clears_parked(cli_env):
    from pms.relay import sweep as relay

    env, ctx = cli_env
    result = relay.relay_batch(Refusing(), env_id=ctx.env_id, max_attempts=1)
    assert result.parked == 2
    status = json.loads(run(env, "outbox", "status", "--env", str(ctx.env_id), "--json").stdout)
    assert (status["parked"], status["backlog"], status["due"]) == (2, 0, 0)
    listed = run(env, "outbox", "list", "--env", str(ctx.env_id), "--parked", "--json")
    assert listed.exit_code == 0, listed.output
    parked = json.loads(listed.stdout)
    assert {r["state"] for r in parked} == {"parked"} and len(parked) == 2
    assert all("unroutable" in r["last_error"] for r in parked)
    # parked rows are not due: a relay leaves them alone
    again = run(env, "outbox", "relay", "--once", "--env", str(ctx.env_id), "--no-audit", "--json")
    assert json.loads(again.stdout)["claimed"] == 0
    replayed = run(env, "outbox", "replay", "--env", str(ctx.env_id), "--parked", "--json")
    assert replayed.exit_code == 0, replayed.output
    assert json.loads(replayed.stdout)["published"] == 2
    assert json.loads(run(env, "outbox", "list", "--env", str(ctx.env_id), "--parked",
                          "--json").stdout) == []
    after = json.loads(run(env, "outbox", "list", "--env", str(ctx.env_id), "--json").stdout)
    assert {r["state"] for r in after} == {"published"}


def _reaction_parked_booking(ctx, published_at):
    """A booking whose `reservation:created` row is published and whose confirmation email
    was tried 10 times and parked."""
    from pms.db.scope import unscoped
    from pms.models import OutboxEvent
    from tests.factories import make_booking_hotel, make_reservation

    hotel = make_booking_hotel(ctx)
    guest = make_profile(ctx, hotel.id)  # with an email
    reservation = make_reservation(ctx, hotel, guest=None, guest_profile_id=str(guest.id))
    with unscoped():
        row = OutboxEvent.get((OutboxEvent.type == "hotel:pms:reservation:created")
                              & (OutboxEvent.subject == str(reservation.id)))
        OutboxEvent.update(published_at=published_at, dispatch_attempts=10,
                           dispatch_next_at=None, dispatched_at=None,
                           last_error="RuntimeError: smtp down").where(
            OutboxEvent.id == row.id).execute()
    return row


def test_replay_parked_of_a_row_parked_only_for_its_reactions_reruns_them_not_the_publish(
        cli_env):
    from datetime import UTC, datetime

    from pms.db.scope import unscoped
    from pms.db.uow import read_scope
    from pms.models import OutboxEvent, SandboxEmail

    env, ctx = cli_env
    published_at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    row = _reaction_parked_booking(ctx, published_at)
    parked = json.loads(run(env, "outbox", "list", "--env", str(ctx.env_id), "--parked",
                            "--json").stdout)
    assert [(r["id"], r["state"]) for r in parked] == [(str(row.id), "reactions_parked")]
    replayed = run(env, "outbox", "replay", "--env", str(ctx.env_id), "--parked", "--json")
    assert replayed.exit_code == 0, replayed.output
    out = json.loads(replayed.stdout)
    assert (out["selected"], out["published"], out["reactions_rerun"]) == (1, 0, 1)
    with unscoped():
        after = OutboxEvent.get_by_id(row.id)
    assert after.published_at == published_at  # not published again
    assert after.dispatched_at is not None
    with read_scope(ctx):  # the reaction ran: the confirmation email went out
        assert SandboxEmail.select().where(SandboxEmail.template == "booking_confirmation"
                                           ).count() == 1
    assert json.loads(run(env, "outbox", "list", "--env", str(ctx.env_id), "--parked",
                          "--json").stdout) == []


def test_replay_by_id_of_a_row_whose_reactions_are_parked_publishes_it_and_reruns_them(cli_env):
    from datetime import UTC, datetime

    from pms.db.scope import unscoped
    from pms.db.uow import read_scope
    from pms.models import OutboxEvent, SandboxEmail

    env, ctx = cli_env
    published_at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    row = _reaction_parked_booking(ctx, published_at)
    replayed = run(env, "outbox", "replay", "--id", str(row.id), "--json")
    assert replayed.exit_code == 0, replayed.output
    out = json.loads(replayed.stdout)
    assert (out["published"], out["reactions_rerun"]) == (1, 1)
    with unscoped():
        after = OutboxEvent.get_by_id(row.id)
    assert after.published_at != published_at and after.dispatched_at is not None
    with read_scope(ctx):
        assert SandboxEmail.select().where(SandboxEmail.template == "booking_confirmation"
                                           ).count() == 1


def test_replay_dry_run_whose_filter_matches_nothing_lists_nothing(cli_env):
    env, ctx = cli_env
    dry = run(env, "outbox", "replay", "--env", str(ctx.env_id), "--type", "hotel:pms:nothing:x",
              "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.stdout) == {"dry_run": True, "count": 0, "rows": []}
    text = run(env, "outbox", "replay", "--aggregate", str(uuid.uuid4()), "--dry-run")
    assert text.exit_code == 0 and "hotel:pms" not in text.stdout


@pytest.mark.parametrize("width", [80, 200])
def test_outbox_list_is_readable_at_80_and_200_columns(cli_env, width):
    from pms.db.scope import tenant_scope
    from pms.models import OutboxEvent

    env, ctx = cli_env
    with tenant_scope(ctx.env_id):
        OutboxEvent.update(attempts=3, last_error="PublishRejected: " + "x" * 500).execute()
    result = run(dict(env, COLUMNS=str(width)), "outbox", "list", "--env", str(ctx.env_id))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines and max(len(line) for line in lines) <= width
    ids = [r["id"] for r in json.loads(run(env, "outbox", "list", "--env", str(ctx.env_id),
                                           "--json").stdout)]
    # one line per row: each short id appears on exactly one line, with its type and state
    for row_id in ids:
        (line,) = [line for line in lines if row_id[:8] in line]
        assert "created" in line and "pending" in line
    assert not any(row_id in result.stdout for row_id in ids)  # full ids only in --json


def test_every_outbox_command_offers_json(cli_env):
    env, _ = cli_env
    for command in ("status", "list", "replay", "relay"):
        help_text = run(dict(env, COLUMNS="200"), "outbox", command, "--help").stdout
        assert "--json" in help_text, command
        assert "<str>" not in help_text and "<bool>" not in help_text, command
