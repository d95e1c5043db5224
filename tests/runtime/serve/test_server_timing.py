"""The ``server_timing`` setting: a ``Server-Timing`` header (routing, action, total, in
ms) on every answer when on; none when off (the default). A running server follows the
setting at the next reload."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from support.polling import wait_until

from notebook_kit import Workspace
from notebook_kit.runtime.process.handles import BackgroundServer

APP = "timed"
SLOW = "import time\ntime.sleep(0.05)\nres.body = {'slept': True}\n"


@pytest.fixture(scope="module")
def timed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, BackgroundServer]]:
    workspace = Workspace(tmp_path_factory.mktemp("timing") / "home")
    workspace.create_application(APP)
    workspace.create(
        APP, "slow", label="slow", method="GET", resource="slow", action=SLOW, requires_auth=False
    )
    workspace.deploy(APP, "dev")
    with BackgroundServer(workspace) as server:
        assert isinstance(server, BackgroundServer)
        yield workspace, server


def _timings(answer: httpx.Response) -> dict[str, float]:
    found = {}
    for part in answer.headers["server-timing"].split(","):
        name, _, duration = part.strip().partition(";dur=")
        found[name] = float(duration)
    return found


def test_no_header_while_the_setting_is_off(timed: tuple[Workspace, BackgroundServer]) -> None:
    _, server = timed
    answer = httpx.get(server.endpoint("dev", APP, "slow"), timeout=10)
    assert answer.status_code == 200
    assert "server-timing" not in answer.headers


def test_the_header_names_routing_action_and_total(
    timed: tuple[Workspace, BackgroundServer],
) -> None:
    workspace, server = timed
    workspace.set_setting("server_timing", "true")
    try:
        url = server.endpoint("dev", APP, "slow")
        wait_until(lambda: "server-timing" in httpx.get(url, timeout=10).headers, within=2)
        answer = httpx.get(url, timeout=10)
        timings = _timings(answer)
        assert list(timings) == ["routing", "action", "total"]
        assert timings["action"] >= 50  # the action slept 50 ms
        assert 0 <= timings["routing"] < timings["action"]
        parts = timings["routing"] + timings["action"]
        assert parts <= timings["total"] + 0.002  # each rounded to a microsecond
        missing = httpx.get(f"{server.url}/dev/{APP}/nothing-here", timeout=10)
        assert missing.status_code == 404  # no action ran: all of it is routing
        timings = _timings(missing)
        assert timings["action"] == 0 and timings["routing"] == timings["total"]
    finally:
        workspace.set_setting("server_timing", None)
    wait_until(lambda: "server-timing" not in httpx.get(url, timeout=10).headers, within=2)
