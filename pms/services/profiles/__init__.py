"""Guest and company profiles and a guest's payment methods."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "guest_payment_methods", "profiles",
)

# the store: the modules that hold this capability's SQL, each reference beside its fast path
# (the profile create's reads and insert; tests/unit/test_services_plain.py keeps SQL out of the other modules)
STORE_MODULES = ("profile_store",)
