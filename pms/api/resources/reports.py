"""Reports of a property: `GET .../reports/{name}` for arrivals, departures, in-house,
occupancy-forecast, manager (from the end-of-day log) and open-folios."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.reports import ReportOut, ReportQuery
from pms.services.night_audit import reports


class Reports:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("reports:read", query=ReportQuery, response=ReportOut,
              summary="A named report for a business date",
              description="Names: " + ", ".join(sorted(reports.REPORTS)) + ". business_date "
                          "defaults to the property's current one; days bounds the forecast "
                          "and the manager report.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any, name: str,
               query: ReportQuery) -> None:
        resp.media = reports.run_report(req.context.ctx, property_id, name,
                                        day=query.business_date, days=query.days)


ROUTES = [Route("/v1/properties/{property_id:uuid}/reports/{name}", Reports)]
