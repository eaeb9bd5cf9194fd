"""Distribution: the ARI stream of each room type.

`AriStream` is the aggregate behind `hotel:pms:ari:updated`: one row per room type, its `id`
the room type's id (so the event's subject is the room type), its `version` the events'
`aggregateversion`. It is kept apart from `room_type` so that selling a night never moves the
room type's own version (its ETag, the catalog's fingerprint). Rows are made on first use
(pms.services.distribution.ari_events)."""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel
from pms.models.property import Property


class AriStream(AggregateModel):
    property = peewee.ForeignKeyField(Property, backref="ari_streams", index=False,
                                      on_delete="CASCADE")

    class Meta:
        table_name = "ari_stream"
        indexes = ((("env_id", "id"), True), (("env_id", "property"), False))
