"""The one time format: ISO 8601 UTC to the millisecond, as datetime writes it."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notebook_kit.domain.clock import iso_time, now


def _reference(epoch: float) -> str:
    stamp = datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


@pytest.mark.parametrize(
    ("epoch", "text"),
    [
        (0.0, "1970-01-01T00:00:00.000Z"),
        (1700000000.123, "2023-11-14T22:13:20.123Z"),  # not .122: no float truncation
        (1700000000.9999996, "2023-11-14T22:13:21.000Z"),  # rounds into the next second
        (-1.5, "1969-12-31T23:59:58.500Z"),
    ],
)
def test_iso_time_examples(epoch: float, text: str) -> None:
    assert iso_time(epoch) == text


@given(st.floats(min_value=-2e9, max_value=4e9, allow_nan=False))
def test_iso_time_matches_datetime(epoch: float) -> None:
    assert iso_time(epoch) == _reference(epoch)


@given(st.lists(st.floats(min_value=1.7e9, max_value=1.7e9 + 5, allow_nan=False)))
def test_iso_time_runs_within_and_across_seconds(epochs: list[float]) -> None:
    assert [iso_time(e) for e in epochs] == [_reference(e) for e in epochs]


def test_now_is_the_current_time() -> None:
    before = _reference(time.time())
    stamp = now()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)
    assert before <= stamp <= _reference(time.time())
