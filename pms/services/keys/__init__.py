"""Digital room keys and their lock-service sync."""
