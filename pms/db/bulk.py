"""Many new rows of the current env in few statements (inside a transaction)."""

from __future__ import annotations

import uuid
from typing import Any

from pms.db.database import db
from pms.db.dialect import fast_path
from pms.db.scope import require_env


def _bulk_insert_pg(model: Any, rows: list[dict[str, Any]]) -> None:
    """`bulk_insert` on PostgreSQL: one multi-row statement per 1,000 rows with psycopg2's
    execute_values (peewee's per-value SQL building cost more than the database)."""
    if not rows:
        return
    from psycopg2.extras import execute_values

    env = require_env()
    fields = [model._meta.fields[name] for name in rows[0]] + [model._meta.fields["env_id"]]
    columns = ", ".join(f'"{f.column_name}"' for f in fields)
    names = [f.name for f in fields[:-1]]
    # plain values need no peewee conversion: UUIDs as text, the rest as psycopg2 adapts them
    values = [tuple(v.hex if isinstance(v, uuid.UUID) else v for v in map(row.__getitem__, names))
              + (env.hex,) for row in rows]
    sql = f'INSERT INTO "{model._meta.table_name}" ({columns}) VALUES %s'
    execute_values(db.cursor(), sql, values, page_size=1000)


@fast_path(_bulk_insert_pg)
def bulk_insert(model: Any, rows: list[dict[str, Any]]) -> None:
    """Insert many rows of the current env, given as dicts of the same fields (inside a
    transaction): peewee's insert_many, 500 rows a statement."""
    for start in range(0, len(rows), 500):
        model.insert_many(rows[start:start + 500]).execute()
