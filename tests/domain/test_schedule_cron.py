"""Schedules: reading cron expressions, the ticks they make in a time zone, validation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from notebook_kit.domain.schedules import Schedule, parse_cron, parse_timezone
from notebook_kit.errors import ValidationError

PARIS = ZoneInfo("Europe/Paris")
NEW_YORK = ZoneInfo("America/New_York")


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


@pytest.mark.parametrize(
    ("expression", "after", "expected"),
    [
        ("* * * * * *", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:01+00:00"),
        ("*/5 * * * * *", "2026-01-01T00:00:03+00:00", "2026-01-01T00:00:05+00:00"),
        ("*/5 * * * * *", "2026-01-01T00:00:55.9+00:00", "2026-01-01T00:01:00+00:00"),
        ("*/15 * * * *", "2026-01-01T00:00:00+00:00", "2026-01-01T00:15:00+00:00"),
        ("0 * * * *", "2026-01-01T23:30:00+00:00", "2026-01-02T00:00:00+00:00"),
        ("30 2 * * *", "2026-01-01T02:30:00+00:00", "2026-01-02T02:30:00+00:00"),
        ("0 9-17/4 * * *", "2026-01-01T09:00:00+00:00", "2026-01-01T13:00:00+00:00"),
        ("0 9 * * MON-FRI", "2026-01-02T10:00:00+00:00", "2026-01-05T09:00:00+00:00"),
        ("0 9 * * 7", "2026-01-01T00:00:00+00:00", "2026-01-04T09:00:00+00:00"),
        ("0 0 1 JAN *", "2026-01-01T00:00:00+00:00", "2027-01-01T00:00:00+00:00"),
        ("0 0 29 2 *", "2026-03-01T00:00:00+00:00", "2028-02-29T00:00:00+00:00"),
        ("0 0 31 * *", "2026-04-01T00:00:00+00:00", "2026-05-31T00:00:00+00:00"),
        ("0 0 1,15 * *", "2026-01-02T00:00:00+00:00", "2026-01-15T00:00:00+00:00"),
        # Both days restricted: either one matches (Vixie cron): the 13th or any Friday.
        ("0 0 13 * FRI", "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"),
        ("0 0 13 * FRI", "2026-01-09T00:00:00+00:00", "2026-01-13T00:00:00+00:00"),
        ("10,20 30 1 * * ?", "2026-01-01T01:30:10+00:00", "2026-01-01T01:30:20+00:00"),
        ("7/20 * * * * *", "2026-01-01T00:00:27+00:00", "2026-01-01T00:00:47+00:00"),
        ("@hourly", "2026-01-01T00:00:00+00:00", "2026-01-01T01:00:00+00:00"),
        ("@daily", "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"),
        ("@weekly", "2026-01-01T00:00:00+00:00", "2026-01-04T00:00:00+00:00"),
        ("@monthly", "2026-01-01T00:00:00+00:00", "2026-02-01T00:00:00+00:00"),
        ("@yearly", "2026-01-01T00:00:00+00:00", "2027-01-01T00:00:00+00:00"),
    ],
)
def test_next_tick_in_utc(expression: str, after: str, expected: str) -> None:
    assert parse_cron(expression).next_tick(at(after)) == at(expected)


def test_next_tick_reads_the_expression_in_the_zone() -> None:
    cron = parse_cron("0 9 * * *")
    assert cron.next_tick(at("2026-01-15T00:00:00+00:00"), PARIS) == at("2026-01-15T08:00:00Z")
    assert cron.next_tick(at("2026-07-15T00:00:00+00:00"), PARIS) == at("2026-07-15T07:00:00Z")
    assert cron.next_tick(at("2026-01-15T00:00:00+00:00"), NEW_YORK) == at("2026-01-15T14:00Z")


def test_a_local_time_the_clocks_skip_has_no_tick() -> None:
    # 2026-03-29: Paris goes from 02:00 to 03:00; 02:30 does not exist that day.
    cron = parse_cron("30 2 * * *")
    tick = cron.next_tick(at("2026-03-28T12:00:00+00:00"), PARIS)
    assert tick == at("2026-03-30T02:30:00+02:00")


def test_a_repeated_local_time_ticks_once_at_its_first_occurrence() -> None:
    # 2026-10-25: Paris goes back from 03:00 to 02:00; 02:30 happens twice.
    cron = parse_cron("30 2 * * *")
    first = cron.next_tick(at("2026-10-24T12:00:00+00:00"), PARIS)
    assert first == at("2026-10-25T02:30:00+02:00")
    assert cron.next_tick(first, PARIS) == at("2026-10-26T02:30:00+01:00")


def test_every_hour_follows_real_time_through_both_changes() -> None:
    cron = parse_cron("0 */30 * * * *")
    autumn = cron.ticks(at("2026-10-24T23:00:00Z"), at("2026-10-25T02:00:00Z"), PARIS)
    assert [t - autumn[0] for t in autumn] == [timedelta(minutes=30 * i) for i in range(6)]
    spring = cron.ticks(at("2026-03-29T00:00:00Z"), at("2026-03-29T02:00:00Z"), PARIS)
    local = [t.astimezone(PARIS).strftime("%H:%M") for t in spring]
    assert local == ["01:30", "03:00", "03:30", "04:00"]


def test_every_second_through_a_change_is_one_tick_a_second() -> None:
    cron = parse_cron("* * * * * *")
    ticks = cron.ticks(at("2026-10-25T00:59:50Z"), at("2026-10-25T01:00:10Z"), PARIS)
    assert len(ticks) == 20 and len(set(ticks)) == 20
    assert all(b - a == timedelta(seconds=1) for a, b in pairwise(ticks))


def test_a_five_field_expression_ticks_on_second_zero() -> None:
    assert parse_cron("* * * * *").seconds == (0,)
    assert parse_cron("* * * * * *").seconds == tuple(range(60))


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", "must be text"),
        ("* * * *", "has 4 fields"),
        ("* * * * * * *", "has 7 fields"),
        ("60 * * * * *", "second 60 is out of range 0-59"),
        ("* 24 * * *", "hour 24 is out of range 0-23"),
        ("* * 0 * *", "day of month 0 is out of range 1-31"),
        ("* * * 13 *", "month 13 is out of range 1-12"),
        ("* * * * 8", "day of week 8 is out of range 0-7"),
        ("*/0 * * * *", "step '0' must be a whole number over 0"),
        ("5-1 * * * *", "range '5-1' runs backwards"),
        ("a * * * *", "minute 'a' is not a number"),
        ("1,,2 * * * *", "empty list item"),
        ("0 0 30 2 *", "never ticks"),
        ("@often", "unknown macro"),
        ("0 0 L * *", "day of month 'L' is not a number"),
    ],
)
def test_bad_expressions_say_what_is_wrong(expression: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message) as caught:
        parse_cron(expression)
    assert caught.value.field == "cron"


def test_names_are_case_insensitive() -> None:
    assert parse_cron("0 0 * jan-mar mon").months == frozenset({1, 2, 3})
    assert parse_cron("0 0 * * sun,7").weekdays == frozenset({0})


@given(
    second=st.sampled_from(["*", "*/2", "0", "10-20", "5,35"]),
    minute=st.sampled_from(["*", "*/7", "0", "59"]),
    hour=st.sampled_from(["*", "3", "1-5", "*/6"]),
    zone=st.sampled_from(["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe"]),
    start=st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2028, 1, 1)),
)
@settings(max_examples=150, deadline=None)
def test_ticks_rise_and_each_matches_the_expression(
    second: str, minute: str, hour: str, zone: str, start: datetime
) -> None:
    cron = parse_cron(f"{second} {minute} {hour} * * *")
    place = ZoneInfo(zone)
    after = start.replace(tzinfo=UTC)
    previous = after
    for _ in range(5):
        tick = cron.next_tick(previous, place)
        assert tick is not None and tick > previous and tick.microsecond == 0
        local = tick.astimezone(place)
        assert local.second in cron.seconds
        assert local.minute in cron.minutes
        assert local.hour in cron.hours
        # nothing matches strictly between two ticks (checked second by second nearby)
        probe = previous + timedelta(seconds=1)
        while probe < tick and probe < previous + timedelta(minutes=3):
            here = probe.astimezone(place)
            matches = (
                here.second in cron.seconds
                and here.minute in cron.minutes
                and here.hour in cron.hours
            )
            repeated = here.replace(fold=0).astimezone(UTC) != probe
            assert not matches or (repeated and not cron.every_hour)
            probe += timedelta(seconds=1)
        previous = tick


def test_schedule_validates_its_fields() -> None:
    schedule = Schedule("reports", "nightly", "refresh", " 0  2 * * * ", "Europe/Paris", "queue")
    assert schedule.cron == "0 2 * * *"
    assert Schedule.from_dict(schedule.to_dict()) == schedule
    with pytest.raises(ValidationError, match="time zone 'Mars/Olympus' is not an IANA"):
        Schedule("reports", "nightly", "refresh", "0 2 * * *", "Mars/Olympus")
    with pytest.raises(ValidationError, match="overlap must be 'skip' or 'queue'"):
        Schedule("reports", "nightly", "refresh", "0 2 * * *", "UTC", "wait")
    with pytest.raises(ValidationError, match="schedule name 'a b'"):
        Schedule("reports", "a b", "refresh", "0 2 * * *")
    with pytest.raises(ValidationError, match="a schedule needs 'cron'"):
        Schedule.from_dict({"app": "a", "name": "n", "definition": "d"})
    assert parse_timezone("UTC").key == "UTC"
