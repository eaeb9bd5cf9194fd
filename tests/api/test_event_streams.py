"""Every event stream rises by one (CONTRACT §4: `aggregateversion` increases by one with every
change of the aggregate the type names): a rate plan's changes are announced as `rate_plan`,
`rate_schedule`, `rate_plan_allotment` and `restriction` events, each on its own stream, while
the plan's own version (its ETag, the rate caches' key) moves with every one of them."""

from __future__ import annotations

from collections import defaultdict

from pms.db.uow import read_scope
from pms.models import OutboxEvent, RatePlan


def test_each_aggregate_of_a_rate_plan_counts_its_own_versions(api, ctx):
    prop = api.post("/v1/properties", {"propertyCode": "ES" + str(ctx.env_id)[:6].upper(),
                                       "timezone": "UTC", "currencyCode": "EUR"}).json["id"]
    base = f"/v1/properties/{prop}"
    rt = api.post(f"{base}/room-types", {"code": "DBL", "name": "Double"}).json["id"]
    plan = api.post(f"{base}/rate-plans", {"code": "BAR", "name": "Best"}).json["id"]
    night = {"room_type_id": rt, "from_date": "2031-01-01", "to_date": "2031-01-03"}
    for amount in ("100.00", "110.00"):
        assert api.put(f"{base}/rate-plans/{plan}/rates",
                       {"rates": [{**night, "amount": amount}]}).status_code == 200
        assert api.put(f"{base}/rate-plans/{plan}/allotments",
                       {**night, "allotment": 2}).status_code == 200
        assert api.put(f"{base}/rate-plans/{plan}/restrictions",
                       {"from_date": "2031-01-01", "to_date": "2031-01-02",
                        "min_los": 2}).status_code == 200
    assert api.put(f"{base}/rate-plans/{plan}", {"name": "Best available"}).status_code == 200
    streams = defaultdict(list)
    with read_scope(ctx):
        for e in OutboxEvent.select().where(OutboxEvent.subject == plan):
            streams[e.aggregate_type].append(e.aggregate_version)
        row = RatePlan.get_by_id(plan)
    assert {k: sorted(v) for k, v in streams.items()} == {
        "rate_plan": [1, 2], "rate_schedule": [1, 2], "rate_plan_allotment": [1, 2],
        "restriction": [1, 2]}
    assert row.version == 8  # the row moved with each of its eight changes
