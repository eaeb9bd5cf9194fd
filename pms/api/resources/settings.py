"""Settings: `GET|PATCH /v1/settings/modules` (env-wide, or `?property_id=`; merge patch with
If-Match), `GET|PUT|PATCH /v1/settings/external-systems` (the whole document) and
`GET|PUT|DELETE /v1/settings/external-systems/{code}` (one system, the others untouched)."""

from __future__ import annotations

from typing import Any

import falcon
import msgspec

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.settings import (
    ExternalSystem,
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


class ExternalSystemItem:
    """One system of the document: the ETag is the document's, so a tag read here is stale
    after any change of any system (412), as on the whole document."""

    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("settings:read", response=ExternalSystem,
              summary="One external system (404 for an unknown code)")
    def on_get(self, req: falcon.Request, resp: falcon.Response, code: str) -> None:
        system, etag = settings.get_external_system(req.context.ctx, code)
        resp.set_header("ETag", etag)
        resp.media = system

    @endpoint("settings:write", body=ExternalSystem, response=ExternalSystem,
              also_status=(201,), headers=IF_MATCH_OPTIONAL, errors=(412,),
              summary="Add (201) or replace (200) one external system; the others stay",
              description="The code is lowercase letters and digits with - or _. Secrets are "
              "refused (send secret_ref), as on the whole document.")
    def on_put(self, req: falcon.Request, resp: falcon.Response, code: str,
               body: Any) -> None:
        view, created = settings.put_external_system(req.context.ctx, code,
                                                     msgspec.to_builtins(body),
                                                     if_match=req.get_header("If-Match"))
        resp.set_header("ETag", view.etag)
        resp.media = view.systems[code]
        resp.status = 201 if created else 200

    @endpoint("settings:write", status=204, headers=IF_MATCH_OPTIONAL, errors=(412,),
              summary="Remove one external system; the others stay (404 for an unknown code)")
    def on_delete(self, req: falcon.Request, resp: falcon.Response, code: str) -> None:
        view = settings.delete_external_system(req.context.ctx, code,
                                               if_match=req.get_header("If-Match"))
        resp.set_header("ETag", view.etag)
        resp.status = 204


ROUTES = [Route("/v1/settings/modules", ModuleSettings),
          Route("/v1/settings/external-systems", ExternalSystems),
          Route("/v1/settings/external-systems/{code}", ExternalSystemItem)]
