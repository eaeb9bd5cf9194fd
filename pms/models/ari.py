"""Distribution: the ARI stream of each room type.

`AriStream` is the aggregate behind `hotel:pms:ari:updated`: one row per room type, its `id`
the room type's id (so the event's subject is the room type), its `version` the events'
`aggregateversion`. It is kept apart from `room_type` so that selling a night never moves the
room type's own version (its ETag, the catalog's fingerprint). Rows are made on first use
(pms.services.distribution.ari_events). `released_through`: the last day whose channel-hold
releases the stream announced for a property whose day follows the clock
(pms.services.distribution.hold_releases)."""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel
from pms.models.property import Property


class AriStream(AggregateModel):
    property = peewee.ForeignKeyField(Property, backref="ari_streams", index=False,
                                      on_delete="CASCADE")
    released_through = peewee.DateField(null=True)  # migration 079

    class Meta:
        table_name = "ari_stream"
        indexes = ((("env_id", "id"), True), (("env_id", "property"), False))
