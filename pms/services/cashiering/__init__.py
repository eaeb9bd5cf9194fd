"""Cashiering: folios and their state, postings, payments, refunds, invoices, vouchers, transaction codes, ledger postings."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "cashiering", "departure_documents", "einvoice", "facturx", "fiscal_export",
    "fiscal_journal", "fiscalization", "folio_state", "folios", "invoices", "ledger_postings",
    "master_folios", "payments", "posting", "receipts", "refunds", "transaction_codes", "vouchers",
)

# the store: the modules that hold this capability's SQL, each reference beside its fast path
# (the folio's state and closing, a payment's outcome, the fiscal journal's head; tests/unit/test_services_plain.py keeps SQL out of the other modules)
STORE_MODULES = ("folio_state", "fiscal_journal")
