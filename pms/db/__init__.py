"""Database access: the proxy, its factory, the tenant scope and the unit of work."""

from pms.db.database import db, init_db, is_postgres

__all__ = ["db", "init_db", "is_postgres"]
