"""The simulated hotel, short form: a few hundred steps on each database within the suite's
budget (`make simulate` runs a month at length). Hypothesis draws the sequence from a fixed seed
(`PMS_SIM_SEED`), so a failure replays; its shrunk sequence is printed as the steps of the
failing example, and is kept below as a regression test with its fix."""

from __future__ import annotations

import os

import hypothesis.core
import pytest
from hypothesis import HealthCheck, Phase
from hypothesis import settings as hsettings
from hypothesis.stateful import run_state_machine_as_test

from tests.simulation.machine import HotelMonth

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("PMS_SIM_SEED", "20261202"))
EXAMPLES = int(os.environ.get("PMS_SIM_EXAMPLES", "3"))
STEPS = int(os.environ.get("PMS_SIM_STEPS", "70"))


def run(stack, *, seed: int = SEED, examples: int = EXAMPLES, steps: int = STEPS,
        rooms: int = 10, shrink: bool = True) -> dict:
    HotelMonth.configure(stack, rooms=rooms, steps_per_day=8, days=60)
    phases = [Phase.generate] + ([Phase.shrink] if shrink else [])
    forced = hypothesis.core.global_force_seed
    hypothesis.core.global_force_seed = seed  # what `pytest --hypothesis-seed` sets
    try:
        run_state_machine_as_test(HotelMonth, settings=hsettings(
            max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
            phases=phases, suppress_health_check=list(HealthCheck), print_blob=True))
    finally:
        hypothesis.core.global_force_seed = forced
    return HotelMonth.figures


def test_a_simulated_hotel_keeps_every_rule_after_every_step(sim_stack):
    figures = run(sim_stack)
    print(f"simulation on {sim_stack.kind}: {figures}")
    # the run did a hotel's work, not only its set-up: days closed, rules of many kinds
    assert figures["days"] >= 2, figures
    assert len(figures["rules"]) >= 10, figures
    assert figures["checks"] > 1000, figures


# -- failures the simulation found, kept as their shrunk replays -------------------------------

def replay(stack, *steps: tuple[str, dict]) -> None:
    """Run a printed failing case step by step, the invariants after each, as Hypothesis
    prints it (`state.rule(args)` then `state.every_rule_holds()`)."""
    HotelMonth.configure(stack, rooms=10, steps_per_day=8, days=60)
    state = HotelMonth()
    try:
        state.opening_bookings()
        state.every_rule_holds()
        for name, args in steps:
            getattr(state, name)(**args)
            state.every_rule_holds()
    finally:
        state.teardown()


def test_replay_a_check_in_reverted_then_cancelled_leaves_no_open_folio(sim_stack):
    replay(sim_stack, ("check_in", {"n": 539}), ("revert", {"n": 218791}),
           ("room_add", {"rt": "STD"}), ("cancel", {"n": 186}))


def test_replay_an_event_carries_the_version_it_announces(sim_stack):
    replay(sim_stack, ("edit", {"n": 0, "nights": 2}), ("room_add", {"rt": "STD"}))
