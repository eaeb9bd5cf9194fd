"""`TenantModel.save` with statements compiled once per model and column set (PostgreSQL): the
rows are the ones peewee's own save writes, an UPDATE stays inside the tenant, and anything
unusual takes peewee's path."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import peewee
import pytest

from pms.context import Ctx
from pms.db import base
from pms.db.database import db
from pms.db.scope import tenant_scope
from pms.models import Property

OLD = datetime(2001, 1, 1, tzinfo=UTC)


def _new(code: str) -> Property:
    return Property(code=code, name="Compiled", timezone="Europe/Berlin", currency_code="EUR",
                    languages=["en", "de"], display_address={"city": "Berlin"})


def _peewee_save(row: Property, **kw) -> int:
    return peewee.Model.save(row, **kw)


@pytest.mark.postgres
def test_an_insert_writes_the_row_peewee_writes(pg_db, ctx):
    with tenant_scope(ctx.env_id), db.atomic():
        compiled, plain = _new("CMP1"), _new("CMP2")
        compiled.env_id = plain.env_id = ctx.env_id
        compiled.save(force_insert=True)
        _peewee_save(plain, force_insert=True)
        assert not compiled.is_dirty()
        got = {r.code: r.__data__ for r in Property.select().where(
            Property.id.in_([compiled.id, plain.id]))}
    assert any(k[0] is Property and k[1] for k in base._SAVE_SQL)  # the compiled path ran
    strip = {"id", "code", "created_at", "updated_at"}
    assert {k: v for k, v in got["CMP1"].items() if k not in strip} == \
        {k: v for k, v in got["CMP2"].items() if k not in strip}
    assert got["CMP1"]["display_address"] == {"city": "Berlin"}
    # both paths stamp updated_at at save time (the instants differ by the test's own pace)
    stamped = [got[c]["updated_at"] for c in ("CMP1", "CMP2")]
    assert all(s is not None for s in stamped) and abs(stamped[0] - stamped[1]) < timedelta(minutes=1)


@pytest.mark.postgres
def test_an_update_changes_the_row_and_reports_one_row(pg_db, ctx):
    with tenant_scope(ctx.env_id), db.atomic():
        row = _new("CMP3")
        row.save(force_insert=True)
        row.name = "Renamed"
        assert row.save() == 1
        assert Property.fetch(row.id).name == "Renamed"


@pytest.mark.postgres
def test_an_update_never_reaches_another_envs_row(pg_db, ctx):
    other = Ctx(env_id=uuid.uuid4())
    with tenant_scope(other.env_id), db.atomic():
        theirs = _new("THEIRS")
        theirs.save(force_insert=True)
    with tenant_scope(ctx.env_id), db.atomic():
        forged = _new("FORGED")
        forged.id, forged.env_id = theirs.id, ctx.env_id  # their id, our env
        assert forged.save() == 0
    with tenant_scope(other.env_id), db.atomic():
        assert Property.fetch(theirs.id).code == "THEIRS"


@pytest.mark.postgres
def test_an_expression_value_takes_peewees_path(pg_db, ctx):
    with tenant_scope(ctx.env_id), db.atomic():
        row = _new("CMP4")
        row.save(force_insert=True)
        row.name = peewee.fn.UPPER("shouted")
        assert row.save() == 1
        assert Property.fetch(row.id).name == "SHOUTED"


def test_updated_at_is_stamped_by_every_update_on_both_databases(database, ctx):
    """The rule: `updated_at` is stamped in one place (BaseModel.save) for every save path, the
    compiled one of PostgreSQL included."""
    with tenant_scope(ctx.env_id), db.atomic():
        row = _new("STAMP")
        row.save(force_insert=True)
        Property.update(updated_at=OLD).where(Property.id == row.id).execute()
        row = Property.fetch(row.id)
        assert row.updated_at == OLD
        row.name = "Stamped"
        assert row.save() == 1
        assert Property.fetch(row.id).updated_at > OLD
        Property.update(updated_at=OLD).where(Property.id == row.id).execute()
        row.name = "Stamped again"
        row.save(only=[Property.name])  # a partial save stamps it too
        again = Property.fetch(row.id)
    assert again.updated_at > OLD and again.name == "Stamped again"
