"""Time limits that hold whatever an action does: an async action gets the same 504 as a
sync one, and an action holding the GIL in C code (a catastrophic regex) ends at its
limit because its process is killed, while the worker answers everything else. (A worker
frozen by an action running inline: ``test_supervisor``.) Real servers over real HTTP."""

from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from support.serving import serve_child

from notebook_kit.runtime.process.handles import BackgroundServer
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


def test_an_action_holding_the_gil_ends_at_its_limit_and_stalls_nothing(limits_home: Path) -> None:
    """The regex holds the GIL of its action process for hours: the process is killed at
    the limit (1 s) and the caller gets its 504 within the limit + 1 s, while the same
    worker keeps answering, and SIGTERM stops the server at once."""
    with serve_child(limits_home) as server, ThreadPoolExecutor(1) as pool:
        began = time.monotonic()
        frozen = pool.submit(httpx.get, f"{server.url}/dev/{APP}/regex", timeout=30)
        time.sleep(0.2)
        answers = [httpx.get(f"{server.url}/dev/{APP}/pid", timeout=5) for _ in range(5)]
        regex = frozen.result()
        took = time.monotonic() - began
        assert regex.status_code == 504, regex.text
        assert 1.0 <= took < 2.0
        assert all(a.status_code == 200 for a in answers)
        stopping = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=10) == 0
        assert time.monotonic() - stopping < 3
