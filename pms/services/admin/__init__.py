"""The admin surface: page definitions, admin lists, submit aliases, policies."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "admin_lists", "config_bundles", "policies", "policy_decision",
)
