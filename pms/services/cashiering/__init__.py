"""Cashiering: folios and their state, postings, payments, refunds, invoices, vouchers, transaction codes, ledger postings."""
