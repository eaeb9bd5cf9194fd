"""Folios: the bill of a stay, or the master folio of a room block (`block_id` set,
`reservation` None; one per block, unique index `folio_block_master`, migration 042). Charges
and payments are separate records (SPEC).

Only fields and indexes live here. A room charge is posted once per stay and night: a partial
unique index (env_id, reservation, night) WHERE kind = 'room' (migration 003) guards it.
"""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, MoneyField, TenantModel, UtcDateTimeField
from pms.models.property import Property
from pms.models.reservations import Reservation


class Folio(AggregateModel):
    # the owner: a stay, or a room block (its master folio; migration 042: exactly one is set)
    reservation = peewee.ForeignKeyField(Reservation, index=False, backref="folios",
                                         on_delete="RESTRICT", null=True)
    block_id = peewee.UUIDField(null=True)
    property = peewee.ForeignKeyField(Property, index=False, on_delete="RESTRICT")
    room_number = peewee.CharField(max_length=16, null=True)
    status = peewee.CharField(max_length=16)
    folio_type = peewee.CharField(max_length=16, default="GUEST")
    currency = peewee.CharField(max_length=3)
    closed_at = UtcDateTimeField(null=True)
    # a room block member's guest folio: the lines of its room nights that go to the block's
    # master folio instead (ROOM_AND_TAX | ROOM_TAX_AND_PACKAGES; None: none), and that folio
    # (migration 072; kept in step with the block by pms.services.groups.block_master_folio)
    routing = peewee.CharField(max_length=24, null=True)
    routing_folio_id = peewee.UUIDField(null=True)

    class Meta:
        table_name = "folio"
        indexes = ((("env_id", "reservation"), False),
                   (("env_id", "property", "room_number", "status"), False))


class FolioCharge(TenantModel):
    folio = peewee.ForeignKeyField(Folio, index=False, backref="charges", on_delete="RESTRICT")
    reservation = peewee.ForeignKeyField(Reservation, index=False, on_delete="RESTRICT",
                                         null=True)  # None: a block's master folio
    category = peewee.CharField(max_length=16)  # room, tax, F&B, mini bar, other
    description = peewee.CharField(max_length=200)
    amount = MoneyField()
    currency = peewee.CharField(max_length=3)
    quantity = peewee.IntegerField(default=1)
    business_date = peewee.DateField()
    night = peewee.DateField(null=True)
    kind = peewee.CharField(max_length=16, default="charge")  # room, charge, ...
    # Cashiering (migration 005): what the line is and where it came from.
    transaction_code = peewee.CharField(max_length=32, null=True)
    property_id = peewee.UUIDField(null=True)  # denormalized: the day's lines without a join
    parent_id = peewee.UUIDField(null=True)  # a tax line's charge line
    reversal_of = peewee.UUIDField(null=True)  # a correction line's reversed line
    moved_from_folio = peewee.UUIDField(null=True)
    reason = peewee.CharField(max_length=500, null=True)

    class Meta:
        table_name = "folio_charge"
        indexes = ((("env_id", "folio", "created_at"), False),
                   (("env_id", "reservation", "kind", "night"), False),
                   (("env_id", "property_id", "business_date"), False))


class FolioPayment(TenantModel):
    folio = peewee.ForeignKeyField(Folio, index=False, backref="payments", on_delete="RESTRICT")
    amount = MoneyField()
    currency = peewee.CharField(max_length=3)
    method = peewee.CharField(max_length=32)
    payment_method_id = peewee.CharField(max_length=128, null=True)  # payments-service reference
    status = peewee.CharField(max_length=16, default="PENDING")
    # Cashiering (migration 005): two-phase payments through the payments service.
    kind = peewee.CharField(max_length=16, default="PAYMENT")  # PAYMENT | PRE_AUTH
    idempotency_key = peewee.CharField(max_length=255, null=True)
    external_id = peewee.CharField(max_length=64, null=True)
    decline_code = peewee.CharField(max_length=64, null=True)
    pre_authorization_id = peewee.UUIDField(null=True)
    voucher_code = peewee.CharField(max_length=32, null=True)
    business_date = peewee.DateField(null=True)
    attempts = peewee.IntegerField(default=0)
    # Refunds (migration 008): a REFUND row's captured payment (null: a cash refund).
    refund_of = peewee.UUIDField(null=True)

    class Meta:
        table_name = "folio_payment"
        indexes = ((("env_id", "folio", "created_at"), False),
                   (("env_id", "idempotency_key"), True),
                   (("env_id", "status", "created_at"), False))
