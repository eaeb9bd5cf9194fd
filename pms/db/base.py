"""Base models: UUID keys, timestamps, JSON columns, and the tenant-scoped model.

`TenantModel.select/update/delete/insert` refuse to run without an active tenant scope and add
`env_id = <scope>` to every query they build. PostgreSQL row-level security backs this up.
"""

from __future__ import annotations

import uuid
from typing import Any

import peewee

from pms.db.database import PmsPostgresDatabase, db
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

    def save(self, force_insert: bool = False, only: Any = None) -> int:
        """Stamp `updated_at` (the one place it is stamped, for every database and save path)
        and write the row with `_write`."""
        self.updated_at = utcnow()
        if only is not None:
            only = [*only, type(self).updated_at]
        return self._write(force_insert, only)

    def _write(self, force_insert: bool, only: Any) -> int:
        return super().save(force_insert=force_insert, only=only)


_FETCH_SQL: dict[Any, tuple[str, list[str]]] = {}
_SAVE_SQL: dict[Any, str] = {}


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
        cursor = database.execute_sql(sql, params)
        row = cursor.fetchone()
        if row is None:
            return None
        # the object peewee's cursor wrapper would build, without a descriptor call per field
        obj = cls.__new__(cls)
        obj.__data__ = {f.name: f.python_value(v)
                        for f, v in zip(cls._meta.sorted_fields, row, strict=True)}
        obj._dirty = set()
        obj.__rel__ = {}
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

    def _write(self, force_insert: bool, only: Any) -> int:
        if self.env_id is None:
            self.env_id = require_env()
        elif not is_unscoped() and self.env_id != require_env():
            raise PermissionError("refusing to write a row of another env")
        if only is None and isinstance(self._meta.database.obj, PmsPostgresDatabase):
            rows = self._save_compiled(force_insert)
            if rows is not None:
                return rows
        return super()._write(force_insert, only)

    def _save_compiled(self, force_insert: bool) -> int | None:
        """peewee's `save()` for the common case, with the statement's text compiled once per
        model and column set (PERF: peewee rebuilt the INSERT or UPDATE for every row, which
        cost more than running it). Returns None, and peewee's own save runs, for anything
        unusual: a value that is an SQL expression, no primary key value, an UPDATE with
        nothing to write."""
        compiled = self._compiled_write(force_insert)
        if compiled is None:
            return None
        sql, values, names = compiled
        cursor = self._meta.database.execute_sql(sql, values)
        return self._written(force_insert, names, cursor)

    def insert_statement(self) -> tuple[str, list[Any]] | None:
        """This new row's INSERT as (SQL text, values) without running it (PostgreSQL only;
        None when it cannot be compiled so): for writes sent together with others (the unit
        of work's batch). Stamps updated_at as `save()` does."""
        if not isinstance(self._meta.database.obj, PmsPostgresDatabase):
            return None
        if self.env_id is None:
            self.env_id = require_env()
        elif not is_unscoped() and self.env_id != require_env():
            raise PermissionError("refusing to write a row of another env")
        self.updated_at = utcnow()
        compiled = self._compiled_write(True)
        if compiled is None:
            return None
        sql, values, names = compiled
        self._written(True, names, None)
        return sql, values

    def _written(self, inserting: bool, names: tuple[str, ...], cursor: Any) -> int:
        self._dirty -= set(names)
        if inserting:
            self._dirty.discard(self._meta.primary_key.name)
            return 1
        return cursor.rowcount

    def _compiled_write(self, force_insert: bool) -> tuple[str, list[Any], tuple[str, ...]] | None:
        cls = type(self)
        meta = cls._meta
        data = self.__data__
        pk_name = meta.primary_key.name
        pk_value = data.get(pk_name)
        if pk_value is None or self.__rel__:  # (related objects: peewee's save handles them)
            return None
        inserting = force_insert
        if inserting:
            for field, default in meta.defaults.items():  # as peewee's INSERT fills them
                if field.name not in data:
                    data[field.name] = default() if callable(default) else default
            names = tuple(f.name for f in meta.sorted_fields if f.name in data)
        else:
            names = tuple(f.name for f in meta.sorted_fields
                          if f.name in data and f.name != pk_name)
            if not names:
                return None
        fields = meta.fields
        values = []
        for name in names:
            value = data[name]
            if isinstance(value, peewee.Node):
                return None
            values.append(fields[name].db_value(value))
        scoped = not is_unscoped()
        key = (cls, inserting, scoped, names)
        sql = _SAVE_SQL.get(key)
        if sql is None:
            sql = _SAVE_SQL[key] = self._compile_save(inserting, scoped, names)
        if not inserting:
            if scoped:
                values.append(meta.fields["env_id"].db_value(require_env()))
            values.append(meta.primary_key.db_value(pk_value))
        return sql, values, names

    @classmethod
    def _compile_save(cls, inserting: bool, scoped: bool, names: tuple[str, ...]) -> str:
        """The SQL text peewee builds for this save, with %s placeholders."""
        marker = {cls._meta.fields[n]: peewee.Value(None) for n in names}
        if inserting:
            query = peewee.Model.insert.__func__(cls, marker).returning()
        else:
            query = cls.update(marker).where(cls._meta.primary_key == uuid.UUID(int=0))
        sql, params = query.sql()
        expected = len(names) + (0 if inserting else 2 if scoped else 1)
        if len(params) != expected:  # pragma: no cover - a statement we did not anticipate
            raise RuntimeError(f"cannot compile the save of {cls.__name__}")
        return sql


class AggregateModel(TenantModel):
    """A tenant row that emits events: `version` is its CloudEvent `aggregateversion`."""

    version = peewee.IntegerField(default=0)
