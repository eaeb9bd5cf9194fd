"""Stay feedback and guest payment-method references.

Feedback: one row per reservation (unique in the database); a repeat updates it.
GuestPaymentMethod: a guest profile's reference to a payments-service token
(`payment_method_id`) with what the payments service reports of it (brand, last four, expiry);
never a card number or a secret.
"""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel
from pms.models.profiles import Profile
from pms.models.property import Property
from pms.models.reservations import Reservation


class Feedback(AggregateModel):
    property = peewee.ForeignKeyField(Property, backref="feedback", on_delete="RESTRICT",
                                      index=False)
    reservation = peewee.ForeignKeyField(Reservation, backref="feedback", on_delete="CASCADE",
                                         index=False)
    rating = peewee.SmallIntegerField()
    comment = peewee.TextField(null=True)
    submitted_by = peewee.CharField(max_length=200)

    class Meta:
        table_name = "feedback"
        indexes = ((("env_id", "reservation"), True), (("env_id", "property", "created_at"), False))


class GuestPaymentMethod(AggregateModel):
    profile = peewee.ForeignKeyField(Profile, backref="payment_methods", on_delete="CASCADE",
                                     index=False)
    payment_method_id = peewee.CharField(max_length=255)
    brand = peewee.CharField(max_length=32, null=True)
    last4 = peewee.CharField(max_length=4, null=True)
    exp_month = peewee.SmallIntegerField(null=True)
    exp_year = peewee.SmallIntegerField(null=True)

    class Meta:
        table_name = "guest_payment_method"
        indexes = ((("env_id", "profile", "payment_method_id"), True),)
