"""The unit of work: what commits together, what runs after commit, what is masked."""

from __future__ import annotations

import uuid

import peewee
import pytest

from pms.context import Ctx
from pms.db.database import db
from pms.db.uow import mask, read_scope, unit_of_work
from pms.models import AuditEntry, OutboxEvent, Property
from tests.factories import make_property
from tests.helpers import counts


def test_domain_outbox_and_audit_rows_commit_together(database, ctx):
    prop = make_property(ctx)
    assert counts(ctx) == (1, 1)
    with read_scope(ctx):
        event = OutboxEvent.get()
        audit = AuditEntry.get()
    assert event.subject == str(prop.id) and event.type == "hotel:pms:property:created"
    assert event.aggregate_version == 1 and event.published_at is None and event.attempts == 0
    assert event.data["propertyCode"] == prop.code
    assert audit.action == "property.created" and audit.after["propertyCode"] == prop.code
    assert audit.actor_sub == ctx.sub and audit.request_id == ctx.request_id


def test_an_exception_rolls_back_domain_outbox_and_audit(database, ctx):
    with pytest.raises(RuntimeError):
        with unit_of_work(ctx) as uow:
            prop = Property.create(code="RB", name="x", timezone="UTC", currency_code="EUR")
            uow.audit("property.created", prop, after={"a": 1})
            uow.emit("hotel:pms:property:created", prop, {"a": 1})
            raise RuntimeError("boom after the outbox write")
    assert counts(ctx) == (0, 0)
    with read_scope(ctx):
        assert Property.select().count() == 0


def test_aggregate_version_increases_by_one_per_change(database, ctx):
    from pms.schemas.catalog import PropertyPatch
    from pms.services.catalog.catalog import update_property

    prop = make_property(ctx)
    for name in ("a", "b", "c"):
        update_property(ctx, prop.id, PropertyPatch(name=name))
    with read_scope(ctx):
        versions = [e.aggregate_version for e in
                    OutboxEvent.select().order_by(OutboxEvent.aggregate_version)]
    assert versions == [1, 2, 3, 4]


def test_unit_of_work_cannot_be_nested(database, ctx):
    with unit_of_work(ctx):
        with pytest.raises(RuntimeError, match="nested"):
            with unit_of_work(ctx):
                pass


def test_after_commit_runs_only_after_a_commit(database, ctx):
    ran: list[str] = []
    with unit_of_work(ctx) as uow:
        uow.after_commit(lambda: ran.append("committed"))
        assert ran == []
    assert ran == ["committed"]
    with pytest.raises(ValueError):
        with unit_of_work(ctx) as uow:
            uow.after_commit(lambda: ran.append("rolled back"))
            raise ValueError
    assert ran == ["committed"]


def test_a_failing_after_commit_callback_does_not_fail_the_use_case(database, ctx):
    def broken() -> None:
        raise ConnectionError("broker down")

    with unit_of_work(ctx) as uow:
        uow.after_commit(broken)
        Property.create(code="AC", name="x", timezone="UTC", currency_code="EUR")
    with read_scope(ctx):
        assert Property.select().count() == 1


def test_audit_masks_secrets_on_a_copy():
    data = {"name": "x", "client_secret": "s3", "nested": {"password": "p", "ok": 1},
            "payment_method_token": "tok"}
    masked = mask(data)
    assert masked == {"name": "x", "client_secret": "***", "nested": {"password": "***", "ok": 1},
                      "payment_method_token": "***"}
    assert data["client_secret"] == "s3"


def test_audit_and_emit_refuse_non_dict_data(database, ctx):
    with pytest.raises(TypeError):
        with unit_of_work(ctx) as uow:
            prop = Property.create(code="T", name="x", timezone="UTC", currency_code="EUR")
            uow.emit("hotel:pms:property:created", prop, ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        with unit_of_work(ctx) as uow:
            prop = Property.create(code="T", name="x", timezone="UTC", currency_code="EUR")
            uow.audit("property.created", prop, after="nope")  # type: ignore[arg-type]
    assert counts(ctx) == (0, 0)


def test_envs_do_not_see_each_others_rows(database, ctx):
    make_property(ctx)
    other = Ctx(env_id=uuid.uuid4())
    assert counts(other) == (0, 0)
    with read_scope(other):
        assert Property.select().count() == 0


def test_sqlite_runs_in_wal_mode_with_foreign_keys(sqlite_db):
    assert db.execute_sql("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute_sql("PRAGMA foreign_keys").fetchone()[0] == 1


@pytest.mark.postgres
def test_postgres_statements_are_cut_at_the_statement_timeout(pg_database):
    from pms.db.database import make_database

    short = make_database(pg_database.app_url, statement_timeout_ms=200)
    try:
        with pytest.raises(peewee.OperationalError, match="statement timeout"):
            short.execute_sql("SELECT pg_sleep(2)")
    finally:
        short.close_all()


@pytest.mark.postgres
def test_postgres_connections_are_pooled(pg_db):
    db.connect(reuse_if_open=True)
    first = db.connection()
    db.close()
    db.connect()
    assert db.connection() is first
    db.close()


@pytest.mark.postgres
def test_tenant_setting_is_transaction_local(pg_db, ctx):
    with read_scope(ctx):
        assert db.execute_sql("SELECT current_setting('app.env_id', true)").fetchone()[0] == str(ctx.env_id)
    db.connect(reuse_if_open=True)
    value = db.execute_sql("SELECT current_setting('app.env_id', true)").fetchone()[0]
    assert value in (None, "")
