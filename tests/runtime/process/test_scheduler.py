"""The scheduler: claiming due ticks (two schedulers on one store are two nodes: each tick
runs once), pauses, missed ticks, runs of a stopped node closed as failed, and a real
``notebook-kit serve`` running a schedule every second."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.polling import wait_until

from notebook_kit.domain.clock import iso_time
from notebook_kit.runtime.process.handles import ServerProcess
from notebook_kit.runtime.process.scheduler import Scheduler
from notebook_kit.workspace.schedules import LATE
from notebook_kit.workspace.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "home")
    workspace.create("jobs", "tick", label="Tick", method="POST", resource="tick",
                     action="res.body = {'ok': True}")  # fmt: skip
    workspace.add_schedule("jobs", "every", "tick", "* * * * * *")
    workspace.deploy("jobs", "dev")
    return workspace


def _wait(futures: list[object]) -> None:
    for future in futures:
        future.result(timeout=30)  # type: ignore[attr-defined]


def test_two_nodes_stepping_over_the_same_ticks_run_each_once(ws: Workspace) -> None:
    one, two = Scheduler(ws, node="one"), Scheduler(ws, node="two")
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
    futures: list[object] = []
    for second in range(5):
        at = start + timedelta(seconds=second, milliseconds=300)
        futures += one.step(at) + two.step(at)
    _wait(futures)
    runs = ws.schedule_runs("jobs", "every", limit=None)
    counts = Counter(r["tick"] for r in runs)
    assert max(counts.values()) == 1
    ticks = sorted(counts)
    assert len(ticks) >= 5 and ticks[-1] == iso_time((start + timedelta(seconds=4)).timestamp())
    # the steps come faster than the runs end: ticks meanwhile are skipped (overlap: skip)
    assert {r["status"] for r in runs} <= {"succeeded", "skipped"}
    assert "succeeded" in {r["status"] for r in runs}
    assert {r["node"] for r in runs} <= {"one", "two"}


def test_no_tick_before_the_deployment_nor_while_paused(ws: Workspace) -> None:
    deployed = datetime.fromisoformat(ws.deployments("jobs")[-1].deployed_at.replace("Z", "+00:00"))
    node = Scheduler(ws, node="n")
    _wait(node.step(deployed + timedelta(milliseconds=10)))  # a first look right after
    assert all(r["tick"] > iso_time(deployed.timestamp()) for r in ws.schedule_runs("jobs"))
    ws.pause_schedule("jobs", "every", "dev")
    before = len(ws.schedule_runs("jobs", limit=None))
    _wait(node.step(deployed + timedelta(seconds=5)))
    assert len(ws.schedule_runs("jobs", limit=None)) == before
    ws.resume_schedule("jobs", "every", "dev")
    resumed = datetime.now(UTC)
    _wait(node.step(deployed + timedelta(seconds=8)))  # 3 s after the paused look
    runs = ws.schedule_runs("jobs", limit=None)
    assert len(runs) > before
    assert all(r["tick"] > iso_time(resumed.timestamp()) for r in runs[: len(runs) - before])


def test_a_tick_no_node_took_in_time_is_logged_missed(ws: Workspace) -> None:
    node = Scheduler(ws, node="n")
    now = datetime.now(UTC) + timedelta(seconds=1)
    _wait(node.step(now))
    _wait(node.step(now + timedelta(seconds=LATE + 3)))  # a node stalled past LATE
    statuses = Counter(r["status"] for r in ws.schedule_runs("jobs", limit=None))
    assert statuses["missed"] >= 2 and statuses["succeeded"] >= 1
    missed = next(r for r in ws.schedule_runs("jobs", limit=None) if r["status"] == "missed")
    assert "not run" in missed["error"]


def test_a_run_whose_node_stopped_is_closed_as_failed(ws: Workspace) -> None:
    (item,) = ws.schedule_keeper.deployed()
    claimed = ws.schedule_keeper.claim(item, "2030-01-01T00:00:00.000Z", "gone:1")
    assert claimed is not None and claimed.status == "running"  # and its node died here
    node = Scheduler(ws, node="n")
    lease_over = time.time() + ws.schedule_keeper.limit(item.definition) + 11
    node.step(datetime.fromtimestamp(lease_over, UTC))
    (run,) = [r for r in ws.schedule_runs("jobs") if r["id"] == claimed.run_id]
    assert run["status"] == "failed" and "gone:1 stopped" in run["error"]


def test_a_server_runs_a_schedule_every_second(ws: Workspace) -> None:
    server = ServerProcess(ws.home).start()
    try:
        wait_until(lambda: len(ws.schedule_runs("jobs", limit=None)) >= 3, within=15)
    finally:
        server.stop()
    runs = ws.schedule_runs("jobs", limit=None)
    ticks = sorted(r["tick"] for r in runs)
    assert len(set(ticks)) == len(ticks)
    seconds = [datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() for t in ticks]
    assert all(b - a == 1 for a, b in itertools.pairwise(seconds))
    # the first run starts the process that forks action processes: a tick meanwhile may
    # be skipped (overlap skip); none fails
    assert {r["status"] for r in runs} <= {"succeeded", "skipped", "running"}
    assert runs[-1]["status"] == "succeeded" and runs[-1]["duration_ms"] > 0


def test_an_idle_server_starts_running_a_schedule_deployed_after_it_started(
    ws: Workspace,
) -> None:
    """With nothing deployed the scheduler sleeps until the store changes (an idle node
    does not wake for it); a deploy wakes it."""
    ws.undeploy("jobs", "dev")
    server = ServerProcess(ws.home).start()
    try:
        time.sleep(1.5)
        assert ws.schedule_runs("jobs", limit=None) == []
        ws.deploy("jobs", "dev")
        wait_until(lambda: len(ws.schedule_runs("jobs", limit=None)) >= 2, within=15)
    finally:
        server.stop()
