"""Module settings under concurrent changes: requests that read the same ETag and
change the settings at once never both win (the row lock, or the unique document per scope
when none exists yet); the losers get 412 whatever the interleaving."""

from __future__ import annotations

import threading

import pytest

from pms.db.database import db
from pms.errors import PmsError
from pms.services.catalog import settings


def _race(ctx, etag: str, threads: int) -> list[str]:
    results: list[str] = []

    def one(i: int) -> None:
        try:
            settings.patch_modules(ctx, None, {"kiosk": {"enabled": bool(i % 2)}}, if_match=etag)
            results.append("ok")
        except PmsError as exc:
            results.append(exc.code)
        finally:
            if not db.is_closed():
                db.close()

    workers = [threading.Thread(target=one, args=(i,)) for i in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(60)
    return results


@pytest.mark.postgres
def test_concurrent_first_changes_one_wins_the_others_get_412(ctx, pg_db):
    etag = settings.get_modules(ctx).etag  # no document yet: the defaults' tag
    assert sorted(_race(ctx, etag, 4)) == ["ok"] + ["precondition_failed"] * 3


@pytest.mark.postgres
def test_concurrent_changes_of_an_existing_document_one_wins(ctx, pg_db):
    first = settings.patch_modules(ctx, None, {"kiosk": {"enabled": True}},
                                   if_match=settings.get_modules(ctx).etag)
    assert sorted(_race(ctx, first.etag, 4)) == ["ok"] + ["precondition_failed"] * 3
    assert settings.get_modules(ctx).etag != first.etag
