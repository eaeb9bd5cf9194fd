"""Inventory: rooms sold per type and night under night locks, the calendar, recounts, availability searches."""
