"""Base models: UUID keys, timestamps, JSON columns, and the tenant-scoped model.

`TenantModel.select/update/delete/insert` refuse to run without an active tenant scope and add
`env_id = <scope>` to every query they build. PostgreSQL row-level security backs this up.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import msgspec
import peewee

from pms.db.current import CURRENT_UOW
from pms.db.database import PmsPostgresDatabase, db
from pms.db.fields import JsonField, MoneyField, UtcDateTimeField, utcnow
from pms.db.scope import is_unscoped, require_env
from pms.db.stamping import stamp_update

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

    @classmethod
    def update(cls, data: Any = None, /, **update: Any) -> peewee.ModelUpdate:
        """peewee's bulk UPDATE, stamping `updated_at` unless the caller sets it (the one
        rule, pms.db.stamping)."""
        stamp_update(cls, data, update, utcnow)
        return super().update(data, **update)

    @classmethod
    def build(cls, **values: Any) -> Any:
        """`cls(**values)` without a descriptor call per field (PERF, for the rows a
        write builds by the handful, the outbox, audit and idempotency rows): the same
        `__data__` (defaults, then the values), every column in it dirty, no related objects.
        A foreign key given as a key value (not a row object) is stored as its accessor
        stores it; anything else (a row object, an `_id` alias, a name that is no column)
        takes peewee's own constructor."""
        columns = _PLAIN_COLUMNS.get(cls)
        if columns is None:
            columns = _PLAIN_COLUMNS[cls] = _plain_columns(cls)
        plain, keys = columns
        if not plain.issuperset(values):
            for name in values.keys() - plain:
                if name not in keys or isinstance(values[name], peewee.Model):
                    return cls(**values)
        obj = cls.__new__(cls)
        data = cls._meta.get_default_dict()
        data.update(values)
        obj.__data__ = data
        obj._dirty = set(data)
        obj.__rel__ = {}
        return obj


_PLAIN_COLUMNS: dict[type, tuple[frozenset[str], frozenset[str]]] = {}


def _plain_columns(model: type) -> tuple[frozenset[str], frozenset[str]]:
    """The columns of `model` whose attribute is peewee's plain FieldAccessor (setting one only
    stores the value and marks it dirty), and its foreign keys with peewee's plain
    ForeignKeyAccessor (the same, for a value that is not a row object, on a new row)."""
    names, keys = set(), set()
    for name in model._meta.fields:
        for klass in model.__mro__:
            if name in klass.__dict__:
                kind = type(klass.__dict__[name])
                if kind is peewee.FieldAccessor:
                    names.add(name)
                elif kind is peewee.ForeignKeyAccessor:
                    keys.add(name)
                break
    return frozenset(names), frozenset(keys)


_FETCH_PLANS: dict[Any, FetchPlan] = {}
_ROW_PLANS: dict[type, RowPlan] = {}
_SAVE_SQL: dict[Any, str] = {}
_WRITE_PLANS: dict[type, _WritePlans] = {}

_NONE = type(None)
# Value types each peewee field type's db_value returns unchanged (None for every one of them):
# the compiled write skips the call for them. A field whose class overrides db_value or adapt
# otherwise is always converted.
_PASSING: dict[Any, frozenset[type]] = {
    peewee.Field.adapt: frozenset({_NONE, str, int, float, bool, bytes}),  # identity
    peewee._StringField.adapt: frozenset({_NONE, str}),
    peewee.IntegerField.adapt: frozenset({_NONE, int}),
    peewee.BooleanField.adapt: frozenset({_NONE, bool}),
}


def _column_plan(field: peewee.Field) -> tuple[str, frozenset[type], bool, Any]:
    """(name, value types passed unchanged, a UUID column, the field's db_value)."""
    kind = type(field)
    passes: frozenset[type] = frozenset()
    if kind.db_value is peewee.Field.db_value:
        passes = _PASSING.get(kind.adapt, frozenset())
    uuid_column = kind.db_value is peewee.UUIDField.db_value or (
        # a foreign key to a UUID key: its db_value is the key field's (a row object aside)
        kind.db_value is peewee.ForeignKeyField.db_value
        and type(field.rel_field).db_value is peewee.UUIDField.db_value)
    if uuid_column:
        passes = frozenset({_NONE})
    return field.name, passes, uuid_column, field.db_value


