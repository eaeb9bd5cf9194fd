"""Sellable = min(physical - OOO - OOS, sell limit) - sold, within [0, physical - OOO - OOS]."""

import itertools

import pytest

from pms.domain.availability import NightCount, capacity, sellable, stay_sellable, usable


def test_sellable_is_physical_minus_maintenance_minus_sold():
    assert sellable(10, 1, 2, None, 3) == 4


def test_sell_limit_lowers_sellable():
    assert sellable(10, 0, 0, 5, 3) == 2


def test_sell_limit_never_raises_above_physical():
    assert sellable(10, 2, 1, 50, 0) == 7
    assert capacity(10, 2, 1, 50) == 7


def test_sellable_never_goes_below_zero():
    assert sellable(2, 0, 0, None, 5) == 0          # oversold by a sell-limit change
    assert sellable(2, 3, 0, None, 0) == 0          # more rooms out of order than exist
    assert sellable(2, 0, 0, -1, 0) == 0            # a negative sell limit


def test_usable_never_negative():
    assert usable(1, 2, 2) == 0


@pytest.mark.parametrize("physical, ooo, oos, limit, sold", list(itertools.product(
    range(0, 4), range(0, 3), range(0, 3), [None, 0, 1, 2, 5], range(0, 5))))
def test_sellable_bounds_hold_everywhere(physical, ooo, oos, limit, sold):
    value = sellable(physical, ooo, oos, limit, sold)
    assert 0 <= value <= max(physical - ooo - oos, 0)
    if limit is not None:
        assert value <= max(limit, 0)


def test_stay_sellable_is_the_minimum_over_nights():
    nights = [NightCount(5, 0, 0, None, 1), NightCount(5, 1, 0, None, 3), NightCount(5, 0, 0, 4, 0)]
    assert stay_sellable(nights) == 1
    assert stay_sellable([]) == 0
