"""`pms-cli demo seed`: a demo hotel (room types, rooms, rate plans, a guest). Idempotent."""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
import typer

from cli.hotelsim.demo_month import DEMO_TIMEZONE
from cli.output import emit, open_database
from pms.config import Settings, load_settings

app = typer.Typer(help="Demo data.")

DEMO_ENV_ID = uuid.UUID("00000000-0000-4000-8000-00000000de00")
DEMO_CODE = "DEMO1"


def seed_demo(settings: Settings, env_id: uuid.UUID, *, now: Any = None) -> dict[str, Any]:
    """Create the demo hotel in `env_id` unless it exists; return what is there (the caller
    has bound the database and holds the connection scope). `now`: the moment it opens (its
    business date, its rates from then; the living month opens it in the past)."""
    from pms.context import system_ctx
    from pms.db.uow import read_scope
    from pms.models import Property, RatePlan, Room, RoomType
    from pms.models.cashiering import TransactionCode
    from pms.models.settings import LovEntry
    from pms.platform import build_platform
    from pms.schemas import catalog as s
    from pms.schemas.profiles import ProfileIn
    from pms.services.catalog import catalog
    from pms.services.environments import initialize_environment
    from pms.services.profiles import profiles

    ctx = system_ctx(env_id, sub="demo-seed")
    if now is not None:
        ctx = ctx.with_(now=now)
    with read_scope(ctx):
        prop = Property.get_or_none(Property.code == DEMO_CODE)
    created = prop is None
    if created:
        prop = catalog.create_property(ctx, msgspec.convert({
            "propertyCode": DEMO_CODE, "name": "Demo Grand Hotel", "timezone": DEMO_TIMEZONE,
            "currencyCode": "EUR", "languages": ["en", "de"],
            "displayAddress": {"line1": "Unter den Linden 1", "city": "Berlin",
                               "postalCode": "10117", "countryCode": "DE"},
            "contacts": {"phone": "+49 30 123456", "email": "frontdesk@demo-grand.example"},
        }, s.PropertyIn))
        types = {}
        for code, name, occ, numbers in (
            ("STD", "Standard Double", 2, [str(n) for n in range(101, 111)]),
            ("DLX", "Deluxe King", 3, [str(n) for n in range(201, 206)]),
            ("STE", "Junior Suite", 4, ["301", "302"]),
        ):
            rt = catalog.create_child(ctx, catalog.ROOM_TYPE, prop.id, msgspec.convert(
                {"code": code, "name": name, "max_occupancy": occ}, s.RoomTypeIn))
            types[code] = rt
            for number in numbers:
                catalog.create_child(ctx, catalog.ROOM, prop.id, msgspec.convert(
                    {"room_number": number, "room_type_id": str(rt.id), "floor": number[0]},
                    s.RoomIn))
        for code, name, negotiated in (("BAR", "Best Available Rate", False),
                                       ("CORP", "Corporate Negotiated", True)):
            catalog.create_child(ctx, catalog.RATE_PLAN, prop.id, msgspec.convert(
                {"code": code, "name": name, "negotiated": negotiated,
                 "cancellation_policy": {"fee_type": "FIRST_NIGHT", "deadline_hours": 24},
                 "no_show_policy": {"fee_type": "FIRST_NIGHT"}}, s.RatePlanIn))
        profiles.ensure_profile(ctx, prop.id, msgspec.convert(
            {"first_name": "Grace", "last_name": "Hopper", "email": "grace@example.com"},
            ProfileIn))
        for hook in SEED_HOOKS:
            hook(ctx, prop)
    # also on a demo hotel seeded before the codes were part of it (idempotent)
    seed_transaction_codes(ctx, prop)
    # the env's lists of values and module settings, as the platform's event would
    initialize_environment(env_id, ledger=build_platform(settings).ledger,
                           source_event_id="demo-seed")
    day = seed_business_date(ctx, prop.id)
    with read_scope(ctx):
        return {
            "env_id": str(env_id), "property_id": str(prop.id), "created": created,
            "business_date": day.isoformat(),
            "room_types": RoomType.select().where(RoomType.property == prop.id).count(),
            "rooms": Room.select().where(Room.property == prop.id).count(),
            "rate_plans": RatePlan.select().where(RatePlan.property == prop.id).count(),
            "transaction_codes": TransactionCode.select().where(
                TransactionCode.property == prop.id).count(),
            "lists_of_values": LovEntry.select().count(),
        }


def seed_business_date(ctx: Any, property_id: Any) -> Any:
    """The demo property's business date, set once to its local calendar date (Europe/Berlin)
    when it has none, so "today" for the demo is the hotel's, not the server's time zone's;
    the night audit moves it on from there. Returns it."""
    from pms.db.uow import unit_of_work
    from pms.domain.business_date import local_today
    from pms.models import Property

    with unit_of_work(ctx) as uow:
        prop = Property.get(Property.id == property_id)
        if prop.business_date is not None:
            return prop.business_date
        day = local_today(ctx.now, prop.timezone)
        Property.update(business_date=day).where(Property.id == prop.id).execute()
        uow.audit("property.business_date_set", prop, before={"business_date": None},
                  after={"business_date": day.isoformat()})
        return day


# Later capabilities (rates, inventory) add their demo data here: fn(ctx, property).
SEED_HOOKS: list[Any] = []


DEMO_DAYS = 30


