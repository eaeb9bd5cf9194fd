"""Lists of values: `GET /v1/lov/{list}` (pms/services/catalog/lov.py names the lists) and the
env's own lists' entries, `PUT|DELETE /v1/lov/{list}/{code}` (and `GET`: one value of any list)."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.common import Page
from pms.schemas.settings import LovEntryIn, LovEntryQuery, LovItemOut, LovQuery
from pms.services.catalog import lov

IF_MATCH = (("If-Match", False, "The entry's ETag as read; 412 when it changed since"),)


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


class ListEntry:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("lov:read", query=LovEntryQuery, response=LovItemOut,
              summary="One value of a list, inactive too (404 when the list has no such code)")
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str,  # noqa: A002
               code: str, query: LovEntryQuery) -> None:
        item = lov.get_entry(req.context.ctx, list, code, parent=query.parent)
        if item.etag:
            resp.set_header("ETag", item.etag)
        resp.media = _out(item)

    @endpoint("lov:write", body=LovEntryIn, response=LovItemOut, also_status=(201,),
              errors=(409, 412), headers=IF_MATCH,
              summary="Create or replace one entry of an env's own list (201 when created)",
              description="Editable: " + ", ".join(sorted(lov.SEEDED_LISTS)) + ". Every "
              "other list derives from a request schema, the catalog or a transition table: "
              "409 lov_not_editable. A code is any text up to 64 characters without "
              "surrounding blanks (URL-encoded in the path: F%26B). A new entry goes last "
              "unless sort_order is given; a replaced one keeps its place.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, list: str,  # noqa: A002
               code: str, body: LovEntryIn) -> None:
        item, created = lov.put_entry(req.context.ctx, list, code, body,
                                      if_match=req.get_header("If-Match"))
        resp.set_header("ETag", item.etag)
        resp.media = _out(item)
        resp.status = 201 if created else 200

    @endpoint("lov:write", status=204, errors=(409, 412), headers=IF_MATCH,
              summary="Remove one entry of an env's own list",
              description="404 when the list has no such entry; 409 lov_not_editable for a "
              "list that derives from a schema, the catalog or a transition table.")
    def on_delete(self, req: falcon.Request, resp: falcon.Response, list: str,  # noqa: A002
                  code: str) -> None:
        lov.delete_entry(req.context.ctx, list, code, if_match=req.get_header("If-Match"))
        resp.status = 204


ROUTES = [Route("/v1/lov/{list}", ListOfValues), Route("/v1/lov/{list}/{code}", ListEntry)]
