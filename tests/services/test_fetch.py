"""`TenantModel.fetch`: the compiled by-id read returns what `select()` returns, and nothing of
another env."""

from __future__ import annotations

import uuid

from pms.context import Ctx
from pms.db.scope import unscoped
from pms.db.uow import read_scope
from pms.models import Property, Room
from tests.factories import make_property, make_room, make_room_type


def test_fetch_equals_select(database, ctx):
    prop = make_property(ctx, displayAddress={"city": "Berlin"}, languages=["de"])
    room = make_room(ctx, prop.id, make_room_type(ctx, prop.id).id)
    with read_scope(ctx):
        for model, id_ in ((Property, prop.id), (Room, room.id)):
            fetched, selected = model.fetch(id_), model.select().where(model.id == id_).get()
            assert fetched.__data__ == selected.__data__
            assert not fetched.is_dirty()
        assert Room.fetch(room.id).property_id == prop.id


def test_fetch_misses_other_envs_and_unknown_ids(database, ctx):
    prop = make_property(ctx)
    with read_scope(Ctx(env_id=uuid.uuid4())):
        assert Property.fetch(prop.id) is None
    with read_scope(ctx):
        assert Property.fetch(uuid.uuid4()) is None
        with unscoped():
            assert Property.fetch(prop.id).id == prop.id


def test_reads_set_the_tenant_in_the_same_implicit_transaction(database, ctx, backend):
    from pms.db.database import db

    with read_scope(ctx):
        value = db.execute_sql("SELECT current_setting('app.env_id', true)").fetchone()[0] \
            if backend == "postgres" else str(ctx.env_id)
    assert value == str(ctx.env_id)
    if backend == "postgres":
        # and it is gone with that statement: the connection carries no tenant afterwards
        leftover = db.execute_sql("SELECT current_setting('app.env_id', true)").fetchone()[0]
        assert leftover in (None, "")


def test_prepared_fetch_survives_a_new_connection(pg_db, ctx):
    from pms.db.database import db

    prop = make_property(ctx)
    with read_scope(ctx):
        assert Property.fetch(prop.id).id == prop.id
    db.close_all()
    with read_scope(ctx):
        assert Property.fetch(prop.id).id == prop.id
