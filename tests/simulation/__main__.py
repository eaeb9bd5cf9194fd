"""`make simulate`: a hotel's month at length, every invariant after every step.

    python -m tests.simulation --days 30 --rooms 300 --seed 7 [--database sqlite]

The same machine as the suite's short form (tests/simulation/machine.py), driven by a seeded
walk instead of Hypothesis's search: each day, `--acts` acts drawn from the machine's rules
(their own argument strategies, drawn with the seed), then the desk's evening (most of the day's
arrivals check in, every departure due checks out, settled), then the night audit. A failure
prints the seed, the day, the step log of the day so far and the replay command; the figures
(steps, checks by rule, steps per second) are printed at the end and written as JSON with
`--json`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from hypothesis import strategies as st  # noqa: F401 - the rules' strategies are unwrapped below

from cli.hotelsim.client import Violation
from tests.simulation.machine import HotelMonth

# how often a rule is drawn, relative to the others (a hotel books far more than it adds rooms)
WEIGHTS = {"book": 14, "walk_in": 2, "edit": 3, "cancel": 3, "no_show": 1, "check_in": 4,
           "charge": 8, "pay": 3, "check_out": 2, "revert": 1, "move_room": 1, "key": 4,
           "housekeeping": 3, "out_of_order": 1, "end_out_of_order": 1, "sell_limit": 1,
           "room_add": 1, "delete_room": 1, "open_block": 1, "move_block": 2, "pick_up": 3,
           "kiosk_walk_in": 1, "kiosk_check_in": 3, "split": 1, "stop_sell": 1, "set_allotment": 1,
           "freeze_channel": 1, "route_to_company": 2, "company_pays": 1,
           "traveler_books": 2, "company_method": 1,
           "host_banquet": 1, "move_banquet": 2, "post_banquet": 1, "deactivate_key": 1,
           "pre_authorize": 1, "set_rates": 1, "retype_room": 1, "wash_block": 1,
           "space_out_of_order": 1}


def draw(strategy: Any, rng: random.Random) -> Any:
    """A value of one of the machine's argument strategies, drawn from `rng`."""
    from hypothesis.strategies._internal.misc import BooleansStrategy
    from hypothesis.strategies._internal.numbers import IntegersStrategy
    from hypothesis.strategies._internal.strategies import SampledFromStrategy

    inner = strategy
    while hasattr(inner, "wrapped_strategy"):
        inner = inner.wrapped_strategy
    if isinstance(inner, IntegersStrategy):
        return rng.randint(inner.start, inner.end)
    if isinstance(inner, SampledFromStrategy):
        return rng.choice(list(inner.elements))
    if isinstance(inner, BooleansStrategy):
        return rng.random() < 0.5
    raise TypeError(f"no draw for {strategy!r}")


def rules() -> dict[str, Any]:
    """The machine's rules by name (each with its argument strategies and preconditions)."""
    import inspect

    from hypothesis.stateful import RULE_MARKER

    found = (getattr(f, RULE_MARKER, None) for _, f in inspect.getmembers(HotelMonth))
    return {r.function.__name__: r for r in found if r is not None}


def enabled(machine: HotelMonth, rule: Any) -> bool:
    return all(p(machine) for p in rule.preconditions)


def evening(machine: HotelMonth, rng: random.Random, log: list[str]) -> None:
    """The desk before the audit: 90% of today's arrivals check in, every due departure
    leaves with its folio settled."""
    hotel = machine.hotel
    for stay in list(hotel.arriving()):
        if rng.random() < 0.9:
            log.append(f"check_in({stay.id})")
            hotel.check_in(stay)
            machine.every_rule_holds()
    for stay in [s for s in hotel.in_house() if s.departure <= hotel.business_date]:
        log.append(f"check_out({stay.id})")
        hotel.check_out(stay, settle=True)
        machine.every_rule_holds()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make simulate", description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--rooms", type=int, default=60)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--acts", type=int, default=None, help="acts per day (default: rooms)")
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(10**6)
    acts = args.acts or max(args.rooms, 20)
    rng = random.Random(seed)
    replay = (f"make simulate SEED={seed} DAYS={args.days} ROOMS={args.rooms} "
              f"DATABASE={args.database}")
    print(f"simulating {args.days} days of a {args.rooms}-room hotel on {args.database}, "
          f"seed {seed}, {acts} acts a day", flush=True)

    from pms.config import Settings
    from pms.devkeys import generate_keys
    from tests.simulation.stack import postgres_stack, sqlite_stack
    from tests.workers.amqp import amqp_url

    work = Path("var/simulate") / str(seed)
    work.mkdir(parents=True, exist_ok=True)
    settings = Settings(jwks_url=f"file://{work.resolve()}/jwks.json", home=work.resolve() / "home")
    generate_keys(settings)
    stack_cm = (postgres_stack(settings, work, amqp_url()) if args.database == "postgres"
                else sqlite_stack(settings, work))
    table = rules()
    started = time.monotonic()
    log: list[str] = []
    day = 0
    with stack_cm as stack:
        HotelMonth.configure(stack, rooms=args.rooms, window=21, steps_per_day=acts,
                             days=args.days)
        machine = HotelMonth()
        try:
            machine.opening_bookings()
            machine.every_rule_holds()
            for day in range(1, args.days + 1):
                log.clear()
                for _ in range(acts):
                    choices = [(n, w) for n, w in WEIGHTS.items() if enabled(machine, table[n])]
                    name = rng.choices([n for n, _ in choices], [w for _, w in choices])[0]
                    kwargs = {k: draw(s, rng) for k, s in table[name].arguments_strategies.items()}
                    log.append(f"{name}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})")
                    getattr(machine, name)(**kwargs)
                    machine.every_rule_holds()
                evening(machine, rng, log)
                machine.today_steps = acts
                log.append("night_audit()")
                machine.night_audit()
                machine.every_rule_holds()
                elapsed = time.monotonic() - started
                print(f"day {day:3d} {machine.hotel.business_date}  steps {machine.hotel.steps:6d}"
                      f"  checks {sum(machine.checker.checks.values()):9d}  "
                      f"in house {len(machine.hotel.in_house()):4d}  "
                      f"{machine.hotel.steps / elapsed:6.1f} steps/s", flush=True)
            machine.teardown()
        except (Violation, AssertionError) as exc:
            print(f"\nFAILED on day {day} (seed {seed}): {exc}\n", file=sys.stderr)
            traceback.print_exc()
            print("the day's steps so far:\n  " + "\n  ".join(log[-60:]), file=sys.stderr)
            print(f"\nreplay: {replay}", file=sys.stderr)
            return 1
    elapsed = time.monotonic() - started
    figures = {"seed": seed, "days": args.days, "rooms": args.rooms, "database": args.database,
               "steps": machine.hotel.steps, "checks": dict(machine.checker.checks),
               "checks_total": sum(machine.checker.checks.values()),
               "seconds": round(elapsed, 1), "steps_per_s": round(machine.hotel.steps / elapsed, 1),
               "refusals": dict(machine.client.refusals), "replay": replay}
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
