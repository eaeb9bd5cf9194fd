"""Lists of values: `GET /v1/lov/{list}` (pms/services/catalog/lov.py names the lists)."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.common import Page
from pms.schemas.settings import LovItemOut, LovQuery
from pms.services.catalog import lov


def _out(item: lov.LovItem) -> LovItemOut:
    return LovItemOut(code=item.code, name=item.name, description=item.description,
                      active=item.active, id=item.id)


class ListOfValues:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("lov:read", query=LovQuery, response=Page[LovItemOut],
              summary="One list of values (404 for an unknown list)",
              description="Lists: " + ", ".join(lov.list_names()) + ". The `*-statuses` and "
              "`*-next-statuses?parent=<state>` lists come from the transition tables. "
              "room-types, rate-plans, packages and transaction-codes need "
              "`parent=<property id>`. Inactive values only with include_inactive=true.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str,  # noqa: A002
               query: LovQuery) -> None:
        page = lov.list_values(req.context.ctx, list, parent=query.parent,
                               include_inactive=query.include_inactive, limit=query.limit,
                               cursor=query.cursor, search=query.q)
        resp.media = Page(data=[_out(i) for i in page.items], next_cursor=page.next_cursor)


ROUTES = [Route("/v1/lov/{list}", ListOfValues)]
