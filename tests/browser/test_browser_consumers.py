"""The studio's Consumers tab in a real JupyterLab, through Debian's Chromium (Playwright):
create a consumer, see its key once with a copy button that copies it, call the kernel's
server with it, see the calls per day and the quota, then revoke a key (asked: Cancel
changes nothing, Confirm revokes it and the server refuses it). The key leaves the page at
the next click. Screenshot: ``test-artifacts/screenshots/consumers.png``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.lab import SCREENSHOTS, STDERR_OUTPUT, Lab, playwright_expect, run_all

from notebook_kit.workspace.workspace import Workspace

expect = playwright_expect()

pytestmark = pytest.mark.slow
VIEWPORT = {"width": 1280, "height": 1400}

APP = "restapi_sample"

CELL = """\
import os
from pathlib import Path

import notebook_kit
from notebook_kit import Workspace

ws = Workspace(os.environ["NOTEBOOK_KIT_HOME"])
ws.install_sample()
server = ws.serve()
(Path(os.environ["NOTEBOOK_KIT_HOME"]) / "server-url").write_text(server.url)
notebook_kit.studio(ws)"""


@pytest.fixture(scope="module")
def lab(jupyter: Lab) -> Iterator[dict[str, Any]]:
    """A JupyterLab on loopback in a temp root, showing the studio over a served sample."""
    root = jupyter.folder("consumers")
    env = {"NOTEBOOK_KIT_HOME": str(root / "workspace")}
    with jupyter.notebook("consumers", [CELL], env) as notebook:
        yield {"base": jupyter.base, "notebook": notebook.path, "home": root / "workspace"}


def _calls(home: Path, name: str) -> int:
    return sum(day["calls"] for day in Workspace(home).consumers.daily(name))


def test_consumers_tab_key_once_usage_and_revoke(page: Any, lab: dict[str, Any]) -> None:
    home: Path = lab["home"]
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    run_all(page, lab["base"], lab["notebook"])
    studio = page.locator(".nk-studio")
    expect(studio).to_be_visible(timeout=90_000)
    page.keyboard.press("Control+b")  # fold Lab's file browser: the studio gets the room
    studio.locator(".nk-tabs .lm-TabBar-tab").filter(has_text="Consumers").click()
    panel = studio.locator(".nk-consumers-panel")
    expect(panel.locator('tr[data-consumer="stage:dev"]')).to_contain_text("(built-in)")

    # create: the key shown once, with a copy button that copies it
    panel.locator(".nk-consumer-name input").fill("student-1")
    panel.locator(".nk-consumer-apps select").select_option(APP)
    panel.locator(".nk-consumer-rate input").fill("50/s")
    panel.locator(".nk-consumer-quota input").fill("100/day")
    panel.locator("button.nk-consumer-create").click()
    status = panel.locator(".nk-consumer-create-status")
    expect(status).to_contain_text("Created consumer student-1 with key nk_")
    shown = panel.locator(".nk-created-key .nk-new-key-text")
    expect(shown).to_have_text(re.compile(r"^nk_[A-Za-z0-9_-]{40}$"))
    key = shown.inner_text()
    expect(panel.locator(".nk-created-key")).to_contain_text("it will not be shown again")
    copy = panel.locator(".nk-created-key .nk-copy button")
    expect(copy).to_have_text("Copy key")
    copy.click()
    expect(copy).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == key
    row = panel.locator('tr[data-consumer="student-1"]')
    expect(row).to_contain_text("50/s (50)")
    expect(row.locator(".nk-consumer-key")).to_have_attribute("data-prefix", key[:8])
    assert key not in panel.locator(".nk-consumers").inner_html()  # the table: prefix only

    # real calls with the key: 5 answered, 1 not found
    url = (home / "server-url").read_text()
    with httpx.Client(base_url=url, timeout=10, headers={"x-api-key": key}) as client:
        for _ in range(5):
            assert client.get(f"/dev/{APP}/employee/E001").status_code == 200
        assert client.get(f"/dev/{APP}/employee/E999").status_code == 404
    deadline = time.monotonic() + 15
    while _calls(home, "student-1") < 6 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _calls(home, "student-1") == 6

    # Refresh: the key leaves the page; the chart and the quota show the calls
    panel.locator("button.nk-consumers-refresh").click()
    expect(panel.locator(".nk-consumers-status")).to_contain_text("3 consumers")
    expect(panel.locator(".nk-new-key-text")).to_have_count(0)
    assert key not in page.content()
    expect(panel.locator(".nk-consumer-pick select")).to_have_value("student-1")
    chart = panel.locator(".nk-consumer-usage svg.nk-chart-usage")
    expect(chart).to_be_visible()
    expect(chart.locator("rect.nk-bar-4xx title")).to_have_text(re.compile(r": 1 answered 4xx$"))
    expect(chart.locator("rect.nk-bar-2xx title")).to_have_text(
        re.compile(r": 5 answered 2xx/3xx$")
    )
    expect(panel.locator(".nk-consumer-quota-left")).to_contain_text("Quota 100/day")

    # a second key, then revoke the first: asked, Cancel changes nothing, Confirm revokes
    panel.locator("button.nk-consumer-add-key").click()
    manage = panel.locator(".nk-consumer-manage-status")
    expect(manage).to_contain_text("Added key nk_")
    expect(panel.locator(".nk-added-key .nk-copy button")).to_be_visible()
    panel.locator(".nk-consumer-key-pick select").select_option(key[:8])
    panel.locator("button.nk-consumer-revoke").click()
    expect(panel.locator(".nk-added-key")).to_be_hidden()  # another action: key forgotten
    confirm = panel.locator("button.nk-consumers-ask-confirm")
    expect(confirm).to_have_text("Confirm revoke")
    expect(panel.locator(".nk-consumers-ask")).to_contain_text(f"Revoke student-1's key {key[:8]}")
    panel.locator("button.nk-consumers-ask-cancel").click()
    expect(manage).to_contain_text("Cancelled: nothing changed")
    assert len(Workspace(home).consumers.get("student-1").keys) == 2
    panel.locator("button.nk-consumer-revoke").click()
    confirm.click()
    expect(manage).to_contain_text(f"Revoked student-1's key {key[:8]}")
    assert [k.prefix for k in Workspace(home).consumers.get("student-1").keys] != [key[:8]]
    assert len(Workspace(home).consumers.get("student-1").keys) == 1
    expect(row.locator(".nk-consumer-key")).to_have_count(1)
    time.sleep(1.0)  # every node refuses a revoked key within 1 s
    with httpx.Client(base_url=url, timeout=10) as client:
        answer = client.get(f"/dev/{APP}/employee/E001", headers={"x-api-key": key})
        assert answer.status_code == 403

    panel.screenshot(path=str(SCREENSHOTS / "consumers.png"))
    expect(page.locator(STDERR_OUTPUT)).to_have_count(0)
