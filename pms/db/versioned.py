"""Rows whose every write must move their owner aggregate's version.

The availability search keeps a property's rates per process by catalog version
(pms.queries.availability, the month cache), and the version moves only through events: a
rate change is an event of its rate plan (`hotel:pms:rate_schedule:updated`), whose version
goes up in the same transaction. A rate written without that event would leave every host
serving the old price until the next unrelated change of the catalog. So the rule is enforced
where the rows are written rather than trusted:

- `VersionedRows`, mixed into a model (RateSchedule, owned by its `rate_plan`), notes every
  write query it builds (insert, insert_many, update, delete, replace, save, delete_instance)
  with the owners it can name (a row's owner column), in the unit of work that runs it; a
  write outside any unit of work is refused (RuntimeError: nothing would move a version);
- the unit of work, before it commits, checks the notes (`check`): each named owner must be the
  subject of an event of that unit of work; a write whose owners it cannot name (an UPDATE or
  DELETE by condition) needs an event of at least one row of the owner's model. Otherwise it
  raises RuntimeError (a bug: 500, rolled back).
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

import peewee

from pms.db.current import current_unit_of_work


class VersionedRowsSkipped(RuntimeError):
    """A write of versioned rows whose owner's version does not move (see module docstring)."""


def _owner_id(value: Any) -> str | None:
    if value is None:
        return None
    value = getattr(value, "id", value)
    try:
        return str(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))
    except ValueError:
        return None


def note(model: Any, owners: list[str | None] | None) -> None:
    """Record a write of `model` rows (by `owners`, None when they cannot be named) in the
    current unit of work; refuse it outside one."""
    unit = current_unit_of_work()
    if unit is None:
        raise VersionedRowsSkipped(
            f"{model.__name__} rows are written only in a unit of work that emits an event of "
            f"their {model.version_owner[1]} (its version is what the caches key on)")
    named = None if owners is None or None in owners else set(owners)
    unit.versioned_writes.append((model, named))


def check(unit: Any) -> None:
    """Raise VersionedRowsSkipped unless every noted write's owners moved their version in
    `unit` (see module docstring)."""
    subjects = {event.subject for event in unit.events}
    for model, owners in unit.versioned_writes:
        if owners is not None:
            missing = owners - subjects
            if missing:
                raise VersionedRowsSkipped(
                    f"{model.__name__} rows of {model.version_owner[1]} {sorted(missing)} were "
                    "written without an event of it (its version must move with them)")
            continue
        owner_model = model._meta.fields[model.version_owner[0]].rel_model
        ids = [uuid.UUID(s) for s in subjects if _owner_id(s) is not None]
        if not ids or not owner_model.select(owner_model.id).where(
                owner_model.id.in_(ids)).exists():
            raise VersionedRowsSkipped(
                f"{model.__name__} rows were written by condition without an event of any "
                f"{model.version_owner[1]} (its version must move with them)")


class VersionedRows:
    """Mixin (before the peewee base) for a model whose writes must move its owner's version:
    `version_owner = (owner column name, owner model name)`."""

    version_owner: ClassVar[tuple[str, str]]

    @classmethod
    def _owners_of_rows(cls, rows: Any) -> list[str | None] | None:
        if not isinstance(rows, list | tuple):
            return None
        column = cls.version_owner[0]
        field = cls._meta.fields[column]
        out = []
        for row in rows:
            if not isinstance(row, dict):
                return None
            value = row.get(column, row.get(field, row.get(f"{column}_id")))
            out.append(_owner_id(value))
        return out

    @classmethod
    def insert_many(cls, rows: Any, fields: Any = None) -> peewee.ModelInsert:
        rows = list(rows) if not isinstance(rows, list | tuple) else rows
        note(cls, cls._owners_of_rows(rows) if fields is None else None)
        return super().insert_many(rows, fields)  # type: ignore[misc]

    @classmethod
    def insert(cls, data: Any = None, /, **insert: Any) -> peewee.ModelInsert:
        note(cls, cls._owners_of_rows([{**(data or {}), **insert}]))
        return super().insert(data, **insert)  # type: ignore[misc]

    @classmethod
    def replace(cls, data: Any = None, /, **insert: Any) -> peewee.ModelInsert:
        note(cls, cls._owners_of_rows([{**(data or {}), **insert}]))
        return super().replace(data, **insert)  # type: ignore[misc]

    @classmethod
    def replace_many(cls, rows: Any, fields: Any = None) -> peewee.ModelInsert:
        rows = list(rows) if not isinstance(rows, list | tuple) else rows
        note(cls, cls._owners_of_rows(rows) if fields is None else None)
        return super().replace_many(rows, fields)  # type: ignore[misc]

    @classmethod
    def insert_from(cls, query: Any, fields: Any) -> peewee.ModelInsert:
        note(cls, None)
        return super().insert_from(query, fields)  # type: ignore[misc]

    @classmethod
    def update(cls, data: Any = None, /, **update: Any) -> peewee.ModelUpdate:
        note(cls, None)
        return super().update(data, **update)  # type: ignore[misc]

    @classmethod
    def delete(cls) -> peewee.ModelDelete:
        note(cls, None)
        return super().delete()  # type: ignore[misc]

    def save(self, *args: Any, **kwargs: Any) -> int:
        note(type(self), [_owner_id(self.__data__.get(self.version_owner[0]))])
        return super().save(*args, **kwargs)  # type: ignore[misc]

    def delete_instance(self, *args: Any, **kwargs: Any) -> int:
        note(type(self), [_owner_id(self.__data__.get(self.version_owner[0]))])
        return super().delete_instance(*args, **kwargs)  # type: ignore[misc]
