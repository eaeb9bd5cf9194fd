"""A long-running loop's iteration owns its connection (pms.db.iteration);
the end-to-end proof is tests/e2e/test_reconnect.py."""

from __future__ import annotations

import pytest

from pms.db.database import connection_scope, db
from pms.db.iteration import NestedIterationScope, iteration_scope


def test_an_iteration_refuses_to_run_inside_an_outer_scope(database):
    with connection_scope(), pytest.raises(NestedIterationScope):
        with iteration_scope():
            pass


def test_an_iteration_closes_the_connection_it_opened(database):
    if not db.is_closed():
        db.close()
    with iteration_scope():
        db.execute_sql("SELECT 1")
        assert not db.is_closed()
    assert db.is_closed()  # the next iteration connects afresh
