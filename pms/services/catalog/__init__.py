"""The catalog and a property's configuration: properties, room types, rooms, rate plans, items, packages, images, lists of values, settings."""
