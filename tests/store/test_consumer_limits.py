"""Consumers' limits in the store, on SQLite and PostgreSQL: the exact arithmetic of
``take`` (quota, rate window with burst, units taken ahead), ``give_back``, period
rollover at explicit UTC times, and many processes taking from one PostgreSQL store never
granted more than the quota in total."""

from __future__ import annotations

import multiprocessing
import random
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from notebook_kit.store import Store
from notebook_kit.store.consumers import Grant
from notebook_kit.store.opening import open_store
from notebook_kit.workspace.workspace import Workspace


def _at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


# A tick of a per-second rate is 0.1 s: T0 starts one; "+ k ticks and a half" stays clear
# of the floating-point edges of the ticks.
T0 = _at("2027-01-15T10:00:00")


def _tick(k: int) -> float:
    return T0 + (k + 0.5) / 10


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest) -> str:
    """ "" (the SQLite file in the workspace) or a new PostgreSQL store's URL."""
    if request.param == "sqlite":
        return ""
    return str(request.getfixturevalue("fresh_database"))


@pytest.fixture
def ws(tmp_path: Path, store_url: str) -> Workspace:
    return Workspace(tmp_path / "home", store=store_url)


def _take(store: Store, name: str, want: int, at: float) -> Grant:
    with store.transaction():
        return store.consumers.take(name, want, at)


def _give_back(store: Store, name: str, grant: Grant, units: int) -> None:
    with store.transaction():
        store.consumers.give_back(name, grant["period"], grant["tick"], units)


# -- quota -------------------------------------------------------------------------------


def test_quota_grants_what_is_left_then_refuses_until_the_period_ends(ws: Workspace) -> None:
    ws.consumers.create("c", quota="5/day")
    at = _at("2027-01-15T18:00:00")
    first = _take(ws.store, "c", 3, at)
    assert (first["units"], first["quota_left"], first["period"]) == (3, 2, "2027-01-15")
    assert first["reset"] == 6 * 3600 and first["tick"] is None
    assert _take(ws.store, "c", 3, at)["units"] == 2  # only what is left
    refused = _take(ws.store, "c", 1, at + 60)
    assert (refused["units"], refused["quota_left"]) == (0, 0)
    assert refused["retry"] == pytest.approx(6 * 3600 - 60)
    assert ws.store.consumers.quota_used() == {("c", "2027-01-15"): 5}


@pytest.mark.parametrize(
    ("quota", "last", "first"),
    [
        ("2/day", "2027-01-15T23:59:59.999", "2027-01-16T00:00:00"),
        ("2/week", "2027-01-17T23:59:59.999", "2027-01-18T00:00:00"),  # Sunday -> Monday
        ("2/month", "2027-01-31T23:59:59.999", "2027-02-01T00:00:00"),
        ("2/month", "2027-12-31T23:59:59.999", "2028-01-01T00:00:00"),
    ],
)
def test_quota_rolls_over_at_the_utc_period_boundary(
    ws: Workspace, quota: str, last: str, first: str
) -> None:
    ws.consumers.create("c", quota=quota)
    assert _take(ws.store, "c", 2, _at(last))["units"] == 2
    refused = _take(ws.store, "c", 1, _at(last))
    assert refused["units"] == 0 and refused["retry"] == pytest.approx(0.001, abs=1e-6)
    fresh = _take(ws.store, "c", 1, _at(first))
    assert (fresh["units"], fresh["quota_left"]) == (1, 1)
    assert fresh["period"] != refused["period"]


@pytest.mark.parametrize(
    ("count", "want", "units"),
    [
        (255, 1, 1),  # fewer than 256 left: nothing ahead
        (256, 1, 2),  # 256 left: one ahead
        (1000, 1, 4),  # 1000 // 256 = 3 ahead
        (10**6, 5, 5 + 1024),  # at most 1024 ahead
        (3, 10, 3),  # never more than is left
    ],
)
def test_units_are_taken_ahead_only_when_much_is_left(
    ws: Workspace, count: int, want: int, units: int
) -> None:
    ws.consumers.create("c", quota=f"{count}/month")
    grant = _take(ws.store, "c", want, T0)
    assert grant["units"] == units and grant["quota_left"] == count - units
    assert grant["hold"] == 1.0  # a quota-only take is spent within a second or given back


def test_give_back_returns_unspent_units_to_quota_and_tick(ws: Workspace) -> None:
    ws.consumers.create("c", rate="10/s", burst=5, quota="10/day")
    grant = _take(ws.store, "c", 5, _tick(0))
    assert (grant["units"], grant["quota_left"], grant["rate_left"]) == (5, 5, 5)
    _give_back(ws.store, "c", grant, 3)
    again = _take(ws.store, "c", 10, _tick(0))  # same tick: the burst has 3 back
    assert (again["units"], again["quota_left"], again["rate_left"]) == (3, 5, 5)
    _give_back(ws.store, "c", again, 100)  # more than was taken: floors at 0
    _give_back(ws.store, "c", again, 0)  # nothing: no change
    assert ws.store.consumers.quota_used()[("c", again["period"])] == 0
    assert _take(ws.store, "c", 10, _tick(1))["units"] == 5


# -- rate ------------------------------------------------------------------------------


