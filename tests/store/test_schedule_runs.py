"""The schedules' tables on both stores: saved schedules, pauses, and the run log whose
UNIQUE tick row is the lease (one claim wins, whatever the number of claimers)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from notebook_kit.domain.models import Application
from notebook_kit.domain.schedules import Schedule
from notebook_kit.store import Store
from notebook_kit.store.opening import open_store


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest) -> str:
    if request.param == "sqlite":
        return ""
    return str(request.getfixturevalue("fresh_database"))


def _open(tmp_path: Path, url: str) -> Store:
    return open_store(url or None, tmp_path)


@pytest.fixture
def store(tmp_path: Path, store_url: str) -> Store:
    opened = _open(tmp_path, store_url)
    with opened.transaction():
        opened.put_application(Application("reports"))
    return opened


def test_saved_schedules_are_put_replaced_listed_and_deleted(store: Store) -> None:
    first = Schedule("reports", "nightly", "refresh", "0 2 * * *", "Europe/Paris")
    store.schedules.put(first)
    store.schedules.put(Schedule("reports", "hourly", "refresh", "@hourly"))
    changed = Schedule("reports", "nightly", "refresh", "0 3 * * *", "UTC", "queue")
    store.schedules.put(changed)
    assert [s.name for s in store.schedules.list("reports")] == ["hourly", "nightly"]
    assert store.schedules.get("reports", "nightly") == changed
    store.schedules.delete("reports", "hourly")
    assert store.schedules.list() == [changed]
    with store.transaction():
        store.delete_application("reports")
    assert store.schedules.list() == []  # they go with their application


def test_a_tick_is_claimed_once_whatever_the_claimers(tmp_path: Path, store_url: str) -> None:
    """Eight claimers, each with a store connection of its own, race for the same 30
    ticks: each tick is won exactly once."""
    first = _open(tmp_path, store_url)
    won: list[tuple[int, str]] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def claimer(number: int) -> None:
        mine = _open(tmp_path, store_url)
        start.wait()
        for second in range(30):
            tick = f"2026-01-01T00:00:{second:02d}.000Z"
            run = mine.schedules.claim(
                "prod", "reports", "every", tick, f"node{number}", "running", time.time() + 60
            )
            if run is not None:
                with lock:
                    won.append((number, tick))
        mine.close()

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ticks = [tick for _, tick in won]
    assert len(ticks) == 30 and len(set(ticks)) == 30
    rows = first.schedules.runs("reports", "every", limit=None)
    assert sorted(r["tick"] for r in rows) == sorted(ticks)
    assert {(int(r["node"][4:]), r["tick"]) for r in rows} == set(won)


def test_a_run_is_started_finished_and_its_last_success_known(store: Store) -> None:
    runs = store.schedules
    lease = time.time() + 60
    one = runs.claim("prod", "reports", "s", "2026-01-01T00:00:01.000Z", "n", "running", lease)
    two = runs.claim("prod", "reports", "s", "2026-01-01T00:00:02.000Z", "n", "queued", lease)
    assert one is not None and two is not None
    assert runs.open_before("prod", "reports", "s", "2026-01-01T00:00:02.000Z") == ["running"]
    assert runs.running("prod", "reports", "s", other_than=two)
    runs.finish(one, "succeeded", 12.5, None)
    runs.start(two, lease)
    runs.finish(two, "failed", 3.0, "ZeroDivisionError: division by zero")
    assert runs.last_success("prod", "reports", "s") == "2026-01-01T00:00:01.000Z"
    assert runs.last_success("dev", "reports", "s") is None
    newest = runs.runs("reports")[0]
    assert newest["status"] == "failed" and newest["error"].startswith("ZeroDivisionError")
    assert newest["duration_ms"] == 3.0 and newest["started_at"] is not None
    last = runs.last_runs()[("prod", "reports", "s")]
    assert last["tick"] == "2026-01-01T00:00:02.000Z"
    skipped = runs.claim(
        "prod", "reports", "s", "2026-01-01T00:00:03.000Z", "n", "skipped", lease, error="busy"
    )
    row = runs.runs("reports", limit=1)[0]
    assert skipped == row["id"] and row["finished_at"] is not None and row["error"] == "busy"


def test_an_open_run_whose_lease_ran_out_is_closed_as_failed(store: Store) -> None:
    runs = store.schedules
    gone = runs.claim(
        "prod", "reports", "s", "2026-01-01T00:00:01.000Z", "dead:1", "running", time.time() - 1
    )
    alive = runs.claim(
        "prod", "reports", "s", "2026-01-01T00:00:02.000Z", "live:2", "running", time.time() - 1
    )
    assert gone is not None and alive is not None
    runs.renew([alive], time.time() + 60)  # its node is alive and says so
    assert runs.expire(time.time()) == 1
    assert runs.expire(time.time()) == 0
    rows = {r["id"]: r for r in runs.runs("reports")}
    assert rows[gone]["status"] == "failed"
    assert rows[gone]["error"] == "the node dead:1 stopped before the run finished (not retried)"
    assert rows[alive]["status"] == "running"


def test_pauses_are_per_stage(store: Store) -> None:
    store.schedules.set_paused("prod", "reports", "s", True)
    store.schedules.set_paused("dev", "reports", "s", False)
    states = store.schedules.states()
    assert states[("prod", "reports", "s")][0] is True
    assert states[("dev", "reports", "s")][0] is False


def test_the_run_log_is_trimmed_to_the_newest(store: Store) -> None:
    runs = store.schedules
    for second in range(6):
        run = runs.claim(
            "prod", "reports", "s", f"2026-01-01T00:00:{second:02d}.000Z", "n", "running", 0.0
        )
        assert run is not None
        if second < 5:
            runs.finish(run, "succeeded", 1.0, None)
    runs.trim("prod", "reports", "s", keep=2)
    kept = [r["tick"][-7:-5] for r in runs.runs("reports")]
    assert kept == ["05", "04"]
