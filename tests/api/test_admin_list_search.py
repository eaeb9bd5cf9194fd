"""Admin lists a back office works with at a hotel's size: a name search matches a part of a
name in any case (server side, in the list's query: SQLite and PostgreSQL), and a filter of a
fixed set of values (a status) offers those values, from the schemas, and refuses others."""

from __future__ import annotations

import typing
from typing import Any

from pms.api import admin_pages, admin_ui
from pms.domain import states as st
from pms.schemas.housekeeping import TaskKind
from tests.factories import make_booking_hotel, make_profile, make_reservation
from tests.helpers import assert_problem, random_ref


def _names(api: Any, page: str, **params: Any) -> list[str]:
    resp = api.get(f"/v1/admin/{page}", params={"limit": 200, **params})
    assert resp.status_code == 200, resp.text
    return sorted(r.get("guest_last_name") or r.get("last_name") or r.get("company_name")
                  for r in resp.json["data"])


def test_profiles_and_companies_are_found_by_a_part_of_the_name_in_any_case(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    tag = random_ref("Zq").replace("-", "").replace("_", "")  # letters and digits: no wildcard
    for last in (f"{tag}Müller", f"{tag}Mueller", f"{tag}Smith"):
        make_profile(ctx, hotel.id, last_name=last, email=f"{random_ref('s')}@example.com")
    make_profile(ctx, hotel.id, kind="COMPANY", company_name=f"{tag} Grand Tours GmbH",
                 email=f"{random_ref('c')}@example.com")
    # a prefix in another case, a part in the middle, any column of the name
    found = api.get("/v1/admin/profiles", params={"name": tag.upper(), "limit": 200}).json["data"]
    assert len(found) == 4, found  # the three guests and the company (its company_name)
    assert _names(api, "profiles", name=f"{tag}m".lower(), kind="GUEST") == [
        f"{tag}Mueller", f"{tag}Müller"]
    assert _names(api, "profiles", name=f"{tag}muel") == [f"{tag}Mueller"]
    assert _names(api, "profiles", name=f"{tag}mü") == [f"{tag}Müller"]
    assert _names(api, "profiles", name=f"{tag[-3:]}sMiTh") == [f"{tag}Smith"]
    assert _names(api, "companies", name="grand TOURS") == [f"{tag} Grand Tours GmbH"]
    # control: a part that is in no name finds nothing; % and _ are letters, not wildcards
    assert _names(api, "profiles", name=f"{tag}x") == []
    assert _names(api, "profiles", name=f"{tag}%ller") == []
    assert _names(api, "profiles", name=f"{tag}M_eller") == []
    assert_problem(api.get("/v1/admin/profiles", params={"name": "x" * 101}), 422)


def test_reservations_and_the_front_desk_find_a_guest_by_a_part_of_the_name(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=2)
    tag = random_ref("Yk").replace("-", "").replace("_", "")
    for last in (f"{tag}Okonkwo", f"{tag}Okafor"):
        make_reservation(ctx, hotel, guest={"first_name": "Chi", "last_name": last})
    for page in ("reservations", "frontdesk"):
        assert _names(api, page, guest=f"{tag}oK".lower()) == [f"{tag}Okafor", f"{tag}Okonkwo"]
        assert _names(api, page, guest=f"{tag}OKON") == [f"{tag}Okonkwo"]
        assert _names(api, page, guest=f"{tag}okx") == []  # control
    listed = api.get("/v1/admin/frontdesk", params={"guest": f"{tag}okaf", "status": "CONFIRMED",
                                                    "property_id": str(hotel.id)}).json["data"]
    assert [r["guest_last_name"] for r in listed] == [f"{tag}Okafor"]


def test_a_status_filter_offers_the_schemas_values_and_refuses_others(api):
    page = api.get("/v1/admin/ui/reservations").json
    assert page["filter_options"]["status"] == [s.value for s in st.ReservationStatus]
    assert "guest" in page["filters"] and "guest" not in page["filter_options"]
    folios = api.get("/v1/admin/ui/folios").json["filter_options"]
    assert folios["status"] == [s.value for s in st.FolioStatus]
    tasks = api.get("/v1/admin/ui/housekeeping").json["filter_options"]
    assert tasks["status"] == [s.value for s in st.HkTaskStatus]
    assert tasks["kind"] == list(typing.get_args(TaskKind))
    rates = api.get("/v1/admin/ui/rates").json["filter_options"]
    assert rates["active"] == ["true", "false"]
    for name, definition in admin_pages.PAGES.items():  # each select's values are accepted
        for filter_name, values in admin_ui.filter_options(definition).items():
            resp = api.get(f"/v1/admin/{name}", params={filter_name: values[0]})
            assert resp.status_code == 200, (name, filter_name, resp.text)
    assert api.get("/v1/admin/reservations", params={"status": "CHECKED_IN"}).status_code == 200
    bad = api.get("/v1/admin/reservations", params={"status": "HAPPY"})
    assert_problem(bad, 422)
    assert "status" in bad.text