class _WritePlans:
    """What a model's compiled INSERT or UPDATE needs, worked out once per model and column set
    (PERF: the names, the converters and the defaults are not worked out again per row)."""

    def __init__(self, model: type[TenantModel]) -> None:
        meta = model._meta
        self.model = model
        self.pk_name = meta.primary_key.name
        self.pk_db_value = meta.primary_key.db_value
        self.env_db_value = meta.fields["env_id"].db_value
        self.defaults = tuple((field.name, default, callable(default))
                              for field, default in meta.defaults.items())
        self.sorted_names = tuple(f.name for f in meta.sorted_fields)
        self.columns = {f.name: _column_plan(f) for f in meta.sorted_fields}
        # a model whose rows are inserted through a PL/pgSQL function (`_insert_function`,
        # migrations 017, 030: the row as one jsonb document of the model's columns; a missing
        # value is NULL), and the columns whose value is a JSON text already (embedded as is)
        self.function: str | None = getattr(model, "_insert_function", None)
        self.json_keys = tuple(f.column_name for f in meta.sorted_fields)
        self.json_raw = tuple(isinstance(f, JsonField) for f in meta.sorted_fields)
        self._plans: dict[Any, Any] = {}

    def fill(self, data: dict[str, Any]) -> None:
        """A new row's values as peewee's INSERT fills them (the defaults); for a row inserted
        through a function, every column (one not given is NULL)."""
        for name, default, call in self.defaults:
            if name not in data:
                data[name] = default() if call else default
        if self.function is not None:
            for name in self.sorted_names:
                if name not in data:
                    data[name] = None

    def plan(self, inserting: bool, scoped: bool, data: dict[str, Any]) -> Any:
        """(SQL text, names, column plans) for a row holding `data`'s columns; None for an
        UPDATE with nothing to write."""
        key = (inserting, scoped, frozenset(data))
        plan = self._plans.get(key)
        if plan is None:
            if key in self._plans:
                return None
            names = tuple(n for n in self.sorted_names
                          if n in data and (inserting or n != self.pk_name))
            if not names:
                plan = None
            elif inserting and self.function is not None and names == self.sorted_names:
                # (one parameter: `_compiled_write` makes the document of the row's values)
                sql = f"SELECT {self.function}(%s)"
                plan = (sql, names, tuple(self.columns[n] for n in names))
            else:
                sql_key = (self.model, inserting, scoped, names)
                sql = _SAVE_SQL.get(sql_key)
                if sql is None:
                    sql = _SAVE_SQL[sql_key] = self.model._compile_save(inserting, scoped, names)
                plan = (sql, names, tuple(self.columns[n] for n in names))
            if len(self._plans) < 256:  # (column sets of one model: a handful)
                self._plans[key] = plan
        return plan


_encode_document = msgspec.json.Encoder(decimal_format="string").encode


def _row_document(plans: _WritePlans, values: list[Any]) -> str:
    """A row's column values (as `db_value` makes them) as the jsonb document a
    `pms_write_*` function inserts with `jsonb_populate_record` (migration 030): JSON columns'
    texts embedded as JSON, the other values as JSON scalars (a UUID as its hex, a timestamp as
    RFC 3339 text, a Decimal as its text), which the column's type reads back unchanged."""
    return _encode_document({
        key: (msgspec.Raw(value) if raw and value is not None else value)
        for key, raw, value in zip(plans.json_keys, plans.json_raw, values, strict=True)
    }).decode()


def _uuid_param(value: Any) -> Any:
    """What `UUIDField.db_value` makes of a UUID (its hex), without the call for the usual
    case."""
    return value.hex if type(value) is uuid.UUID else TenantModel.id.db_value(value)


# Value types that a field's `python_value` returns unchanged, by the function it reads with
# (peewee's Field.python_value defers to `adapt`): `FetchPlan` skips the call for them. A field
# whose reader is not listed is always converted.
_READ_PASSING: dict[Any, frozenset[type]] = {
    peewee.Field.adapt: frozenset({object}),  # identity: every value passes
    peewee._StringField.adapt: frozenset({_NONE, str}),
    peewee.IntegerField.adapt: frozenset({_NONE, int}),
    peewee.DateField.adapt: frozenset({_NONE, datetime.date}),
    peewee.DateTimeField.adapt: frozenset({_NONE, datetime.datetime}),
    peewee.UUIDField.python_value: frozenset({_NONE, uuid.UUID}),
    JsonField.python_value: frozenset({_NONE, dict, list, int, float, bool}),
}


def _read_passing(field: peewee.Field) -> frozenset[type]:
    kind = type(field)
    if isinstance(field, peewee.ForeignKeyField) and \
            type(field.rel_field).python_value is peewee.UUIDField.python_value:
        return _READ_PASSING[peewee.UUIDField.python_value]  # (a read row holds the key only)
    if kind.python_value is peewee.Field.python_value:
        return _READ_PASSING.get(kind.adapt, frozenset())
    return _READ_PASSING.get(kind.python_value, frozenset())


