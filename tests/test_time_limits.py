"""Time limits that hold whatever an action does: an async action gets the same 504 as a
sync one, and a worker frozen with the GIL held past its limit (a catastrophic regex) is
ended by its watchdog (SIGALRM) and replaced: by its supervisor with one worker, by the
server's main process with two. Real servers over real HTTP."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from polling import wait_until
from serving import serve_child

from notebook_kit.runtime.server import BackgroundServer
from notebook_kit.workspace.workspace import Workspace

APP = "limits"
# Exponential backtracking in C, with the GIL held throughout: hours at 34 characters.
REGEX = "import re\nre.match(r'(a+)+$', 'a' * 34 + 'b')\nres.body = {'matched': True}\n"
ACTIONS = {
    "regex": REGEX,
    "pid": "import os\nres.body = {'pid': os.getpid()}\n",
    "ahang": "import asyncio\nawait asyncio.sleep(30)\n",
    "aswallow": (
        "import asyncio\ntry:\n    await asyncio.sleep(30)\nexcept asyncio.CancelledError:\n"
        "    pass\nres.body = {'swallowed': True}\n"
    ),
    "aown": "import asyncio\nawait asyncio.sleep(0)\nraise TimeoutError('upstream')\n",
}


@pytest.fixture(scope="module")
def limits_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workspace = Workspace(tmp_path_factory.mktemp("limits") / "workspace")
    workspace.create_application(APP)
    for name, action in ACTIONS.items():
        workspace.create(
            APP, name, label=name, method="GET", resource=name, action=action, requires_auth=False
        )
    workspace.set_setting("action_timeout", "1")
    workspace.deploy(APP, "dev")
    return workspace.home


@pytest.mark.parametrize("name", ["ahang", "aswallow"])
def test_async_action_past_its_limit_answers_504(limits_home: Path, name: str) -> None:
    workspace = Workspace(limits_home)
    with BackgroundServer(workspace) as server:
        began = time.monotonic()
        answer = httpx.get(server.endpoint("dev", APP, name), timeout=10)
        took = time.monotonic() - began
    assert answer.status_code == 504
    assert answer.json() == {
        "message": "Endpoint request timed out",
        "action": f"{APP}/{name}",
        "timeoutSeconds": 1,
    }
    assert answer.headers["access-control-allow-origin"] == "*"
    assert took < 2.0
    stats = workspace.store.action_stats()["dev", APP, name]
    assert stats["timeouts"] >= 1 and stats["lastError"].startswith("ActionTimeout")


def test_async_action_raising_its_own_timeout_error_is_a_500(limits_home: Path) -> None:
    with BackgroundServer(Workspace(limits_home)) as server:
        answer = httpx.get(server.endpoint("dev", APP, "aown"), timeout=10)
    assert answer.status_code == 500
    assert answer.json()["error"] == "TimeoutError: upstream"


def call_regex(url: str) -> str:
    try:
        return str(httpx.get(f"{url}/dev/{APP}/regex", timeout=30).status_code)
    except httpx.TransportError as exc:
        return type(exc).__name__


def test_frozen_single_worker_exits_for_its_supervisor(limits_home: Path) -> None:
    """The GIL is held: no Python thread runs, SIGTERM is not handled; the kernel's timer
    ends the process (SIGALRM) within the limit (1 s) + grace (2 s) + its re-arm period,
    after faulthandler wrote every thread's stack to the log."""
    with serve_child(limits_home) as server, ThreadPoolExecutor(1) as pool:
        began = time.monotonic()
        frozen = pool.submit(call_regex, server.url)
        time.sleep(0.5)
        server.process.send_signal(signal.SIGTERM)  # cannot be handled while frozen
        assert server.process.wait(timeout=10) == -signal.SIGALRM
        took = time.monotonic() - began
        assert frozen.result() in ("RemoteProtocolError", "ReadError")
    assert 3.0 <= took < 3.1 + 1.0
    assert f'File "<action {APP}/regex>"' in server.log()
    assert "most recent call first" in server.log()


def test_idle_or_busy_worker_is_not_ended_by_the_watchdog(limits_home: Path) -> None:
    """The timer only fires when nothing can run Python: an idle worker (its monitor
    asleep) and one whose action releases the GIL outlive the 3.1 s it is armed for."""
    with serve_child(limits_home) as server:
        first = httpx.get(f"{server.url}/dev/{APP}/pid", timeout=5).json()["pid"]
        time.sleep(4.5)  # idle
        assert httpx.get(f"{server.url}/dev/{APP}/ahang", timeout=5).status_code == 504
        assert httpx.get(f"{server.url}/dev/{APP}/pid", timeout=5).json()["pid"] == first
        assert server.process.poll() is None


def test_frozen_worker_of_two_is_replaced(limits_home: Path) -> None:
    pid_url = f"/dev/{APP}/pid"
    with serve_child(limits_home, workers=2) as server, httpx.Client(timeout=10) as client:

        def worker_pids() -> set[int]:
            with ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(lambda _: httpx.get(server.url + pid_url), range(16)))
            assert all(a.status_code == 200 for a in answers)
            return {a.json()["pid"] for a in answers}

        before = worker_pids()
        assert call_regex(server.url) in ("RemoteProtocolError", "ReadError")
        wait_until(lambda: "(frozen past its time limit): starting a replacement" in server.log())
        # the other worker answers meanwhile; then both serve again, one of them new
        assert client.get(server.url + pid_url).status_code == 200
        wait_until(lambda: len(worker_pids()) == 2 and worker_pids() != before, within=10)
        assert f'File "<action {APP}/regex>"' in server.log()
        os.killpg(server.process.pid, signal.SIGTERM)
        assert server.process.wait(timeout=15) == 0
