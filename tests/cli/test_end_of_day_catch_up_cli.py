"""`pms-cli end-of-day` at most a day late: a business date more than a day behind the local date
is REFUSED (exit 1, night_audit_overdue naming the dates); `--catch-up` closes every missed day
in order and lands the property on its local date."""

from __future__ import annotations

import json
from datetime import timedelta

from pms.db.uow import read_scope
from pms.models import Property
from tests.cli.test_end_of_day_cli import invoke, world  # noqa: F401  (fixture)


def test_a_late_audit_is_refused_then_caught_up(world):  # noqa: F811
    ctx, hotel, env = world
    with read_scope(ctx):
        Property.update(business_date=hotel.today - timedelta(days=2)).where(
            Property.id == hotel.id).execute()
    refused = invoke(env, "end-of-day", "--env", str(ctx.env_id), "--all", "--json")
    assert refused.exit_code == 1, refused.output
    (result,) = json.loads(refused.output)["results"]
    assert result["status"] == "REFUSED" and result["code"] == "night_audit_overdue"
    assert (hotel.today - timedelta(days=2)).isoformat() in result["error"]
    done = invoke(env, "end-of-day", "--env", str(ctx.env_id), "--all", "--json",
                  "--catch-up")
    assert done.exit_code == 0, done.output
    (result,) = json.loads(done.output)["results"]
    assert result["status"] == "DONE"
    assert result["caught_up"] == [(hotel.today - timedelta(days=n)).isoformat()
                                   for n in (2, 1)]
    with read_scope(ctx):
        assert Property.get_by_id(hotel.id).business_date == hotel.today
