"""The front desk: check-in, walk-in, check-out, stay feedback."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "checkin", "checkout", "feedback",
)
