"""Rates: nightly schedules, restrictions, promo codes, quoting, the rate fence."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "negotiated_plans", "pricing", "rate_fence", "rates",
)
