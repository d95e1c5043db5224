"""Scheduled actions on many nodes (issue 27): three ``notebook-kit serve`` processes on one
PostgreSQL store, a schedule every second; one node is killed with SIGKILL in the middle
of a run and another started. Every tick of the window is in the run log once, none
twice; the action itself records each run it makes in a table of its own database, and
no tick ran twice; the tick killed mid-run is logged as failed, not lost.

``NK_SCHEDULE_NODES_SECONDS`` sets the window (60 s by default; docs/deployments.md has
the figures of a 180 s run) and the test prints its figures."""

from __future__ import annotations

import os
import sqlite3
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.polling import wait_until

from notebook_kit.domain.clock import iso_time
from notebook_kit.runtime.process.handles import ServerProcess
from notebook_kit.runtime.process.scheduler import HEARTBEAT
from notebook_kit.workspace.workspace import Workspace

pytestmark = pytest.mark.serial  # a minute of ticks on three nodes: run alone

SECONDS = float(os.environ.get("NK_SCHEDULE_NODES_SECONDS", "60"))
ACTION = """import json, time
told = json.loads(req.body)['schedule']
db.execute('INSERT INTO calls (tick) VALUES (?)', [told['tick']])
time.sleep(0.4)
res.body = {'tick': told['tick']}
"""


def _seconds(start: datetime, end: datetime) -> list[str]:
    """Every whole second from ``start`` to ``end`` as the run log writes a tick."""
    first = start.replace(microsecond=0) + timedelta(seconds=1)
    count = int((end - first).total_seconds()) + 1
    return [iso_time((first + timedelta(seconds=i)).timestamp()) for i in range(count)]


def test_three_nodes_run_every_tick_once_through_a_kill(
    tmp_path: Path,
    fresh_database: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NOTEBOOK_KIT_STORE", fresh_database)
    # the actions' database: one SQLite file all nodes of this machine reach, each run's
    # own record of having run (a connection to PostgreSQL costs a fresh action process
    # over a second of imports and connecting, longer than a tick)
    (tmp_path / "data").mkdir()
    calls = tmp_path / "data" / "calls.sqlite3"
    with sqlite3.connect(calls) as conn:
        conn.execute("CREATE TABLE calls (tick TEXT NOT NULL)")
    conn.close()
    ws = Workspace(tmp_path / "cli", store=fresh_database)
    ws.set_setting("database_url", f"sqlite:///{calls}")
    ws.create("jobs", "tick", label="Tick", method="POST", resource="tick", action=ACTION,
              timeout=5)  # fmt: skip
    ws.add_schedule("jobs", "every", "tick", "* * * * * *")
    servers = [ServerProcess(tmp_path / f"node{n}", store=fresh_database) for n in range(1, 5)]
    try:
        for server in servers[:3]:
            server.start()
        ws.deploy("jobs", "dev")
        start = datetime.now(UTC)  # the window opens once the schedule is deployed
        # kill node 1 while it runs a tick: its run-log row is open, its action sleeping
        victim = servers[0]
        assert victim.process is not None
        name = f"{os.uname().nodename}:{victim.process.pid}"
        time.sleep(min(SECONDS / 3, 20))

        def victim_running() -> bool:
            runs = ws.schedule_runs("jobs", "every", limit=5)
            return any(r["node"] == name and r["status"] == "running" for r in runs)

        wait_until(victim_running, within=30)
        victim.process.kill()
        victim.process.wait()
        killed_at = datetime.now(UTC)
        servers[3].start()  # another node comes up
        time.sleep(max(0.0, SECONDS - (killed_at - start).total_seconds()))
        end = datetime.now(UTC) - timedelta(seconds=2)  # the window's last tick is in hand

        def settled() -> bool:
            runs = ws.schedule_runs("jobs", "every", limit=None)
            return not any(r["status"] in ("running", "queued") and r["tick"] <= iso_time(
                end.timestamp()) for r in runs)  # fmt: skip

        wait_until(settled, within=HEARTBEAT + 10)  # the killed run's lease runs out
    finally:
        for server in servers:
            server.stop()
    runs = ws.schedule_runs("jobs", "every", limit=None)
    window = _seconds(start, end)
    logged = Counter(r["tick"] for r in runs)
    by_tick = {r["tick"]: r for r in runs}
    with sqlite3.connect(calls) as conn:
        executed = Counter(row[0] for row in conn.execute("SELECT tick FROM calls"))
    conn.close()
    statuses = Counter(by_tick[t]["status"] for t in window if t in by_tick)
    missing = [t for t in window if t not in logged]
    twice = [t for t in window if logged[t] > 1 or executed[t] > 1]
    durations = sorted(round(r["duration_ms"]) for r in runs if r["status"] == "succeeded")
    nodes = Counter(by_tick[t]["node"].rsplit(":", 1)[1] for t in window if t in by_tick)
    print(
        f"\nschedule every second on 3 nodes, node 1 killed at "
        f"{(killed_at - start).total_seconds():.0f} s of {len(window)} ticks: "
        f"{dict(statuses)}; missing {len(missing)}; twice {len(twice)}; "
        f"runs by node process {dict(nodes)}; run durations (ms) {durations}"
    )
    assert missing == [] and twice == []
    killed = [r for r in runs if r["node"] == name and r["status"] == "failed"]
    assert killed and "stopped before the run finished" in killed[0]["error"]
    for tick in window:
        if by_tick[tick]["status"] == "succeeded":
            assert executed[tick] == 1  # a success ran once; nothing else ran it again
        elif by_tick[tick]["status"] in ("skipped", "missed"):
            assert executed[tick] == 0
    assert statuses["succeeded"] >= len(window) - 2 * HEARTBEAT - 4
    assert len(nodes) >= 3  # the ticks went around the nodes
