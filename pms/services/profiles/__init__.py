"""Guest and company profiles and a guest's payment methods."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "guest_payment_methods", "profiles",
)
