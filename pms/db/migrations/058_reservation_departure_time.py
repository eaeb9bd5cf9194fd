"""Migration 058: `reservation.departure_time`, a late (or early) check-out: the local "HH:MM"
at which the stay leaves on its departure date, instead of the property's check-out time. The
stay's keys end then (pms.services.keys.keys.valid_until_for)."""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('reservation', departure_time=pw.CharField(max_length=5, null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('reservation', 'departure_time')
