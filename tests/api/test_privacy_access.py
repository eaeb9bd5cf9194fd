"""Access to a person's data is journaled: a data-protection officer asks who read a guest's
profile, exported their data or queued an export, and on which days; the guest reading their
own data is not recorded; the list takes its own scope."""

from __future__ import annotations

from pms.devkeys import mint_token
from tests.factories import make_booking_hotel, make_profile
from tests.helpers import assert_problem


def test_who_read_the_guests_data_is_answered_per_reader_and_day(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    guest = make_profile(ctx, hotel.id)
    other = make_profile(ctx, hotel.id)
    base = f"/v1/properties/{hotel.id}/profiles/{guest.id}"
    desk = mint_token(api.settings, env_id=api.env_id, sub="desk-anna")
    night = mint_token(api.settings, env_id=api.env_id, sub="night-ben")
    own = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                     holder_id=str(guest.id), sub=f"guest-{guest.id}")

    for token in (desk, desk, night):
        assert api.get(base, token=token).status_code == 200
    assert api.get(base, token=own).status_code == 200  # the guest's own read: not journaled
    assert api.get(base + "/personal-data", params={"format": "json"},
                   token=desk).status_code == 200
    assert api.post(base + "/personal-data/exports", token=night).status_code == 202
    assert api.get(f"/v1/properties/{hotel.id}/profiles/{other.id}",
                   token=desk).status_code == 200

    listed = api.get(base + "/personal-data/accesses")
    assert listed.status_code == 200, listed.text
    rows = {(r["actor_sub"], r["what"]): r for r in listed.json["data"]}
    assert set(rows) == {("desk-anna", "profile"), ("night-ben", "profile"),
                         ("desk-anna", "personal_data"), ("night-ben", "export")}
    assert rows[("desk-anna", "profile")]["reads"] == 2
    assert rows[("night-ben", "profile")]["reads"] == 1
    first = rows[("desk-anna", "profile")]
    assert first["first_at"] <= first["last_at"] and first["actor_kind"] == "user"
    assert all(r["profile_id"] == str(guest.id) for r in listed.json["data"])

    only = api.get(base + "/personal-data/accesses", params={"actor_sub": "night-ben"}).json
    assert {r["what"] for r in only["data"]} == {"profile", "export"}
    exports = api.get(base + "/personal-data/accesses", params={"what": "personal_data"}).json
    assert [r["actor_sub"] for r in exports["data"]] == ["desk-anna"]
    assert_problem(api.get(base + "/personal-data/accesses", params={"what": "gossip"}), 422)


def test_the_access_journal_takes_its_own_scope_and_never_the_guests(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    guest = make_profile(ctx, hotel.id)
    url = f"/v1/properties/{hotel.id}/profiles/{guest.id}/personal-data/accesses"
    reader = mint_token(api.settings, env_id=api.env_id,
                        scopes=["hotel:pms:profiles:read", "hotel:pms:profiles:write"])
    assert api.get(url, token=reader).status_code == 403
    own = mint_token(api.settings, env_id=api.env_id, client_kind="guest",
                     holder_id=str(guest.id))
    assert api.get(url, token=own).status_code in (403, 404)
    dpo = mint_token(api.settings, env_id=api.env_id, scopes=["hotel:pms:privacy:read"],
                     sub="dpo")
    assert api.get(url, token=dpo).status_code == 200
    assert_problem(api.get(f"/v1/properties/{hotel.id}/profiles/"
                           "00000000-0000-4000-8000-000000000000/personal-data/accesses",
                           token=dpo), 404)