class RowPlan:
    """How to turn a row of a model's columns (in `_meta.sorted_fields` order, as the driver
    returns them) into the model object peewee's cursor wrapper would build, worked out once
    per model: each field's `python_value` called only where the driver's value is not of a
    type it returns unchanged (PERF: a call per column dominated a by-id read's cost)."""

    __slots__ = ("checks", "model", "names", "width")

    def __init__(self, model: type[TenantModel]) -> None:
        self.model = model
        fields = model._meta.sorted_fields
        self.names = tuple(f.name for f in fields)
        checks = []
        for index, field in enumerate(fields):
            passes = _read_passing(field)
            if object not in passes:
                checks.append((index, field.name, passes, field.python_value))
        self.checks = tuple(checks)
        self.width = len(fields)

    def build(self, row: Any) -> Any:
        data = dict(zip(self.names, row, strict=True))
        for index, name, passes, convert in self.checks:
            value = row[index]
            if value is not None and type(value) not in passes:
                data[name] = convert(value)
        obj = self.model.__new__(self.model)
        obj.__data__ = data
        obj._dirty = set()
        obj.__rel__ = {}
        return obj


class FetchPlan(RowPlan):
    """`TenantModel.fetch`'s SQL beside its `RowPlan`, worked out once per model and
    database."""

    __slots__ = ("sql",)

    def __init__(self, model: type[TenantModel]) -> None:
        super().__init__(model)
        marker = uuid.UUID(int=0)
        # BaseModel's select (no scope filter of its own): the env is the first parameter
        query = super(TenantModel, model).select().where(
            (model.env_id == marker) & (model.id == marker)).limit(1)
        self.sql = query.sql()[0]


class TenantSelect(peewee.ModelSelect):
    """A tenant model's SELECT: a join of two tenant models also matches their env in its ON
    clause (`dest.env_id = <scope>`, or `dest.env_id = src.env_id` under `unscoped()` and in
    the compiled statements' builders), so every table of the statement carries its env and
    probes its `(env_id, ...)` key (tests/ops/test_explicit_env_plans.py)."""

    def _normalize_join(self, src: Any, dest: Any, on: Any, attr: Any) -> Any:
        on, attr, constructor, join_ctx = super()._normalize_join(src, dest, on, attr)
        src_model, _ = self._get_model(src)
        dest_model, _ = self._get_model(dest)
        if (isinstance(on, peewee.Node) and _is_tenant(src_model) and _is_tenant(dest_model)):
            same = dest.env_id == (src.env_id if is_unscoped() else require_env())
            on = on & same
        return on, attr, constructor, join_ctx


def _is_tenant(model: Any) -> bool:
    return isinstance(model, type) and issubclass(model, TenantModel)


