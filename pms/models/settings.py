"""Lists of values, settings documents and property images. Fields and indexes only.

`LovEntry` holds the env's own lists (seeded by environment initialization, edited by the env: an
aggregate, so each change is an event); lists generated from the catalog, the request schemas or
the transition tables are not stored. `SettingsDocument` is one JSON document per
(kind, scope): the module configuration of the env (`scope_key` "env") or of one property
(`scope_key` = the property id), and the env's external systems. `PropertyImage` keeps the object
key and checksum of an image stored in the object-storage service, never its bytes.
"""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, JsonField
from pms.models.property import Property

ENV_SCOPE = "env"


class LovEntry(AggregateModel):
    """One value of one of the env's lists (`list_name` kebab-case, as in `/v1/lov/{list}`)."""

    list_name = peewee.CharField(max_length=64)
    code = peewee.CharField(max_length=64)
    name = peewee.CharField(max_length=200)
    description = peewee.TextField(null=True)
    active = peewee.BooleanField(default=True)
    sort_order = peewee.IntegerField(default=0)

    class Meta:
        table_name = "lov_entry"
        indexes = ((("env_id", "list_name", "code"), True),)


class SettingsDocument(AggregateModel):
    """A settings document: `kind` "modules" (per scope) or "external_systems" (env only)."""

    kind = peewee.CharField(max_length=32)
    scope_key = peewee.CharField(max_length=64)
    property = peewee.ForeignKeyField(Property, null=True, on_delete="CASCADE", index=False)
    document = JsonField(default=dict)

    class Meta:
        table_name = "settings_document"
        indexes = ((("env_id", "kind", "scope_key"), True),)


class PropertyImage(AggregateModel):
    """An image of a property; at most one `is_primary` per property (a partial unique index,
    migration 026, on both databases)."""

    property = peewee.ForeignKeyField(Property, backref="images", on_delete="RESTRICT",
                                      index=False)
    object_key = peewee.CharField(max_length=300)
    sha256 = peewee.CharField(max_length=64)
    content_type = peewee.CharField(max_length=32)
    size_bytes = peewee.IntegerField()
    caption = peewee.CharField(max_length=500, null=True)
    is_primary = peewee.BooleanField(default=False)

    class Meta:
        table_name = "property_image"
        indexes = ((("env_id", "property", "created_at"), False),)
