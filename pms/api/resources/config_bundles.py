"""Configuration bundles: `GET /v1/properties/{property_id}/config-bundle` exports a
property's configuration; `POST` of a bundle to another property of the env shows the
difference (`?dry_run=true`) or applies it through the domain's own service functions, in one
transaction (pms/services/admin/config_bundles.py). Scope `hotel:pms:admin`, and each section's
domain scope (docs/guides/authorization.md)."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.config_bundles import BundleApplyOut, BundleQuery, ConfigBundle
from pms.services.admin import config_bundles


class ConfigBundleResource:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("admin", response=ConfigBundle, summary="Export a property's configuration bundle",
              description="Packages, items, room types, rate plans, the kiosk configuration, the "
                          "property's module settings and the env's stored lists of values, "
                          "named by codes (no ids), with bundle_version and content_hash.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any) -> None:
        resp.media = config_bundles.export_bundle(req.context.ctx, property_id)

    @endpoint("admin", body=ConfigBundle, query=BundleQuery, response=BundleApplyOut,
              summary="Apply a configuration bundle to a property (or dry-run it)",
              description="Per row: create, update (changed fields), unchanged, kept (never "
                          "deleted); lists of values are env-wide: compared, never written. "
                          "dry_run=true writes nothing; otherwise every change is made by the "
                          "domain routes' service functions in one transaction.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                body: ConfigBundle, query: BundleQuery) -> None:
        resp.media = config_bundles.apply_bundle(req.context.ctx, property_id, body,
                                                 dry_run=query.dry_run)


ROUTES = [Route("/v1/properties/{property_id:uuid}/config-bundle", ConfigBundleResource)]
