"""Group business: room blocks and banquet events on function spaces."""

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "banquets", "block_attrition", "block_bulk", "block_changes", "block_dates", "block_master_folio",
    "function_diary", "pickups", "room_block_inventory", "room_blocks", "rooming_lists",
)
