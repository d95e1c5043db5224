"""Time limits that hold whatever an action does: an async action gets the same 504 as a
sync one."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from notebook_kit.runtime.server import BackgroundServer
from notebook_kit.workspace.workspace import Workspace

APP = "limits"
ACTIONS = {
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
