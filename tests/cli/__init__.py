"""Test package: unique module names across test folders (tests/api/test_x vs tests/services/test_x)."""
