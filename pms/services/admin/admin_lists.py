"""Admin list data: `GET /v1/admin/{resource}` rows, tenant filtered, keyset paged,
with an estimated total and never a full count.

A `ListSource` names a model, the columns a page shows, the equality filters it takes and an
optional fixed condition (companies are profiles of kind COMPANY). Rows come back as plain
dicts of those columns. The total is the planner's estimate on PostgreSQL (`EXPLAIN` of the
filtered query, under row-level security) and a count capped at `ESTIMATE_CAP` on SQLite: never
a `COUNT(*)` over the whole table (Django admin's #8408).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import peewee

from pms.context import Ctx
from pms.db.database import db
from pms.db.dialect import dialect_variant
from pms.db.pagination import paginate
from pms.db.uow import read_scope
from pms.errors import ValidationFailed
from pms.services.admin.policy_decision import NO_FILTER, RowFilter

ESTIMATE_CAP = 1000


@dataclass(frozen=True)
class Lookup:
    """A column read from another table by the row's reference (`via`): the housekeeping
    list's room number from its room_id. A page resolves each lookup in one query."""

    name: str
    via: str
    model: Any
    field: str


@dataclass(frozen=True)
class ListSource:
    model: Any
    columns: tuple[str, ...]
    filters: tuple[str, ...] = ()
    condition: Callable[[], Any] | None = None
    property_field: str | None = "property"
    extra: Callable[[Any], dict[str, Any]] = field(default=lambda row: {})
    lookups: tuple[Lookup, ...] = ()
    # name searches: filter -> the columns it matches, case-insensitively, anywhere in the
    # value (a prefix or a part of a name: "mül" finds Müller; any of the columns)
    searches: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # the values an equality filter takes, from the schemas (a status's enum): filter -> values
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def shown(self) -> tuple[str, ...]:
        """Every column a row carries: the model's and the lookups'."""
        return (*self.columns, *(lk.name for lk in self.lookups))


def model_has(model: Any, name: str) -> bool:
    """Whether `name` is one of the model's fields or columns (a foreign key's `room_id`)."""
    fields = model._meta.fields
    return name in fields or any(f.column_name == name for f in fields.values())


def _resolve_lookups(source: ListSource, rows: list[dict[str, Any]]) -> None:
    for lookup in source.lookups:
        keys = {row[lookup.via] for row in rows if row.get(lookup.via) is not None}
        found: dict[str, Any] = {}
        if keys:
            target = getattr(lookup.model, lookup.field)
            for key, value in (lookup.model.select(lookup.model.id, target)
                               .where(lookup.model.id.in_([uuid.UUID(str(k)) for k in keys]))
                               .tuples()):
                found[str(key)] = msgspec.to_builtins(value)
        for row in rows:
            row[lookup.name] = found.get(str(row.get(lookup.via)))


def property_names(ctx: Ctx, ids: set[str]) -> dict[str, str]:
    """Property id -> "CODE name", for the ids given (one query)."""
    if not ids:
        return {}
    from pms.models import Property

    with read_scope(ctx):
        return {str(i): f"{c} {n}" for i, c, n in Property.select(
            Property.id, Property.code, Property.name).where(
            Property.id.in_([uuid.UUID(i) for i in ids])).tuples()}


@dataclass(frozen=True)
class AdminRows:
    rows: list[dict[str, Any]]
    next_cursor: str | None
    estimated_total: int


def _value(row: Any, name: str) -> Any:
    return msgspec.to_builtins(getattr(row, name, None))


def _planned_rows(query: peewee.ModelSelect) -> int:
    """The planner's estimate of the query's rows (PostgreSQL: EXPLAIN, no scan)."""
    sql, params = query.sql()
    plan = db.execute_sql("EXPLAIN (FORMAT JSON) " + sql, params).fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])


@dialect_variant(_planned_rows)
def _estimate(query: peewee.ModelSelect) -> int:
    """An estimate of the query's rows: the count, capped at ESTIMATE_CAP (PostgreSQL: the
    planner's estimate)."""
    capped = query.limit(ESTIMATE_CAP)
    return int(db.execute_sql(f"SELECT count(*) FROM ({capped.sql()[0]}) AS capped",
                              capped.sql()[1]).fetchone()[0])


def _searched(query: peewee.ModelSelect, model: Any, columns: tuple[str, ...],
              value: str) -> peewee.ModelSelect:
    """Rows where any of the columns holds `value`, ignoring case (ILIKE on PostgreSQL, LIKE
    on SQLite, which folds ASCII letters only), its % and _ taken literally."""
    text = value.strip()
    if not text:
        return query
    condition = None
    for column in columns:
        part = getattr(model, column).contains(text)
        condition = part if condition is None else (condition | part)
    return query.where(condition)


def admin_rows(ctx: Ctx, source: ListSource, *, property_id: uuid.UUID | None,
               filters: dict[str, Any], limit: int, cursor: str | None,
               rows: RowFilter = NO_FILTER) -> AdminRows:
    """One keyset page of the source's rows in the caller's env (the ORM filter and RLS), and
    of those only the rows the env's policies let this caller see (`rows`, from the decision
    point: never a denied property's rows; only the allowed properties' when a set limits
    the scope to them). A list whose rows have no property is refused whole when the
    policies limit its scope by property."""
    model = source.model
    with read_scope(ctx):
        query = model.select()
        if source.condition is not None:
            query = query.where(source.condition())
        if rows.restricts:
            if source.property_field is None:
                rows.refuse()
            column = getattr(model, source.property_field)
            if rows.denied:
                query = query.where(column.not_in([uuid.UUID(p) for p in rows.denied]))
            if rows.allowed is not None:
                query = query.where(column.in_([uuid.UUID(p) for p in rows.allowed]))
        if property_id is not None:
            if source.property_field is None:
                raise ValidationFailed("this list is not per property",
                                       errors=[{"field": "property_id",
                                                "message": "not a filter of this list"}])
            query = query.where(getattr(model, source.property_field) == property_id)
        for name, value in filters.items():
            if value is None:
                continue
            if name in source.searches:
                query = _searched(query, model, source.searches[name], value)
                continue
            if name not in source.filters:
                raise ValidationFailed(f"{name} is not a filter of this list",
                                       errors=[{"field": name, "message": "not a filter"}])
            query = query.where(getattr(model, name) == value)
        estimate = _estimate(query)
        page = paginate(query, model, limit=limit, cursor=cursor)
        rows = [{"id": str(row.id), **{c: _value(row, c) for c in source.columns},
                 **source.extra(row)} for row in page.items]
        _resolve_lookups(source, rows)
    return AdminRows(rows=rows, next_cursor=page.next_cursor,
                     estimated_total=max(estimate, len(rows)))
