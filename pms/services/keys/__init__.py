"""Digital room keys and their lock-service sync."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "key_store", "keys", "lock_sync", "stay_hooks",
)

# the store: the modules that hold this capability's SQL, each reference beside its fast path
# (a stay's live keys, locked; tests/unit/test_services_plain.py keeps SQL out of the other modules)
STORE_MODULES = ("key_store",)
