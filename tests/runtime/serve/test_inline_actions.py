"""Fast actions run inline in the worker that read the call, after the loop's next turn;
the others in action processes (``sandbox.pace``).

A real ``notebook-kit serve`` over real HTTP: an action's answer says which process ran it
(the worker's pid, or an action process's). Plus the order of two calls read in the same
turn of the loop, on a dispatcher built in this process.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from support.latency import calculator_latencies
from support.live import LocalLive
from support.tree import worker_pids

from notebook_kit.domain.models import Constant
from notebook_kit.runtime.process.handles import ServerProcess
from notebook_kit.runtime.serve.dispatch import Dispatcher
from notebook_kit.runtime.serve.http_app import create_app
from notebook_kit.runtime.serve.http_guard import GuardedRequest
from notebook_kit.runtime.serve.reserved import ReservedPaths
from notebook_kit.sandbox.pace import PROMOTE_AFTER
from notebook_kit.workspace.workspace import Workspace

APP = "pace"
# Reads the database (so it may run inline); fast until a flag file exists, then it does
# what the flag file says.
TURNS = """\
import os, time
db.query("SELECT 1 AS one")
flag = const.FLAG
mode = open(flag).read() if os.path.exists(flag) else ""
if mode == "sleep":
    time.sleep(0.4)
elif mode == "nap":
    time.sleep(0.001)
res.body = {"pid": os.getpid()}
"""


@pytest.fixture(scope="module")
def pace_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("pace") / "workspace"
    workspace = Workspace(home)
    workspace.install_sample()
    (home / "files").mkdir(exist_ok=True)
    for name in ("turns", "naps"):
        workspace.create(
            APP,
            name,
            label=name,
            method="GET",
            resource=name,
            action=TURNS,
            requires_auth=False,
            constants=[Constant("FLAG", "String", str(home / "files" / f"{name}.flag"))],
        )
    workspace.deploy(APP, "dev")
    return home


@pytest.fixture
def server(pace_home: Path) -> Iterator[ServerProcess]:
    for flag in (pace_home / "files").glob("*.flag"):
        flag.unlink()
    process = ServerProcess(pace_home).start()
    yield process
    process.stop()


def pids_seen(client: httpx.Client, path: str, calls: int) -> list[int]:
    found = []
    for _ in range(calls):
        answer = client.get(path)
        assert answer.status_code == 200, answer.text
        found.append(answer.json()["pid"])
    return found


def test_a_fast_action_moves_from_action_processes_into_the_worker(
    server: ServerProcess,
) -> None:
    assert server.process is not None
    (worker,) = worker_pids(server.process.pid)
    with httpx.Client(base_url=server.url, timeout=10) as client:
        pids = pids_seen(client, f"/dev/{APP}/turns", PROMOTE_AFTER + 8)
    assert worker not in pids[:PROMOTE_AFTER]  # proven in an action process first
    assert pids[-4:] == [worker] * 4


def test_an_action_that_turns_slow_goes_back_to_its_processes(
    server: ServerProcess, pace_home: Path
) -> None:
    assert server.process is not None
    (worker,) = worker_pids(server.process.pid)
    key = Workspace(pace_home).keys()["dev"]
    path = f"/dev/{APP}/turns"
    with httpx.Client(base_url=server.url, timeout=10) as client:
        assert pids_seen(client, path, PROMOTE_AFTER + 8)[-1] == worker
        (pace_home / "files" / "turns.flag").write_text("sleep")
        # The call that shows it is slow runs inline (it was fast until now) ...
        assert client.get(path).json()["pid"] == worker
        # ... and the next ones in action processes, where they stall nothing.
        assert client.get(path).json()["pid"] != worker
        with ThreadPoolExecutor(1) as pool:
            slow = pool.submit(client.get, path)
            time.sleep(0.05)
            latencies = calculator_latencies(server.url, key, 0.3)
            assert slow.result().json()["pid"] != worker
    # A sleep of 0.4 s in the worker would hold the first calculator call (made 0.05 s in)
    # for 0.35 s at least.
    assert max(latencies) < 0.3, [round(x, 3) for x in latencies]


def test_an_action_that_waits_in_its_process_is_never_promoted(
    server: ServerProcess, pace_home: Path
) -> None:
    assert server.process is not None
    (worker,) = worker_pids(server.process.pid)
    (pace_home / "files" / "naps.flag").write_text("nap")  # a millisecond's sleep: it waited
    with httpx.Client(base_url=server.url, timeout=10) as client:
        assert worker not in pids_seen(client, f"/dev/{APP}/naps", PROMOTE_AFTER * 3)


def test_calls_read_in_one_turn_are_all_routed_before_their_inline_actions_run(
    tmp_path: Path,
) -> None:
    """Two calls that arrive together: the second is read and routed (its log entry's
    start) before the first one's action runs (the time the action saw)."""
    workspace = Workspace(tmp_path / "workspace")
    stamp = 'import time\nres.body = {"ran": time.perf_counter()}'
    workspace.create(
        APP, "stamp", label="stamp", method="GET", resource="stamp", action=stamp,
        requires_auth=False,
    )  # fmt: skip
    workspace.deploy(APP, "dev")
    live = LocalLive(workspace).live
    found = live.stages["dev"].table.match("GET", [APP, "stamp"])
    assert found is not None and found.endpoint is not None
    found.endpoint.pace.inline = True  # proven (what the promotion does)
    page = memoryview(bytearray(64)).cast("q")
    reserved = ReservedPaths(workspace.services, workspace.home, lambda: live.settings)

    async def unused(_entries: object) -> None:
        return None

    async def calls() -> tuple[list[dict[str, float]], list[tuple[float, ...]]]:
        dispatcher = Dispatcher(live, None, page, reserved, lambda: None, unused)  # type: ignore[arg-type]
        app = create_app(dispatcher, name="notebook_kit_turns")
        try:

            def call() -> object:
                request = GuardedRequest(b"/dev/pace/stamp", {"host": "h"}, "1.1", "GET", None, app)
                return dispatcher.handle(request)

            answers = await asyncio.gather(call(), call())  # type: ignore[arg-type]
            return [json.loads(a.body) for a in answers], dispatcher.take_log()[-2:]
        finally:
            app.unregister_app(app)

    (first, second), (first_entry, second_entry) = asyncio.run(calls())
    assert first_entry[0] < second_entry[0] < first["ran"] < second["ran"]
