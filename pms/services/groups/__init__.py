"""Group business: room blocks and banquet events on function spaces."""
