"""Rates: nightly schedules, restrictions, promo codes, quoting, the rate fence."""
