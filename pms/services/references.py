"""One rule for ids in a request body: an id that names nothing the caller can see
is 422 naming the field, not 404 (that is for an id in the path) and not whatever availability
or state check would come next. tests/api/test_body_references.py checks every body's uuid
fields."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pms.errors import NotFound, ValidationFailed

if TYPE_CHECKING:
    from pms.context import Ctx


def unknown_reference(field: str, detail: str | None = None) -> ValidationFailed:
    return ValidationFailed(detail or f"{field} names nothing here",
                            code="unknown_reference",
                            errors=[{"field": field, "message": "unknown"}])


@contextlib.contextmanager
def body_reference(field: str, not_found_detail: str, ctx: Ctx | None = None) -> Iterator[None]:
    """Inside the block, the NotFound(`not_found_detail`) of loading the row the body's
    `field` names becomes 422 naming `field` (any other NotFound passes through). A holder
    session (`ctx.holder_id`) keeps the 404: CONTRACT §2 answers another holder's row 404."""
    try:
        yield
    except NotFound as exc:
        if exc.detail != not_found_detail or (ctx is not None and ctx.holder_id is not None):
            raise
        raise unknown_reference(field, f"{field}: {exc.detail}") from exc