class TenantModel(BaseModel):
    """A row of one tenant env. Queries without an active scope raise ScopeError.

    Keys (PostgreSQL, migration 038; the rule is pms.db.shard_keys): the table's primary key is
    `(env_id, id)` and each foreign key is `(env_id, x_id) REFERENCES parent (env_id, id)`; a
    unique or exclusion constraint starts with `env_id`. Peewee cannot declare a composite
    primary key beside `id` nor a composite foreign key, so the models keep `id` as their
    logical key and `ForeignKeyField`s single-column; the migrations say the keys in SQL, and
    every query built here carries `env_id` itself (the WHERE of select/update/delete, the ON
    of a join: TenantSelect; `fetch`), not only through row-level security. SQLite keeps the
    single-column keys (it is never sharded).
    """

    env_id = peewee.UUIDField(index=False)

    @classmethod
    def key_target(cls) -> list[Any]:
        """The primary key as an upsert's conflict target: `(env_id, id)` on PostgreSQL (the
        physical key, migration 038), `(id)` on SQLite."""
        pk = cls._meta.primary_key
        if isinstance(cls._meta.database.obj, PmsPostgresDatabase):
            return [cls.env_id, pk]
        return [pk]

    @classmethod
    def _scope_filter(cls) -> peewee.Expression | None:
        if is_unscoped():
            return None
        return cls.env_id == require_env()

    @classmethod
    def select(cls, *fields: Any) -> peewee.ModelSelect:
        query = TenantSelect(cls, fields or cls._meta.sorted_fields, is_default=not fields)
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
        its SQL compiled once per model and database and the row decoded by a plan made once
        (PERF: building the query, then a `python_value` call per column, dominated the cost
        of a by-id read)."""
        if is_unscoped():
            return cls.select().where(cls.id == id_).first()
        env = require_env()
        database = cls._meta.database
        target = database.obj if isinstance(database, peewee.DatabaseProxy) else database
        plan = _FETCH_PLANS.get((cls, type(target)))
        if plan is None:
            plan = _FETCH_PLANS[(cls, type(target))] = FetchPlan(cls)
        row = target.execute_sql(plan.sql, (_uuid_param(env), _uuid_param(id_), 1)).fetchone()
        return None if row is None else plan.build(row)

    @classmethod
    def from_columns(cls, values: Any) -> Any:
        """The row object of this model's columns as a compiled statement returns them (in
        `_meta.sorted_fields` order, exactly that many: the one hydration of a hand-written
        read; `RowPlan`)."""
        plan = _ROW_PLANS.get(cls)
        if plan is None:
            plan = _ROW_PLANS[cls] = RowPlan(cls)
        return plan.build(values)

    @classmethod
    def column_count(cls) -> int:
        """How many columns `from_columns` reads."""
        return len(cls._meta.sorted_fields)

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

    def _own_env(self) -> None:
        """Give a row without an env the scope's; refuse one of another env."""
        if self.env_id is None:
            self.env_id = require_env()
        elif not is_unscoped() and self.env_id != require_env():
            raise PermissionError("refusing to write a row of another env")

    def _write(self, force_insert: bool, only: Any) -> int:
        self._own_env()
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
        self._own_env()
        self.updated_at = utcnow()
        compiled = self._compiled_write(True)
        if compiled is None:
            return None
        sql, values, names = compiled
        self._written(True, names, None)
        return sql, values

    def update_statement(self, only: tuple[str, ...] | None = None
                         ) -> tuple[str, list[Any]] | None:
        """This existing row's UPDATE as (SQL text, values) without running it, as `save()`
        would write it (every column, `updated_at` stamped), or only the columns named in
        `only` (the primary key is never written): for writes sent together with others (the
        unit of work's batch, `UnitOfWork.save`). PostgreSQL only; None when it
        cannot be compiled so (the caller then saves the row by `save()`)."""
        if not isinstance(self._meta.database.obj, PmsPostgresDatabase):
            return None
        self._own_env()
        self.updated_at = utcnow()
        if only is not None and "updated_at" not in only:
            only = (*only, "updated_at")  # the one rule (pms.db.stamping): a version too
        compiled = self._compiled_write(False, only=only)
        if compiled is None:
            return None
        sql, values, names = compiled
        self._dirty -= set(names)
        return sql, values

    def _written(self, inserting: bool, names: tuple[str, ...], cursor: Any) -> int:
        self._dirty -= set(names)
        if inserting:
            self._dirty.discard(self._meta.primary_key.name)
            return 1
        return cursor.rowcount

    def _compiled_write(self, force_insert: bool, *, only: tuple[str, ...] | None = None
                        ) -> tuple[str, list[Any], tuple[str, ...]] | None:
        cls = type(self)
        data = self.__data__
        plans = _WRITE_PLANS.get(cls)
        if plans is None:
            plans = _WRITE_PLANS[cls] = _WritePlans(cls)
        pk_value = data.get(plans.pk_name)
        if only is not None:  # an UPDATE of these columns (and the key that finds the row)
            data = {name: data.get(name) for name in (plans.pk_name, *only)}
        if pk_value is None or (self.__rel__ and not self._relations_stored()):
            return None  # (related objects without their key in the row: peewee's save)
        inserting = force_insert
        if inserting:
            plans.fill(data)
        scoped = not is_unscoped()
        plan = plans.plan(inserting, scoped, data)
        if plan is None:
            return None
        sql, names, columns = plan
        values = []
        append = values.append
        for name, passes, uuid_field, convert in columns:
            value = data[name]
            kind = type(value)
            if kind in passes:  # what the field's db_value returns unchanged
                append(value)
            elif uuid_field and kind is uuid.UUID:
                append(value.hex)
            elif isinstance(value, peewee.Node):
                return None
            else:
                append(convert(value))
        if not inserting:
            if scoped:
                values.append(plans.env_db_value(require_env()))
            values.append(plans.pk_db_value(pk_value))
        elif plans.function is not None and names == plans.sorted_names:
            values = [_row_document(plans, values)]
        return sql, values, names

    def _relations_stored(self) -> bool:
        """Whether every related object this row holds (`row.room = room`) is stored in the
        row as its key already, so that the columns alone say everything peewee's save would
        write (it fills a missing key from a related object saved since)."""
        data = self.__data__
        return all(data.get(name) is not None and data.get(name) == getattr(obj, "id", None)
                   for name, obj in self.__rel__.items())

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

    # Born: a row inserted at version 1 inside a unit of work is declared to it
    # (`UnitOfWork.born`: its first event takes version 1 with no version UPDATE), whichever
    # way it is inserted; a row inserted at version 0 takes its first version from its event.

    def _write(self, force_insert: bool, only: Any) -> int:
        rows = super()._write(force_insert, only)
        if force_insert and self.version == 1:
            self._declare_born()
        return rows

    def insert_statement(self) -> tuple[str, list[Any]] | None:
        statement = super().insert_statement()
        if statement is not None and self.version == 1:
            self._declare_born()
        return statement

    def _declare_born(self) -> None:
        uow = CURRENT_UOW.get()
        if uow is not None:
            uow.born(self)
