"""The profile create's one read answers what its reference answers, on randomized profiles.

The read (`pms.services.profiles.profile_store.property_and_existing`: `pms_profile_refs` on
PostgreSQL, the `_REFS` statement's own text on SQLite) against the reference through the
models (`load_property`, then `find_existing`: the profile with the body's normalized email
first, else the one with its external reference): the same NotFound for a property that is not
the env's, the same profile (every column) or None otherwise. The data has profiles with an
email, an external reference, both or neither, bodies whose email differs in case or spaces,
whose email and reference name two different profiles, and another env's property and
profiles with the same emails and references (never found). The seeds are fixed, so a failure
is reproducible; each assertion names its case.
"""

from __future__ import annotations

import random
import uuid
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from pms.context import Ctx
from pms.db.uow import read_scope
from pms.errors import NotFound
from pms.models import Profile
from pms.schemas.profiles import ProfileIn
from pms.services.catalog.catalog import load_property
from pms.services.profiles import profile_store, profiles
from tests.factories import make_property


def _answer(read: Any, *args: Any) -> Any:
    try:
        found = read(*args)
    except NotFound:
        return "not found"
    return None if found is None else dict(found.__data__)


def _reference(property_id: uuid.UUID, body: Any) -> Profile | None:
    load_property(property_id)
    return profile_store.find_existing(body)


def _make_profiles(ctx: Ctx, property_id: uuid.UUID, rnd: random.Random, emails: list[str],
                   refs: list[str]) -> None:
    for i in range(24):
        kind = rnd.choice(["email", "ref", "both", "neither"])
        body = {"first_name": "Guest", "last_name": f"N{i}",
                "email": emails[i] if kind in ("email", "both") else None,
                "external_ref": refs[i] if kind in ("ref", "both") else None}
        profiles.ensure_profile(ctx, property_id, msgspec.convert(body, ProfileIn))


@pytest.mark.parametrize("seed", [4801, 4802])
def test_the_profile_read_finds_what_the_models_find(ctx, database, seed):
    rnd = random.Random(seed)
    tag = uuid.uuid4().hex[:8]  # the suite's databases are shared: this test's own values
    emails = [f"guest{i}.{tag}@example.com" for i in range(30)]
    refs = [f"CRM-{tag}-{i}" for i in range(30)]
    prop = make_property(ctx)
    _make_profiles(ctx, prop.id, rnd, emails, refs)
    other = Ctx(env_id=uuid.uuid4(), now=ctx.now)  # another env holding the same keys
    other_prop = make_property(other)
    _make_profiles(other, other_prop.id, rnd, emails, refs)

    def spelled(email: str) -> str:
        return rnd.choice([email, email.upper(), f"  {email} ", email.title()])

    answers = {"profile": 0, "none": 0, "not found": 0, "email over ref": 0}
    for case in range(160):
        email = rnd.choice([None, spelled(rnd.choice(emails))])
        ref = rnd.choice([None, rnd.choice(refs), f"CRM-{tag}-unknown"])
        property_id = rnd.choices([prop.id, other_prop.id, uuid.uuid4()], [8, 1, 1])[0]
        body = SimpleNamespace(email=email, external_ref=ref)
        with read_scope(ctx):
            fast = _answer(profile_store.property_and_existing, property_id, body)
            reference = _answer(_reference, property_id, body)
        assert fast == reference, f"case {case}: property {property_id}, {email!r}, {ref!r}"
        if isinstance(fast, dict):
            assert fast["env_id"] == ctx.env_id
            answers["profile"] += 1
            if ref is not None and fast["external_ref"] != ref:
                answers["email over ref"] += 1
        else:
            answers["none" if fast is None else "not found"] += 1
    # the control: the data exercises every answer, the email's profile winning over another
    # profile's reference included (where a read by the reference first would answer otherwise)
    assert answers["profile"] > 20 and answers["none"] > 20 and answers["not found"] > 10, answers
    assert answers["email over ref"] > 5, answers
