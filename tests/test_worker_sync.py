"""A node's workers switch deployments together (issue 10): once any worker has answered
from a new deployment, no worker answers from an older one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from polling import wait_until
from test_live_reload import APP, Cli, Served, create_live_app, version_action

from notebook_kit.runtime.worker_sync import STALE_MS, WorkerSync, allocate
from notebook_kit.workspace.workspace import Workspace

# -- the shared array, between two WorkerSync views in one process -------------------------


def two_workers(built: int = 5) -> tuple[WorkerSync, WorkerSync, object]:
    shared, lock = allocate(2)
    a, b = WorkerSync(shared, lock), WorkerSync(shared, lock)
    a._pid, b._pid = 1001, 1002  # two processes' slots
    assert a.join(built) and b.join(built)
    return a, b, shared


def test_generation_commits_only_when_every_worker_has_built_it() -> None:
    a, b, _ = two_workers()
    assert a.built(5) == 5  # both at 5: committed
    assert a.built(6) == 5  # b has not built 6
    assert a.target == 6  # b is told to reload
    assert b.built(6) == 6
    assert a.committed == 6


def test_different_generations_do_not_commit() -> None:
    a, b, _ = two_workers()
    a.built(7)
    assert b.built(8) == 0  # 7 and 8: no common state yet
    assert a.built(8) == 8


def test_a_worker_that_left_or_went_silent_does_not_hold_commits_back() -> None:
    a, b, shared = two_workers()
    b.leave()
    assert a.built(9) == 9
    c = WorkerSync(shared, a._lock)
    c._pid = 1003
    assert c.join(9)
    base = 2 + 3 * c._slot  # type: ignore[operator]
    shared[base + 2] -= STALE_MS + 1  # its loop stopped beating
    assert a.built(10) == 10


def test_slots_run_out_and_the_extra_worker_switches_alone() -> None:
    shared, lock = allocate(1)  # four slots
    views = [WorkerSync(shared, lock) for _ in range(5)]
    for pid, view in enumerate(views, start=1):
        view._pid = pid
    assert [view.join(1) for view in views] == [True, True, True, True, False]


# -- a real server with two workers ----------------------------------------------------------


def test_two_workers_never_answer_older_after_newer_over_twenty_deploys(
    start_server_process: Callable[..., Served],
    cli: Cli,
    tmp_path: Path,
    sample_workspace: Workspace,
) -> None:
    """Eight clients poll on fresh connections (so both workers answer) while the app is
    redeployed 20 times. An answer is a flap if it shows an older version than one that
    had already been answered (finished) before it started."""
    create_live_app(cli, tmp_path)
    deployer = Workspace(sample_workspace.home)
    deployer.deploy(APP, "dev")
    server = start_server_process(workers=2)
    url = f"{server.url}/dev/{APP}/v"
    answers: list[tuple[float, float, int, int]] = []  # started, ended, version, pid
    failures: list[str] = []
    stop = threading.Event()

    def poll() -> None:
        with httpx.Client(timeout=5, limits=httpx.Limits(max_keepalive_connections=0)) as client:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    response = client.get(url)
                    data = response.json()
                except (httpx.HTTPError, ValueError) as exc:
                    failures.append(repr(exc))
                    continue
                answers.append((started, time.monotonic(), data["version"], data["pid"]))

    wait_until(lambda: httpx.get(url, timeout=5).status_code == 200, within=15)
    with ThreadPoolExecutor(8) as pool:
        for _ in range(8):
            pool.submit(poll)
        try:
            wait_until(lambda: len({a[3] for a in answers}) == 2, within=10)
            for version in range(2, 22):
                deployer.edit(APP, "v", action=version_action(version))
                deployer.deploy(APP, "dev")
                wait_until(lambda v=version: any(a[2] == v for a in answers[-16:]), within=5)
                time.sleep(0.1)
        finally:
            stop.set()
    assert failures == []
    assert {a[2] for a in answers} >= set(range(1, 22))
    assert len({a[3] for a in answers}) == 2  # both workers answered
    flaps = []
    newest_done = 0  # the newest version answered before the current answer started
    done = sorted(answers, key=lambda a: a[1])
    i = 0
    for started, _, version, pid in sorted(answers):
        while i < len(done) and done[i][1] < started:
            newest_done = max(newest_done, done[i][2])
            i += 1
        if version < newest_done:
            flaps.append((version, newest_done, pid))
    assert flaps == [], f"{len(flaps)} answers older than one already seen: {flaps[:5]}"


def test_a_worker_serves_the_committed_state_even_after_building_a_newer_one(
    tmp_path: Path,
) -> None:
    """The node commits generation G while this worker is already building G+1: the
    worker serves G (what the others serve), then G+1 once they have it too."""
    from notebook_kit.runtime.app import Runtime

    workspace = Workspace(tmp_path / "home")
    workspace.create_application(APP)
    workspace.create(APP, "v", label="v", method="GET", resource="v", action=version_action(1))
    workspace.deploy(APP, "dev")
    runtime = Runtime(workspace)
    shared, lock = allocate(2)
    runtime.join_node(shared, lock)
    other = WorkerSync(shared, lock)
    other._pid = -1
    assert other.join(runtime.live.generation)
    assert runtime.sync is not None
    first = runtime.live.generation

    def served() -> str:
        match = runtime.live.stages["dev"].table.match("GET", [APP, "v"])
        assert match is not None and match.endpoint is not None
        return match.endpoint.definition.action

    workspace.edit(APP, "v", action=version_action(2))
    workspace.deploy(APP, "dev")
    g1 = runtime.prepare()
    assert g1 is not None
    runtime.sync.built(g1.generation)
    assert runtime.catch_up().generation == first  # the other worker is not there yet
    workspace.edit(APP, "v", action=version_action(3))
    workspace.deploy(APP, "dev")
    g2 = runtime.prepare()  # built, not yet reported: the node commits g1 meanwhile
    assert g2 is not None
    assert other.built(g1.generation) == g1.generation
    assert runtime.catch_up() is g1
    assert served() == version_action(2)
    runtime.sync.built(g2.generation)
    assert runtime.catch_up() is g1  # g2 is not committed until the other has it
    other.built(g2.generation)
    assert runtime.catch_up() is g2
    assert served() == version_action(3)
    runtime.leave_node()


def test_a_worker_joining_behind_the_node_builds_before_its_first_request(
    tmp_path: Path,
) -> None:
    """A worker (re)started with a state older than the node serves (it built before a
    deploy the others have) must not answer from it: ``settle`` builds the newest first."""
    import asyncio

    from notebook_kit.runtime.app import Runtime

    workspace = Workspace(tmp_path / "home")
    workspace.create_application(APP)
    workspace.create(APP, "v", label="v", method="GET", resource="v", action=version_action(1))
    workspace.deploy(APP, "dev")
    runtime = Runtime(workspace)  # built generation G
    shared, lock = allocate(2)
    other = WorkerSync(shared, lock)
    other._pid = -1
    workspace.edit(APP, "v", action=version_action(2))
    workspace.deploy(APP, "dev")
    newer = workspace.store.generation()
    assert other.join(newer) and other.built(newer) == newer  # the node serves G+1
    runtime.join_node(shared, lock)
    assert runtime.live.generation < newer
    asyncio.run(runtime.settle(timeout=5))
    assert runtime.live.generation == newer
    runtime.leave_node()


def test_a_worker_joining_ahead_of_the_node_waits_for_the_others(tmp_path: Path) -> None:
    """A worker started after a deploy the other workers have not built yet must not
    answer from it before they can: ``settle`` waits until the node commits it (the
    others are told through the target), and gives up only after its timeout."""
    import asyncio
    import threading
    import time

    from notebook_kit.runtime.app import Runtime

    workspace = Workspace(tmp_path / "home")
    workspace.create_application(APP)
    workspace.create(APP, "v", label="v", method="GET", resource="v", action=version_action(1))
    workspace.deploy(APP, "dev")
    older = workspace.store.generation()
    shared, lock = allocate(2)
    other = WorkerSync(shared, lock)
    other._pid = -1
    assert other.join(older) and other.built(older) == older
    workspace.edit(APP, "v", action=version_action(2))
    workspace.deploy(APP, "dev")
    runtime = Runtime(workspace)  # built the newer generation
    runtime.join_node(shared, lock)
    assert runtime.sync is not None and runtime.live.generation > older

    def the_other_catches_up() -> None:
        deadline = time.monotonic() + 5
        while other.target <= older and time.monotonic() < deadline:
            other.beat()
            time.sleep(0.01)
        time.sleep(0.3)  # building
        other.built(other.target)

    started = time.monotonic()
    helper = threading.Thread(target=the_other_catches_up)
    helper.start()
    asyncio.run(runtime.settle(timeout=5))
    waited = time.monotonic() - started
    committed_when_ready = runtime.sync.committed
    helper.join()
    assert committed_when_ready == runtime.live.generation
    assert 0.25 < waited < 4, waited  # it waited for the other, not for the timeout
    runtime.leave_node()
