"""Migration 061: `company_invitation`, a company ADMIN's request to bind a guest profile to its
company. The binding (`company_user`) exists only once the traveler accepts through their own
token; a declined or expired invitation binds nothing (pms.services.corporate.invitations)."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf
from pms.db.shard_keys import create_tenant_model


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    create = create_tenant_model(migrator, database)

    @create
    class CompanyInvitation(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        company_profile_id = pw.UUIDField()
        traveler_profile_id = pw.UUIDField()
        property_id = pw.UUIDField()
        role = pw.CharField(max_length=16)
        status = pw.CharField(max_length=16)
        expires_at = pmsf.UtcDateTimeField()
        invited_by = pw.CharField(max_length=255)
        decided_at = pmsf.UtcDateTimeField(null=True)

        class Meta:
            table_name = "company_invitation"
            indexes = [(('env_id', 'traveler_profile_id', 'status'), False),
                       (('env_id', 'company_profile_id', 'traveler_profile_id'), False)]


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_model('company_invitation')
