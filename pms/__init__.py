"""Hotel property-management service. Importing this package has no side effects."""

__version__ = "0.1.0"