def seed_living_demo(settings: Settings, env_id: uuid.UUID, *, days: int = DEMO_DAYS,
                     progress: Any = None) -> dict[str, Any]:
    """The demo hotel with a lived month: opened `days` days ago, its past lived and the month
    ahead booked through the API (cli.hotelsim.demo_month) when it is new; as it is otherwise.
    `days` 0: opened today, nothing lived."""
    from cli.hotelsim.demo_month import live_month, opening_moment

    opened = opening_moment(days) if days > 0 else None
    summary = seed_demo(settings, env_id, now=opened)
    if summary["created"] and days > 0:
        month = live_month(settings, env_id, summary["property_id"], days=days, opened=opened,
                           progress=progress)
        summary = {**summary, **{f"month_{k}": v for k, v in month.items()},
                   "business_date": month["business_date"]}
    return summary


@app.callback(invoke_without_command=True)
def demo(ctx: typer.Context,
         days: int = typer.Option(None, "--days", min=0, max=365,
                                  help="Open the demo hotel DAYS days ago and live them through "
                                       "the API: a month of history and the month ahead booked."),
         env: uuid.UUID = typer.Option(DEMO_ENV_ID, "--env", help="Tenant env id."),
         json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Demo data: `pms-cli demo --days 30` makes a demo hotel with a lived month."""
    if ctx.invoked_subcommand is not None:
        return
    if days is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(0)
    settings = load_settings()
    open_database(settings)
    from rich.progress import Progress

    with Progress(transient=True, disable=json_out) as bar:
        task = bar.add_task("living the demo month", total=days)
        summary = seed_living_demo(settings, env, days=days,
                                   progress=lambda done, _total: bar.update(task, completed=done))
    if not summary["created"]:
        summary["note"] = "the demo hotel exists: its month was lived when it was made"
    emit(summary, as_json=json_out, title="Demo hotel", columns=["field", "value"],
         rows=[[k, v] for k, v in summary.items()])


@app.command()
def seed(env: uuid.UUID = typer.Option(DEMO_ENV_ID, "--env", help="Tenant env id."),
         json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Create the demo hotel (skipped when it exists)."""
    settings = load_settings()
    open_database(settings)  # a clear message, not a traceback, when not migrated
    summary = seed_demo(settings, env)
    emit(summary, as_json=json_out, title="Demo hotel", columns=["field", "value"],
         rows=[[k, v] for k, v in summary.items()])


def _seed_rates(ctx: Any, prop: Any) -> None:
    """Rates for every room type and rate plan for the next 365 days (from the property's local
    date), a pre-created inventory calendar, and a WELCOME10 promo code, so `make run` can sell."""
    from datetime import timedelta
    from decimal import Decimal

    from pms.clock import local_today
    from pms.db.uow import read_scope
    from pms.models import RatePlan, RoomType
    from pms.schemas.rates import PromoCodeIn, RatesIn
    from pms.services.inventory import inventory
    from pms.services.rates import rates

    start = local_today(ctx.now, prop.timezone)
    end = start + timedelta(days=364)
    base = {"STD": "120.00", "DLX": "180.00", "STE": "260.00"}
    with read_scope(ctx):
        types = list(RoomType.select().where(RoomType.property == prop.id))
        plans = list(RatePlan.select().where(RatePlan.property == prop.id))
    for plan in plans:
        factor = "0.85" if plan.negotiated else "1"
        entries = [{"room_type_id": str(rt.id), "from_date": str(start), "to_date": str(end),
                    "amount": str((Decimal(base.get(rt.code, "100.00")) * Decimal(factor))
                                  .quantize(Decimal("0.01")))}
                   for rt in types]
        rates.set_rates(ctx, prop.id, plan.id, msgspec.convert({"rates": entries}, RatesIn))
    for rt in types:
        inventory.ensure_inventory(ctx, prop.id, rt.id, start, end + timedelta(days=1))
    rates.create_promo(ctx, prop.id, msgspec.convert(
        {"code": "WELCOME10", "discount_type": "PERCENT", "discount_value": "10",
         "description": "10% off the room for demo guests"}, PromoCodeIn))


SEED_HOOKS.append(_seed_rates)


# The demo hotel's charge codes (Berlin: VAT included, 7 % on lodging, 19 % on food and drink),
# so the first room night, F&B or minibar charge on a fresh `make run` posts instead of failing
# with an unknown transaction code.
DEMO_TRANSACTION_CODES: tuple[dict[str, Any], ...] = (
    {"code": "ROOM", "name": "Lodging", "category": "room", "ledger_account": "room_revenue",
     "tax_rules": [{"code": "VAT7", "kind": "percentage", "rate": "7", "inclusive": True,
                    "name": "VAT 7%"}]},
    {"code": "FB", "name": "Restaurant and bar", "category": "F&B",
     "ledger_account": "fnb_revenue",
     "tax_rules": [{"code": "VAT19", "kind": "percentage", "rate": "19", "inclusive": True,
                    "name": "VAT 19%"}]},
    {"code": "MINIBAR", "name": "Minibar", "category": "mini bar",
     "ledger_account": "fnb_revenue",
     "tax_rules": [{"code": "VAT19", "kind": "percentage", "rate": "19", "inclusive": True,
                    "name": "VAT 19%"}]},
    {"code": "MISC", "name": "Miscellaneous", "category": "other",
     "ledger_account": "other_revenue"},
)


def seed_transaction_codes(ctx: Any, prop: Any) -> None:
    """Create the demo transaction codes the property does not have yet."""
    from pms.db.uow import read_scope
    from pms.models.cashiering import TransactionCode
    from pms.schemas.cashiering import TransactionCodeIn
    from pms.services.cashiering.transaction_codes import TRANSACTION_CODE
    from pms.services.catalog import catalog

    with read_scope(ctx):
        have = {c.code for c in TransactionCode.select(TransactionCode.code).where(
            TransactionCode.property == prop.id)}
    for body in DEMO_TRANSACTION_CODES:
        if body["code"] not in have:
            catalog.create_child(ctx, TRANSACTION_CODE, prop.id,
                                 msgspec.convert(body, TransactionCodeIn))
