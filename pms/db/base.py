"""Base models: UUID keys, timestamps, JSON columns, and the tenant-scoped model.

`TenantModel.select/update/delete/insert` refuse to run without an active tenant scope and add
`env_id = <scope>` to every query they build. PostgreSQL row-level security backs this up.
"""

from __future__ import annotations

import uuid
from typing import Any

import peewee

from pms.db.database import db
from pms.db.fields import JsonField, MoneyField, UtcDateTimeField, utcnow
from pms.db.scope import is_unscoped, require_env

__all__ = ["AggregateModel", "BaseModel", "JsonField", "MoneyField", "TenantModel",
           "UtcDateTimeField", "utcnow"]


class BaseModel(peewee.Model):
    id = peewee.UUIDField(primary_key=True, default=uuid.uuid4)
    created_at = UtcDateTimeField(default=utcnow)
    updated_at = UtcDateTimeField(default=utcnow)

    class Meta:
        database = db
        legacy_table_names = False

    def save(self, *args: Any, **kwargs: Any) -> int:
        self.updated_at = utcnow()
        return super().save(*args, **kwargs)


_FETCH_SQL: dict[Any, tuple[str, list[str]]] = {}


class TenantModel(BaseModel):
    """A row of one tenant env. Queries without an active scope raise ScopeError."""

    env_id = peewee.UUIDField(index=False)

    @classmethod
    def _scope_filter(cls) -> peewee.Expression | None:
        if is_unscoped():
            return None
        return cls.env_id == require_env()

    @classmethod
    def select(cls, *fields: Any) -> peewee.ModelSelect:
        query = super().select(*fields)
        cond = cls._scope_filter()
        return query.where(cond) if cond is not None else query

    @classmethod
    def update(cls, __data: Any = None, **update: Any) -> peewee.ModelUpdate:
        query = super().update(__data, **update)
        cond = cls._scope_filter()
        return query.where(cond) if cond is not None else query

    @classmethod
    def delete(cls) -> peewee.ModelDelete:
        query = super().delete()
        cond = cls._scope_filter()
        return query.where(cond) if cond is not None else query

    @classmethod
    def fetch(cls, id_: Any) -> Any:
        """The row with this id in the active scope, or None: `select().where(id == ...)` with
        its SQL compiled once per model and database (PERF: building the query dominated the
        cost of a by-id read)."""
        if is_unscoped():
            return cls.select().where(cls.id == id_).first()
        env = require_env()
        database = cls._meta.database
        key = (cls, type(database.obj if hasattr(database, "obj") else database))
        compiled = _FETCH_SQL.get(key)
        if compiled is None:
            marker = uuid.UUID(int=0)
            sql, _ = (super().select().where((cls.env_id == marker) & (cls.id == marker))
                      .limit(1).sql())
            compiled = _FETCH_SQL[key] = (sql, [f.column_name for f in cls._meta.sorted_fields])
        sql, columns = compiled
        params = (cls.env_id.db_value(env), cls.id.db_value(id_), 1)
        target = database.obj if hasattr(database, "obj") else database
        if hasattr(target, "execute_prepared"):
            cursor = target.execute_prepared(f"pms_fetch_{cls._meta.table_name}", sql, params,
                                             ("uuid", "uuid", "int"))
        else:
            cursor = database.execute_sql(sql, params)
        row = cursor.fetchone()
        if row is None:
            return None
        fields = cls._meta.sorted_fields
        obj = cls(__no_default__=1, **{f.name: f.python_value(v) for f, v in zip(fields, row, strict=True)})
        obj._dirty.clear()
        return obj

    @classmethod
    def create(cls, **query: Any) -> Any:
        cls._bind_env(query)
        return super().create(**query)

    @classmethod
    def insert(cls, __data: Any = None, **insert: Any) -> peewee.ModelInsert:
        if __data is None:
            cls._bind_env(insert)
        else:
            cls._bind_env(__data)
        return super().insert(__data, **insert)

    @classmethod
    def insert_many(cls, rows: Any, fields: Any = None) -> peewee.ModelInsert:
        rows = list(rows)
        for row in rows:
            if isinstance(row, dict):
                cls._bind_env(row)
        return super().insert_many(rows, fields)

    @classmethod
    def _bind_env(cls, values: dict[Any, Any]) -> None:
        """Fill env_id from the scope; refuse a row for another env."""
        if is_unscoped() and ("env_id" in values or cls.env_id in values):
            return
        env = require_env()
        given = values.get("env_id", values.get(cls.env_id))
        if given is None:
            values["env_id"] = env
        elif uuid.UUID(str(given)) != env:
            raise PermissionError("refusing to write a row of another env")

    def save(self, force_insert: bool = False, only: Any = None) -> int:
        if self.env_id is None:
            self.env_id = require_env()
        elif not is_unscoped() and self.env_id != require_env():
            raise PermissionError("refusing to write a row of another env")
        return super().save(force_insert=force_insert, only=only)


class AggregateModel(TenantModel):
    """A tenant row that emits events: `version` is its CloudEvent `aggregateversion`."""

    version = peewee.IntegerField(default=0)
