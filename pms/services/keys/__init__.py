"""Digital room keys and their lock-service sync."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "keys", "lock_sync", "stay_hooks",
)
