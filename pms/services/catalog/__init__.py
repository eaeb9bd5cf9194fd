"""The catalog and a property's configuration: properties, room types, rooms, rate plans, items, packages, images, lists of values, settings."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "catalog", "images", "lov", "settings",
)
