"""Housekeeping: room status, tasks, out-of-order and out-of-service periods."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "housekeeping", "maintenance",
)
