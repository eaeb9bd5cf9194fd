"""The profiles' store: the profile create's reads and its insert.

The reads are the property check and the look for a profile with the same email or external
reference. `find_existing` is the reference, through the models; `property_and_existing` is
the one-statement read the use case runs (`tests/services/test_profile_refs_equivalence.py`
proves them equal on random profiles). `insert_new` writes a new profile unless a unique key
is another row's."""

from __future__ import annotations

import uuid

import peewee

from pms.db.database import db
from pms.db.statements import Statement
from pms.errors import NotFound
from pms.models import Profile
from pms.schemas.profiles import ProfileIn


def find_existing(body: ProfileIn) -> Profile | None:
    """The reference: the profile with the body's email (first) or external reference."""
    if body.email:
        row = Profile.get_or_none(Profile.email_normalized == body.email.strip().lower())
        if row is not None:
            return row
    if body.external_ref:
        return Profile.get_or_none(Profile.external_ref == body.external_ref)
    return None


_PROFILE_FIELDS = tuple(Profile._meta.sorted_fields)

# PERF: the property check and the look for a profile with the same email (first) or
# external reference, in ONE statement, built once per process; the row comes back as a tuple.
# On PostgreSQL it is the PL/pgSQL function `pms_profile_refs` (migrations 014, 020, 030), whose
# plan the server keeps per connection (planning it cost more than running it).
_REFS = Statement.text(
    "profiles.ensure_refs",
    # (the profile comes back whole, as the table's row type, migration 030: named here as the
    # model lists its columns, so a column added to the table needs no change to the function)
    postgres=("SELECT r.property_found, "
              + ", ".join(f"(r.pr_row).{f.column_name}" for f in _PROFILE_FIELDS)
              + " FROM pms_profile_refs(%(env)s, %(prop)s, %(email)s, %(ref)s) r"),
    sqlite=(
        "SELECT (SELECT 1 FROM property WHERE env_id = %(env)s AND id = %(prop)s), "
        + ", ".join(f"p.{f.column_name}" for f in _PROFILE_FIELDS)
        + " FROM (SELECT 1 AS one) AS o LEFT JOIN ("
        "SELECT * FROM profile WHERE env_id = %(env)s "
        "AND (email_normalized = %(email)s OR external_ref = %(ref)s) "
        "ORDER BY CASE WHEN email_normalized = %(email)s THEN 0 ELSE 1 END LIMIT 1"
        ") AS p ON true"))


def property_and_existing(property_id: uuid.UUID, body: ProfileIn) -> Profile | None:
    """NotFound without the property; else the profile with the body's email or external
    reference (the email's first), or None. One round trip (call inside a scope)."""
    email = body.email.strip().lower() if body.email else None
    found = _REFS.one(prop=property_id, email=email, ref=body.external_ref)
    if found is None or not found[0]:
        raise NotFound("no such property")
    return None if found[1] is None else Profile.from_columns(found[1:])


def insert_new(row: Profile) -> bool:
    """INSERT the new profile; False when a unique key (email, external reference, id) is
    another row's. On PostgreSQL with ON CONFLICT DO NOTHING, so the transaction stays usable
    (a request transaction the unit of work joined goes on to read the existing row); on SQLite
    the IntegrityError is the answer (its transaction is the unit of work's own)."""
    statement = row.insert_statement()
    if statement is None:
        try:
            row.save(force_insert=True)
        except peewee.IntegrityError:
            return False
        return True
    sql, values = statement
    cursor = db.execute_sql(f"{sql} ON CONFLICT DO NOTHING RETURNING id", values)
    return cursor.fetchone() is not None
