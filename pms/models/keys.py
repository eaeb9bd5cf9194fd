"""Digital room keys: one key per row, scoped to a reservation and its room.

No secret is stored: no PIN, no mobile credential, only the lock provider's reference
(`credential_ref`, SPEC rule 3). `status` is the intended state (DIGITAL_KEY_MACHINE);
`lock_state` is what the lock has acknowledged or reported of the last command
(LOCK_STATE_MACHINE), driven from the outbox by `pms.services.keys.lock_sync.sync_lock`.
"""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, UtcDateTimeField
from pms.models.property import Property
from pms.models.reservations import Reservation


class DigitalKey(AggregateModel):
    property = peewee.ForeignKeyField(Property, backref="digital_keys", on_delete="RESTRICT",
                                      index=False)
    reservation = peewee.ForeignKeyField(Reservation, backref="digital_keys",
                                         on_delete="CASCADE", index=False)
    room_id = peewee.UUIDField()
    room_number = peewee.CharField(max_length=16)
    key_type = peewee.CharField(max_length=8)
    status = peewee.CharField(max_length=16)
    valid_from = UtcDateTimeField()
    valid_until = UtcDateTimeField()
    issued_by = peewee.CharField(max_length=200)
    override_reason = peewee.TextField(null=True)
    # the lock side: the last command, its state, attempts and the provider's reference
    lock_command = peewee.CharField(max_length=16)
    lock_state = peewee.CharField(max_length=16)
    lock_attempts = peewee.IntegerField(default=0)
    lock_last_error = peewee.TextField(null=True)
    lock_sent_at = UtcDateTimeField(null=True)
    lock_confirmed_at = UtcDateTimeField(null=True)
    credential_ref = peewee.CharField(max_length=200, null=True)
    # revocation: why, when, how the lock learns of it, by when it takes effect at the latest
    revoked_at = UtcDateTimeField(null=True)
    revoke_reason = peewee.CharField(max_length=24, null=True)
    revocation_path = peewee.CharField(max_length=16, null=True)
    revocation_effective_by = UtcDateTimeField(null=True)
    revocation_confirmed_at = UtcDateTimeField(null=True)
    expired_at = UtcDateTimeField(null=True)
    # a room move's pair: the new room's key names the old one it replaces, both share pair_id
    pair_id = peewee.UUIDField(null=True)
    replaces_key_id = peewee.UUIDField(null=True)
    # the profile the key is for: the stay's guest, or a companion named at issue (migration 056)
    holder_profile_id = peewee.UUIDField(null=True)

    class Meta:
        table_name = "digital_key"
        indexes = (
            (("env_id", "reservation", "status"), False),
            (("env_id", "status", "valid_until"), False),
            (("env_id", "lock_state", "updated_at"), False),
            (("env_id", "credential_ref"), False),
        )
