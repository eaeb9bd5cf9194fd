"""A guest's data rights: the export of everything about a person and consents per purpose (scope `profiles`; a guest token reaches its own
profile only). pms.services.privacy; docs/guides/guest-data-rights.md."""

from __future__ import annotations

from typing import Any

import falcon

from pms.api.route import Route
from pms.api.spec import endpoint
from pms.schemas.common import Page
from pms.schemas.jobs import JobOut, job_out
from pms.services.privacy import access, consents, erasure, export, export_jobs
from pms.services.privacy import schemas as s

BASE = "/v1/properties/{property_id:uuid}/profiles/{id:uuid}/consents"
EXPORTS = "/v1/properties/{property_id:uuid}/profiles/{id:uuid}/personal-data/exports"


class Consents:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("profiles:read", query=s.ConsentQuery, response=Page[s.ConsentOut], guest="own",
              summary="Every consent record of the profile (grants and withdrawals, oldest "
                      "first), optionally of one purpose")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any, query: s.ConsentQuery) -> None:  # noqa: A002
        page = consents.history(req.context.ctx, property_id, id, query)
        resp.media = Page(data=[consents.consent_out(r) for r in page.items],
                          next_cursor=page.next_cursor)

    @endpoint("profiles:write", body=s.ConsentIn, response=s.ConsentOut, status=201,
              guest="own", summary="Record a grant or a withdrawal of one purpose",
              description="Appends a record (purpose, granted, source, text_version; the time "
                          "and the recording caller are the server's); records are never "
                          "changed. Withdrawing is the same call with granted false. Emits "
                          "consent:granted or consent:withdrawn (no personal data).")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.ConsentIn) -> None:  # noqa: A002
        row = consents.record(req.context.ctx, property_id, id, body)
        resp.media = consents.consent_out(row)
        resp.status = 201

    @endpoint("profiles:read", response=s.CurrentConsentOut, guest="own",
              summary="The profile's standing consent per purpose (the newest record of each)")
    def on_get_current(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                       id: Any) -> None:  # noqa: A002
        resp.media = consents.current(req.context.ctx, property_id, id)


class PersonalData:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("profiles:read", query=s.ExportQuery, response=dict, guest="own",
              also_media=("application/zip",),
              summary="Everything stored about the person (GDPR Art. 15 and 20)",
              description="A zip (manifest.json and one JSON file per kind: profile, "
                          "payment_methods, consents, reservations, registrations, room_stays, "
                          "folios, folio_lines, folio_payments, invoices, keys, messages, "
                          "service_requests, feedback, company_bindings, audit), or with "
                          "format=json the same as one document. Nothing of another person. "
                          "Each export is journaled (profile.personal_data_exported).")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any, query: s.ExportQuery) -> None:  # noqa: A002
        head, kinds = export.export(req.context.ctx, property_id, id)
        if query.format == "json":
            resp.media = export.as_document(head, kinds)
            return
        resp.content_type = "application/zip"
        resp.data = export.archive(head, kinds)
        resp.downloadable_as = f"personal-data-{id}.zip"


class PersonalDataExports:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("profiles:read", response=JobOut, status=202, guest="own",
              summary="Export everything about the person as a job (a stored zip)",
              description="202 with the job: poll GET .../personal-data/exports/{job_id} (its "
                          "progress), then download .../archive (the same zip as GET "
                          ".../personal-data, kept in object storage). Journaled like the "
                          "export.")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any) -> None:  # noqa: A002
        job = export_jobs.start(req.context.ctx, property_id, id)
        resp.media = job_out(job)
        resp.status = 202
        resp.location = f"/v1/properties/{property_id}/profiles/{id}/personal-data/exports/{job.id}"

    @endpoint("profiles:read", response=JobOut, guest="own",
              summary="An export job of the person: status and progress")
    def on_get_item(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                    id: Any, job_id: Any) -> None:  # noqa: A002
        resp.media = job_out(export_jobs.load(req.context.ctx, property_id, id, job_id))

    @endpoint("profiles:read", response=dict, guest="own", errors=(409, 410),
              also_media=("application/zip",),
              summary="The export job's archive (409 job_not_finished before it succeeded)",
              description="410 export_expired once the stored archive was deleted, "
                          "PMS_PRIVACY_EXPORT_ARCHIVE_DAYS (default 7) after the export.")
    def on_get_archive(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                       id: Any, job_id: Any) -> None:  # noqa: A002
        resp.content_type = "application/zip"
        resp.data = export_jobs.download(req.context.ctx, property_id, id, job_id,
                                         store=self.deps.platform.storage)
        resp.downloadable_as = f"personal-data-{id}.zip"


class Accesses:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("privacy:read", query=s.AccessQuery, response=Page[s.AccessOut],
              summary="Who read the person's data: one row per reader, kind of read and day",
              description="For a data-protection officer: staff, kiosk and machine reads of "
                          "the profile (what=profile), exports (personal_data) and export jobs "
                          "(export), each counted per day with its first and last time. The "
                          "person reading their own data is not recorded.")
    def on_get(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
               id: Any, query: s.AccessQuery) -> None:  # noqa: A002
        page = access.accesses(req.context.ctx, property_id, id, query)
        resp.media = Page(data=[access.access_out(r) for r in page.items],
                          next_cursor=page.next_cursor)


class Erasure:
    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("profiles:write", body=s.ErasureIn, response=s.ErasureOut, errors=(409,),
              guest="own", summary="Erase the person (anonymize), or say what would happen",
              description="Replaces the person's data with a stable pseudonym in the profile, "
                          "its stays (guest names, registrations), messages, service requests, "
                          "feedback and the journal's and outbox's images; issued invoices are "
                          "kept as issued and listed in `held` (until, why). 409 "
                          "erasure_refused naming `blockers` while a stay is CONFIRMED or "
                          "CHECKED_IN or a folio has a balance due; dry_run lists them and "
                          "changes nothing. Emits profile:erased (no personal data).")
    def on_post(self, req: falcon.Request, resp: falcon.Response, property_id: Any,
                id: Any, body: s.ErasureIn) -> None:  # noqa: A002
        resp.media = erasure.erase(req.context.ctx, property_id, id, body)


ROUTES = [
    Route(BASE, Consents),
    Route(BASE + "/current", Consents, "current"),
    Route("/v1/properties/{property_id:uuid}/profiles/{id:uuid}/personal-data", PersonalData),
    Route("/v1/properties/{property_id:uuid}/profiles/{id:uuid}/personal-data/accesses",
          Accesses),
    Route("/v1/properties/{property_id:uuid}/profiles/{id:uuid}/erasure", Erasure),
    Route(EXPORTS, PersonalDataExports),
    Route(EXPORTS + "/{job_id:uuid}", PersonalDataExports, "item"),
    Route(EXPORTS + "/{job_id:uuid}/archive", PersonalDataExports, "archive"),
]
