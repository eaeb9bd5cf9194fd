"""Corporate accounts: company users, payment methods with approval, billing, credit limits and overrides."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "admin_provisioning", "companies", "company_billing", "company_direct_bill",
    "company_payment_methods", "credit_overrides", "invitations", "production", "rate_links",
    "receivable_accounts", "receivable_ledger", "receivables", "routing",
)
