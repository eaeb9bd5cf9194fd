"""Access to a person's data is journaled (GDPR Art. 5(2), accountability): who read it, what,
when. `note(ctx, profile_id, what)` runs in the reading request's own transaction (a read of a
person's data is a write of its access record, so those routes read on the primary): one row
per person, reader, kind of read (`profile`: the profile itself; `personal_data`: the export;
`export`: an export job) and day, its `reads` counted and its first and last time kept, so a
desk that opens a profile all day writes one row, not thousands. The person reading their own
data (a guest token, holder of the profile) is not recorded; every other caller is: staff
users, kiosks, machine integrations.

`accesses(ctx, property_id, profile_id, query)` is the data-protection officer's list (scope
`privacy:read`), in the order the rows were made (first read of each day), paginated.
"""

from __future__ import annotations

import uuid
from typing import Any

from pms.context import Ctx
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope, unit_of_work
from pms.services.catalog.catalog import load_property
from pms.services.privacy import schemas as s
from pms.services.privacy.models import PersonalDataAccess
from pms.services.profiles.profiles import load_profile

WHAT = ("profile", "personal_data", "export")


def note(ctx: Ctx, profile_id: uuid.UUID, what: str) -> None:
    """Count this read of the person's data by the caller (inside the caller's transaction)."""
    if ctx.holder_id is not None and ctx.holder_id == profile_id:
        return
    now = ctx.now
    table = PersonalDataAccess
    (table.insert(id=uuid.uuid4(), env_id=ctx.env_id, profile_id=profile_id,
                  actor_sub=ctx.sub or "anonymous", actor_kind=ctx.client_kind or "unknown",
                  what=what, day=now.date(), reads=1, first_at=now, last_at=now,
                  created_at=now, updated_at=now)
     .on_conflict(conflict_target=[table.env_id, table.profile_id, table.day, table.actor_sub,
                                   table.what],
                  update={table.reads: table.reads + 1, table.last_at: now,
                          table.updated_at: now})
     .execute())


def read_profile(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID) -> Any:
    """GET of a profile: the row, its read counted in the same transaction. Raises NotFound."""
    from pms.services.profiles.profiles import get_profile

    with unit_of_work(ctx):
        row = get_profile(ctx, property_id, profile_id)
        note(ctx, profile_id, "profile")
    return row


def access_out(row: PersonalDataAccess) -> s.AccessOut:
    return s.AccessOut(id=row.id, profile_id=row.profile_id, actor_sub=row.actor_sub,
                       actor_kind=row.actor_kind, what=row.what, day=row.day, reads=row.reads,
                       first_at=row.first_at, last_at=row.last_at)


def accesses(ctx: Ctx, property_id: uuid.UUID, profile_id: uuid.UUID,
             query: s.AccessQuery) -> Page[PersonalDataAccess]:
    with read_scope(ctx):
        load_property(property_id)
        load_profile(profile_id)
        rows = PersonalDataAccess.select().where(PersonalDataAccess.profile_id == profile_id)
        if query.actor_sub is not None:
            rows = rows.where(PersonalDataAccess.actor_sub == query.actor_sub)
        if query.what is not None:
            rows = rows.where(PersonalDataAccess.what == query.what)
        return paginate(rows, PersonalDataAccess, limit=query.limit, cursor=query.cursor)


__all__ = ["WHAT", "access_out", "accesses", "note"]
