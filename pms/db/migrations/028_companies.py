"""Migration 028: corporate accounts: company users, company payment methods
and receivable accounts (a credit limit per company).

`company_user` binds a traveler profile to a company profile with a role, unique per (company,
traveler); `company_payment_method` is a payments-service reference with its approval status.
Both tables carry env_id, so the migrator's tenant policy (RLS) covers them on PostgreSQL.
"""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    @migrator.create_model
    class CompanyUser(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        company_profile_id = pw.UUIDField()
        traveler_profile_id = pw.UUIDField()
        role = pw.CharField(max_length=16)

        class Meta:
            table_name = "company_user"
            indexes = [(("env_id", "company_profile_id", "traveler_profile_id"), True),
                       (("env_id", "traveler_profile_id"), False)]

    @migrator.create_model
    class CompanyPaymentMethod(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        company_profile_id = pw.UUIDField()
        payment_method_id = pw.CharField(max_length=128)
        label = pw.CharField(max_length=200, null=True)
        status = pw.CharField(max_length=24)
        reason = pw.CharField(max_length=500, null=True)

        class Meta:
            table_name = "company_payment_method"
            indexes = [(("env_id", "company_profile_id", "payment_method_id"), True)]

    @migrator.create_model
    class CompanyReceivableAccount(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        company_profile_id = pw.UUIDField()
        credit_limit = pmsf.MoneyField()
        currency = pw.CharField(max_length=3)

        class Meta:
            table_name = "company_receivable_account"
            indexes = [(("env_id", "company_profile_id"), True)]

    @migrator.create_model
    class CompanyBilling(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        company_profile_id = pw.UUIDField()
        company_payment_method_id = pw.UUIDField()
        reservation_id = pw.UUIDField()
        property_id = pw.UUIDField()

        class Meta:
            table_name = "company_billing"
            indexes = [(("env_id", "reservation_id"), True),
                       (("env_id", "company_profile_id"), False)]

    @migrator.create_model
    class CompanyCreditOverride(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        company_profile_id = pw.UUIDField()
        amount = pmsf.MoneyField()
        currency = pw.CharField(max_length=3)
        reason = pw.CharField(max_length=500)
        expires_at = pmsf.UtcDateTimeField()
        status = pw.CharField(max_length=16)
        requested_by = pw.CharField(max_length=255)
        decided_by = pw.CharField(max_length=255, null=True)

        class Meta:
            table_name = "company_credit_override"
            indexes = [(("env_id", "company_profile_id", "status"), False)]


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_model("company_credit_override")
    migrator.remove_model("company_billing")
    migrator.remove_model("company_receivable_account")
    migrator.remove_model("company_payment_method")
    migrator.remove_model("company_user")
