"""Settings: `GET|PATCH /v1/settings/modules` (env-wide, or `?property_id=`; merge patch with
If-Match) and `GET|PUT|PATCH /v1/settings/external-systems`."""

from __future__ import annotations

from typing import Any

import falcon
import msgspec

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.settings import (
    ExternalSystemsIn,
    ExternalSystemsOut,
    ExternalSystemsPatch,
    ModulesOut,
    ModulesPatch,
    SettingsQuery,
)
from pms.services.catalog import settings

MERGE_PATCH = "application/merge-patch+json"
IF_MATCH_REQUIRED = (("If-Match", True, "The ETag of the settings read (428 without it, 412 "
                                        "when they changed since)"),)
IF_MATCH_OPTIONAL = (("If-Match", False, "The ETag read; 412 when the systems changed since"),)


class ModuleSettings:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("settings:read", query=SettingsQuery, response=ModulesOut,
              summary="Module settings in effect (a property's over the env's with property_id)")
    def on_get(self, req: falcon.Request, resp: falcon.Response, query: SettingsQuery) -> None:
        view = settings.get_modules(req.context.ctx, query.property_id)
        resp.set_header("ETag", view.etag)
        resp.media = view.out()

    @endpoint("settings:write", query=SettingsQuery, body=ModulesPatch, response=ModulesOut,
              body_media=MERGE_PATCH, headers=IF_MATCH_REQUIRED, errors=(412, 428),
              summary="Change module settings by an RFC 7396 merge patch (If-Match required)",
              description="`{\"blocks\": {\"tentative_deducts_inventory\": true}}` sets one "
              "switch; null removes an override (the env's value, or the default, applies).")
    def on_patch(self, req: falcon.Request, resp: falcon.Response, query: SettingsQuery,
                 body: Any) -> None:
        view = settings.patch_modules(req.context.ctx, query.property_id, body,
                                      if_match=req.get_header("If-Match"))
        resp.set_header("ETag", view.etag)
        resp.media = view.out()


class ExternalSystems:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("settings:read", response=ExternalSystemsOut,
              summary="The env's external systems (endpoints, identifiers, secret references)")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        view = settings.get_external_systems(req.context.ctx)
        resp.set_header("ETag", view.etag)
        resp.media = view.out()

    @endpoint("settings:write", body=ExternalSystemsIn, response=ExternalSystemsOut,
              headers=IF_MATCH_OPTIONAL, errors=(412,),
              summary="Replace the env's external systems (secrets refused: send secret_ref)")
    def on_put(self, req: falcon.Request, resp: falcon.Response, body: Any) -> None:
        view = settings.change_external_systems(req.context.ctx, msgspec.to_builtins(body),
                                                replace=True,
                                                if_match=req.get_header("If-Match"))
        resp.set_header("ETag", view.etag)
        resp.media = view.out()

    @endpoint("settings:write", body=ExternalSystemsPatch, response=ExternalSystemsOut,
              body_media=MERGE_PATCH, headers=IF_MATCH_OPTIONAL, errors=(412,),
              summary="Change the env's external systems by an RFC 7396 merge patch")
    def on_patch(self, req: falcon.Request, resp: falcon.Response, body: Any) -> None:
        view = settings.change_external_systems(req.context.ctx, body, replace=False,
                                                if_match=req.get_header("If-Match"))
        resp.set_header("ETag", view.etag)
        resp.media = view.out()


ROUTES = [Route("/v1/settings/modules", ModuleSettings),
          Route("/v1/settings/external-systems", ExternalSystems)]
