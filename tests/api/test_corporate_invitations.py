"""A company ADMIN cannot bind a guest profile without the traveler's consent, through the HTTP
API on SQLite and PostgreSQL: the ADMIN's add is a PENDING invitation; the binding
(`company_user:added`, audited) exists only once the traveler accepts with their own token; a
decline or an expiry binds nothing; another guest cannot answer it (404); accept and decline
at once: one wins, the other 409. Staff still bind directly."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

from pms.db.uow import unit_of_work
from pms.models import CompanyInvitation, CompanyUser
from tests.api.test_companies import corp  # noqa: F401  (the fixture)
from tests.helpers import assert_problem, audit_actions, counts, outbox_rows


def _admin_token(corp) -> str:  # noqa: F811
    """The token of a new ADMIN of the company (bound by staff)."""
    admin = corp.traveler()
    corp.bind(admin, "ADMIN")
    return corp.token(admin)


def _invite(corp, traveler: str, role: str = "BOOKER") -> dict:  # noqa: F811
    resp = corp.api.post(f"{corp.base}/users", {"traveler_profile_id": traveler, "role": role},
                         token=_admin_token(corp))
    assert resp.status_code == 202, resp.text
    assert resp.json["status"] == "PENDING" and resp.json["role"] == role
    assert resp.headers["location"].endswith(f"/company-invitations/{resp.json['id']}")
    return resp.json


def _answer(corp, traveler: str, invitation: str, action: str,  # noqa: F811
            token: str | None = None):
    url = (f"/v1/properties/{corp.prop}/profiles/{traveler}/company-invitations/"
           f"{invitation}/{action}")
    return corp.api.post(url, None, token=token or corp.token(traveler, "guest"))


def _bound(corp, traveler: str) -> list[dict]:  # noqa: F811
    users = corp.api.get(f"{corp.base}/users").json["data"]
    return [u for u in users if u["traveler_profile_id"] == traveler]


def test_a_company_admins_add_is_an_invitation_and_binds_nothing(corp, ctx):  # noqa: F811
    traveler = corp.traveler()
    invitation = _invite(corp, traveler)
    assert _bound(corp, traveler) == []
    assert outbox_rows(ctx)[-1].type == "hotel:pms:company_invitation:created"
    # the traveler sees it on their own profile
    listed = corp.api.get(f"/v1/properties/{corp.prop}/profiles/{traveler}/company-invitations",
                          token=corp.token(traveler, "guest"))
    assert listed.status_code == 200, listed.text
    assert [(i["id"], i["status"], i["company_profile_id"]) for i in listed.json["data"]] == [
        (invitation["id"], "PENDING", corp.company)]
    # a second invitation while the first is open: 409
    again = corp.api.post(f"{corp.base}/users", {"traveler_profile_id": traveler,
                                                 "role": "VIEWER"}, token=_admin_token(corp))
    assert_problem(again, 409, "already_exists")


def test_the_traveler_accepts_and_the_binding_exists_with_its_event(corp, ctx):  # noqa: F811
    traveler = corp.traveler()
    invitation = _invite(corp, traveler, "TRAVELER")
    resp = _answer(corp, traveler, invitation["id"], "accept")
    assert resp.status_code == 200, resp.text
    assert resp.json["status"] == "ACCEPTED" and resp.json["decided_at"]
    [binding] = _bound(corp, traveler)
    assert binding["role"] == "TRAVELER" and binding["id"] == resp.json["company_user_id"]
    types = [e.type for e in outbox_rows(ctx)[-2:]]
    assert types == ["hotel:pms:company_user:added", "hotel:pms:company_invitation:accepted"]
    assert audit_actions(ctx)[-2:] == ["company_user.added", "company_invitation.accepted"]
    # answered once: a second answer is 409 and changes nothing
    before = counts(ctx)
    assert_problem(_answer(corp, traveler, invitation["id"], "accept"), 409,
                   "invitation_not_pending")
    assert_problem(_answer(corp, traveler, invitation["id"], "decline"), 409,
                   "invitation_not_pending")
    assert counts(ctx) == before


def test_decline_leaves_nothing_bound(corp, ctx):  # noqa: F811
    traveler = corp.traveler()
    invitation = _invite(corp, traveler)
    resp = _answer(corp, traveler, invitation["id"], "decline")
    assert resp.status_code == 200 and resp.json["status"] == "DECLINED", resp.text
    assert _bound(corp, traveler) == []
    assert outbox_rows(ctx)[-1].type == "hotel:pms:company_invitation:declined"
    assert_problem(_answer(corp, traveler, invitation["id"], "accept"), 409,
                   "invitation_not_pending")
    assert _bound(corp, traveler) == []
    # the company may invite again after a decline
    _invite(corp, traveler)


def test_another_guest_cannot_answer_someone_elses_invitation(corp, ctx):  # noqa: F811
    traveler, other = corp.traveler(), corp.traveler()
    invitation = _invite(corp, traveler)
    admin = _admin_token(corp)
    before = counts(ctx)
    # the other guest, on the traveler's path or on their own
    assert_problem(_answer(corp, traveler, invitation["id"], "accept",
                           token=corp.token(other, "guest")), 404)
    assert_problem(_answer(corp, other, invitation["id"], "accept",
                           token=corp.token(other, "guest")), 404)
    # nor the inviting company's ADMIN, on the traveler's behalf
    assert_problem(_answer(corp, traveler, invitation["id"], "accept",
                           token=admin), 404)
    assert_problem(_answer(corp, traveler, str(uuid.uuid4()), "decline"), 404)
    assert counts(ctx) == before
    assert _bound(corp, traveler) == []


def test_an_expired_invitation_cannot_be_accepted(corp, ctx):  # noqa: F811
    traveler = corp.traveler()
    invitation = _invite(corp, traveler)
    with unit_of_work(ctx):
        CompanyInvitation.update(expires_at=ctx.now - timedelta(seconds=1)).where(
            CompanyInvitation.id == uuid.UUID(invitation["id"])).execute()
    listed = corp.api.get(f"/v1/properties/{corp.prop}/profiles/{traveler}/company-invitations",
                          token=corp.token(traveler, "guest")).json["data"]
    assert [i["status"] for i in listed] == ["EXPIRED"]
    assert_problem(_answer(corp, traveler, invitation["id"], "accept"), 409, "invitation_expired")
    assert _bound(corp, traveler) == []
    _invite(corp, traveler)  # an expired one does not block a new invitation


def test_an_invitation_for_an_unknown_or_company_profile_is_422(corp):  # noqa: F811
    token = _admin_token(corp)
    for who in (str(uuid.uuid4()), corp.other_company, corp.company):
        assert_problem(corp.api.post(f"{corp.base}/users", {"traveler_profile_id": who,
                                                            "role": "VIEWER"}, token=token), 422)


def test_staff_still_bind_directly(corp, ctx):  # noqa: F811
    traveler = corp.traveler()
    resp = corp.api.post(f"{corp.base}/users", {"traveler_profile_id": traveler,
                                                "role": "VIEWER"})
    assert resp.status_code == 201, resp.text
    assert [u["role"] for u in _bound(corp, traveler)] == ["VIEWER"]


def test_parallel_accept_and_decline_one_wins_the_other_409(corp, ctx):  # noqa: F811
    traveler = corp.traveler()
    invitation = _invite(corp, traveler)
    token = corp.token(traveler, "guest")
    barrier = threading.Barrier(2, timeout=120)
    answers: dict[str, int] = {}

    def answer(action: str) -> None:
        barrier.wait(timeout=30)
        answers[action] = _answer(corp, traveler, invitation["id"], action, token=token).status_code

    threads = [threading.Thread(target=answer, args=(a,)) for a in ("accept", "decline")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(answers.values()) == [200, 409], answers
    with unit_of_work(ctx):
        bound = CompanyUser.select().where(
            CompanyUser.traveler_profile_id == uuid.UUID(traveler)).count()
    assert bound == (1 if answers["accept"] == 200 else 0)
