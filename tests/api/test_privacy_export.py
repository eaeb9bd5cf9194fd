"""Everything about a person, as a zip (manifest and one JSON file per kind) or one JSON
document: the person's stays with their folios, feedback and consents, nothing of another
guest; the guest's own token may ask for its own only; every export is journaled."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta

from pms.db.uow import read_scope
from pms.devkeys import mint_token
from pms.models import AuditEntry
from tests.factories import make_booking_hotel, make_checked_in, make_profile, make_reservation
from tests.helpers import assert_problem


def _world(api, ctx):  # noqa: ANN001, ANN202
    hotel = make_booking_hotel(ctx, rooms=3)
    ada = make_profile(ctx, hotel.id, phone="+441234567890")
    bob = make_profile(ctx, hotel.id, first_name="Robert", last_name="Sharerson")
    tomorrow = (hotel.today + timedelta(days=1)).isoformat()
    stay = make_checked_in(ctx, hotel, guest_profile_id=str(ada.id), guest=None,
                           departure_date=tomorrow)
    later = make_reservation(ctx, hotel, guest_profile_id=str(ada.id), guest=None,
                             arrival_date=(hotel.today + timedelta(days=10)).isoformat(),
                             departure_date=(hotel.today + timedelta(days=12)).isoformat())
    other = make_checked_in(ctx, hotel, guest_profile_id=str(bob.id), guest=None,
                            departure_date=tomorrow)
    base = f"/v1/properties/{hotel.id}"
    assert api.post(f"{base}/feedback", {"reservation_id": str(stay.id), "rating": 5,
                                         "comment": "lovely view"}).status_code == 201
    assert api.post(f"{base}/feedback", {"reservation_id": str(other.id), "rating": 1,
                                         "comment": "Robert was here"}).status_code == 201
    consent = {"purpose": "MARKETING_EMAIL", "granted": True, "source": "DESK",
               "text_version": "v1"}
    assert api.post(f"{base}/profiles/{ada.id}/consents", consent).status_code == 201
    assert api.post(f"{base}/profiles/{bob.id}/consents", consent).status_code == 201
    return hotel, ada, bob, stay, later, other


def test_the_export_holds_the_persons_data_and_nothing_of_anyone_else(api, ctx):
    hotel, ada, bob, stay, later, other = _world(api, ctx)
    url = f"/v1/properties/{hotel.id}/profiles/{ada.id}/personal-data"
    resp = api.get(url, params={"format": "json"})
    assert resp.status_code == 200, resp.text
    doc = resp.json
    data = doc["data"]
    assert data["profile"][0]["email"] == ada.email
    assert data["profile"][0]["phone"] == "+441234567890"
    assert {r["id"] for r in data["reservations"]} == {str(stay.id), str(later.id)}
    assert [f["comment"] for f in data["feedback"]] == ["lovely view"]
    assert [c["purpose"] for c in data["consents"]] == ["MARKETING_EMAIL"]
    assert {f["reservation_id"] for f in data["folios"]} <= {str(stay.id), str(later.id)}
    assert data["folios"], "the checked-in stay has a folio"
    assert any(a["target_id"] == str(stay.id) for a in data["audit"])
    text = json.dumps(doc)
    for foreign in (bob.email, "Sharerson", "Robert", str(other.id), str(bob.id)):
        assert foreign not in text, foreign
    counts = {f["kind"]: f["rows"] for f in doc["manifest"]["files"]}
    assert counts["reservations"] == 2 and counts["feedback"] == 1
    with read_scope(ctx):
        journal = list(AuditEntry.select().where(
            (AuditEntry.action == "profile.personal_data_exported")
            & (AuditEntry.target_id == str(ada.id))))
    assert len(journal) == 1 and journal[0].actor_sub
    assert ada.email not in json.dumps(journal[0].after)


def test_the_zip_has_a_manifest_and_one_file_per_kind(api, ctx):
    hotel, ada, *_ = _world(api, ctx)
    resp = api.get(f"/v1/properties/{hotel.id}/profiles/{ada.id}/personal-data")
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("application/zip")
    zf = zipfile.ZipFile(io.BytesIO(resp.content))
    manifest = json.loads(zf.read("manifest.json"))
    assert manifest["profile_id"] == str(ada.id)
    names = sorted(zf.namelist())
    assert names == sorted(["manifest.json", *(f["name"] for f in manifest["files"])])
    for entry in manifest["files"]:
        assert len(json.loads(zf.read(entry["name"]))) == entry["rows"]
    assert json.loads(zf.read("profile.json"))[0]["email"] == ada.email


def test_a_guest_exports_its_own_data_and_never_anothers(api, ctx):
    hotel, ada, bob, *_ = _world(api, ctx)
    token = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                       holder_id=str(ada.id))
    base = f"/v1/properties/{hotel.id}/profiles"
    own = api.get(f"{base}/{ada.id}/personal-data", params={"format": "json"}, token=token)
    assert own.status_code == 200, own.text
    assert own.json["data"]["profile"][0]["id"] == str(ada.id)
    assert_problem(api.get(f"{base}/{bob.id}/personal-data", token=token), 404)
    assert_problem(api.get(f"{base}/{ada.id}/personal-data", params={"format": "xml"}), 422)


def test_the_export_job_stores_the_archive_and_the_guest_downloads_it(kapi, ctx, platform):
    import uuid

    from pms.services import jobs

    hotel, ada, bob, *_ = _world(kapi, ctx)
    token = mint_token(kapi.settings, env_id=kapi.env_id, client_kind="guest",
                       holder_id=str(ada.id))
    base = f"/v1/properties/{hotel.id}/profiles"
    started = kapi.post(f"{base}/{ada.id}/personal-data/exports", token=token)
    assert started.status_code == 202, started.text
    job_id = started.json["id"]
    item = f"{base}/{ada.id}/personal-data/exports/{job_id}"
    assert kapi.get(item, token=token).json["status"] == "QUEUED"
    assert_problem(kapi.get(item + "/archive", token=token), 409, "job_not_finished")
    jobs.run_job(ctx, uuid.UUID(job_id), platform=platform)  # (a worker runs it)
    done = kapi.get(item, token=token).json
    assert done["status"] == "SUCCEEDED", done
    assert done["progress"]["done"] == done["progress"]["total"]
    archive = kapi.get(item + "/archive", token=token)
    assert archive.status_code == 200, archive.text
    zf = zipfile.ZipFile(io.BytesIO(archive.content))
    assert json.loads(zf.read("profile.json"))[0]["email"] == ada.email
    assert bob.email not in b"".join(zf.read(n) for n in zf.namelist()).decode()
    # another profile's path never reaches this job, nor another guest
    assert_problem(kapi.get(f"{base}/{bob.id}/personal-data/exports/{job_id}"), 404)
    bob_token = mint_token(kapi.settings, env_id=kapi.env_id, client_kind="guest",
                           holder_id=str(bob.id))
    assert_problem(kapi.get(item + "/archive", token=bob_token), 404)


def test_a_stored_archive_is_deleted_past_its_days_and_then_answers_410(kapi, ctx, platform,
                                                                        monkeypatch):
    import uuid

    from pms.context import system_ctx
    from pms.services import jobs
    from pms.services.privacy import export_jobs

    monkeypatch.setenv("PMS_PRIVACY_EXPORT_ARCHIVE_DAYS", "7")
    hotel, ada, *_ = _world(kapi, ctx)
    base = f"/v1/properties/{hotel.id}/profiles/{ada.id}/personal-data/exports"
    job_id = kapi.post(base).json["id"]
    jobs.run_job(ctx, uuid.UUID(job_id), platform=platform)
    archive = f"{base}/{job_id}/archive"
    assert kapi.get(archive).status_code == 200
    key = kapi.get(f"{base}/{job_id}").json

    def at(days: int):  # noqa: ANN202
        return system_ctx(ctx.env_id, sub="expiry-test").with_(now=ctx.now + timedelta(days=days))

    assert export_jobs.expire_archives(at(6), store=platform.storage) == 0
    assert kapi.get(archive).status_code == 200
    assert export_jobs.expire_archives(at(8), store=platform.storage) == 1
    with read_scope(ctx):
        from pms.models.platform import Job

        job = Job.get_by_id(uuid.UUID(job_id))
    assert platform.storage.get(export_jobs.archive_key(job)) is None  # the copy is gone
    assert job.result["archive"]["expired_at"]
    assert_problem(kapi.get(archive), 410, "export_expired")
    assert export_jobs.expire_archives(at(9), store=platform.storage) == 0  # once
    assert key["status"] == "SUCCEEDED"


def test_a_company_exports_its_accounts_and_its_bookings_without_the_travelers(api, ctx):
    from tests.factories import reservation_body

    hotel = make_booking_hotel(ctx, rooms=2)
    company = make_profile(ctx, hotel.id, kind="COMPANY", first_name=None, last_name=None,
                           company_name="Acme Travel", email="ap@acme.example")
    booked = api.post(f"/v1/properties/{hotel.id}/reservations", reservation_body(
        hotel, guest={"first_name": "Tina", "last_name": "Travelsworth"},
        company_profile_id=str(company.id)))
    assert booked.status_code == 201, booked.text
    doc = api.get(f"/v1/properties/{hotel.id}/profiles/{company.id}/personal-data",
                  params={"format": "json"}).json
    data = doc["data"]
    assert data["profile"][0]["company_name"] == "Acme Travel"
    for kind in ("company_users", "company_payment_methods", "receivable_accounts",
                 "company_invoices", "receivable_items", "company_bookings"):
        assert kind in data, kind
    assert [b["confirmation_number"] for b in data["company_bookings"]] == [
        booked.json["confirmation_number"]]
    assert "Travelsworth" not in json.dumps(doc)  # the traveler's data is the traveler's
    files = {f["kind"]: f["rows"] for f in doc["manifest"]["files"]}
    assert files["company_bookings"] == 1
