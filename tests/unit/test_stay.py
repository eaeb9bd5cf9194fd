"""Stay nights: [arrival, departure)."""

from datetime import date, timedelta

import pytest

from pms.domain.stay import MAX_STAY_NIGHTS, date_range, stay_nights
from pms.errors import ValidationFailed


def test_stay_nights_exclude_the_departure_date():
    assert stay_nights(date(2030, 1, 30), date(2030, 2, 2)) == [
        date(2030, 1, 30), date(2030, 1, 31), date(2030, 2, 1)]


def test_one_night_stay():
    assert stay_nights(date(2030, 1, 1), date(2030, 1, 2)) == [date(2030, 1, 1)]


@pytest.mark.parametrize("arrival, departure", [
    (date(2030, 1, 2), date(2030, 1, 2)),    # zero nights
    (date(2030, 1, 3), date(2030, 1, 2)),    # departure before arrival
])
def test_departure_not_after_arrival_is_refused(arrival, departure):
    with pytest.raises(ValidationFailed) as exc:
        stay_nights(arrival, departure)
    assert exc.value.status == 422 and exc.value.code == "invalid_stay_dates"


def test_overlong_stay_is_refused():
    with pytest.raises(ValidationFailed):
        stay_nights(date(2030, 1, 1), date(2030, 1, 1) + timedelta(days=MAX_STAY_NIGHTS + 1))
    assert len(stay_nights(date(2030, 1, 1), date(2030, 1, 1) + timedelta(days=MAX_STAY_NIGHTS))) \
        == MAX_STAY_NIGHTS


def test_stay_across_a_leap_day():
    assert len(stay_nights(date(2028, 2, 28), date(2028, 3, 1))) == 2


def test_date_range_is_empty_when_reversed():
    assert date_range(date(2030, 1, 2), date(2030, 1, 1)) == []
