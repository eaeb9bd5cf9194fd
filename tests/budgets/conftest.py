"""Round trips are PostgreSQL's wire: every test here runs on PostgreSQL only."""

from __future__ import annotations

import pytest


@pytest.fixture(params=[pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param