def test_rate_window_and_burst_are_exact(ws: Workspace) -> None:
    ws.consumers.create("c", rate="10/s", burst=4)
    first = _take(ws.store, "c", 5, _tick(0))
    assert (first["units"], first["rate_left"]) == (4, 6)  # the burst caps one tick
    assert first["hold"] == pytest.approx(0.05, abs=1e-6)  # spent in this tick or given back
    same_tick = _take(ws.store, "c", 1, _tick(0))
    assert same_tick["units"] == 0 and same_tick["retry"] == pytest.approx(0.05, abs=1e-6)
    assert _take(ws.store, "c", 4, _tick(1))["units"] == 4
    assert _take(ws.store, "c", 4, _tick(2))["units"] == 2  # 10 in the window
    full = _take(ws.store, "c", 1, _tick(9))
    assert (full["units"], full["rate_left"]) == (0, 0)
    # tick 10's window (ticks 0..10) still holds ticks 0-2: nothing; tick 11's drops tick 0
    assert _take(ws.store, "c", 1, _tick(10))["units"] == 0
    assert _take(ws.store, "c", 9, _tick(11))["units"] == 4
    assert _take(ws.store, "c", 9, _tick(12))["units"] == 4  # ticks 2..12: 2 + 4 used
    assert _take(ws.store, "c", 9, _tick(13))["units"] == 2  # ticks 3..13: 8 used


def test_rate_per_minute_uses_six_second_ticks(ws: Workspace) -> None:
    ws.consumers.create("c", rate="6/min", burst=2)
    assert _take(ws.store, "c", 3, T0 + 1)["units"] == 2
    refused = _take(ws.store, "c", 1, T0 + 5)
    assert refused["units"] == 0 and refused["retry"] == pytest.approx(1.0)
    assert _take(ws.store, "c", 2, T0 + 6)["units"] == 2
    assert _take(ws.store, "c", 2, T0 + 12)["units"] == 2
    assert _take(ws.store, "c", 2, T0 + 59)["units"] == 0
    assert _take(ws.store, "c", 2, T0 + 66)["units"] == 2  # the first tick left the window


def test_rate_never_admits_more_than_n_in_any_window(ws: Workspace, store_url: str) -> None:
    """Random takes at random times: every window of one second holds at most N units,
    wherever it starts."""
    if store_url:
        pytest.skip("the arithmetic is the same SQL on both stores; one is enough here")
    count = 7
    for seed in range(3):
        name = f"c{seed}"
        ws.consumers.create(name, rate=f"{count}/s", burst=random.Random(seed).randint(1, count))
        rng = random.Random(seed)
        at, granted = T0, []
        for _ in range(300):
            at += rng.choice([0.0, 0.001, 0.013, 0.05, 0.1, 0.31])
            grant = _take(ws.store, name, rng.randint(1, 4), at)
            if grant["units"]:
                granted.append((at, grant["units"]))
        for start, _ in granted:
            in_window = sum(u for t, u in granted if start <= t < start + 1)
            assert in_window <= count
        assert sum(u for _, u in granted) > count * 5  # it did admit calls throughout


def test_quota_and_rate_together_and_retry_is_the_longer_wait(ws: Workspace) -> None:
    ws.consumers.create("c", rate="10/s", quota="3/day")
    at = _at("2027-01-15T23:00:00.05")
    assert _take(ws.store, "c", 5, at)["units"] == 3
    refused = _take(ws.store, "c", 1, at + 0.2)
    assert refused["units"] == 0 and refused["retry"] == pytest.approx(3600 - 0.25)


def test_unknown_or_deleted_consumer_is_granted_nothing(ws: Workspace) -> None:
    gone = _take(ws.store, "nobody", 1, T0)
    assert gone == {"units": 0, "retry": 3600.0, "gone": True}
    ws.consumers.create("c", rate="5/s", quota="10/day")
    assert _take(ws.store, "c", 2, T0)["units"] == 2
    ws.consumers.delete("c")
    assert _take(ws.store, "c", 1, T0)["gone"] is True
    assert ws.store.consumers.quota_used() == {}  # its counts went with it


# -- across threads and processes ------------------------------------------------------


def test_threads_never_take_more_than_the_quota(ws: Workspace, store_url: str) -> None:
    ws.consumers.create("c", quota="40/day")
    stores = [ws.store, open_store(store_url or None, ws.home)]
    granted: list[int] = []
    errors: list[BaseException] = []

    def run(store: Store) -> None:
        try:
            for _ in range(20):
                granted.append(_take(store, "c", 1, T0)["units"])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s,)) for s in stores for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sum(granted) == 40 and len(granted) == 120
    assert ws.store.consumers.quota_used() == {("c", "2027-01-15"): 40}


def _take_many(url: str, home: str, rounds: int, results: Any) -> None:
    """One process (one node's view of the store): ``rounds`` takes of one unit."""
    try:
        store = open_store(url, Path(home))
        total = 0
        for _ in range(rounds):
            with store.transaction():
                total += store.consumers.take("c", 1, T0)["units"]
        results.put(total)
    except BaseException as exc:  # the parent reports it
        results.put(repr(exc))


def test_processes_on_one_postgresql_store_take_exactly_the_quota(
    tmp_path: Path, fresh_database: str
) -> None:
    ws = Workspace(tmp_path / "home", store=fresh_database)
    ws.consumers.create("c", quota="100/day")
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    processes = [
        context.Process(target=_take_many, args=(fresh_database, str(ws.home), 50, results))
        for _ in range(8)
    ]
    for process in processes:
        process.start()
    totals = [results.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(60)
    assert all(isinstance(t, int) for t in totals), totals
    assert sum(totals) == 100
    assert ws.store.consumers.quota_used() == {("c", "2027-01-15"): 100}
