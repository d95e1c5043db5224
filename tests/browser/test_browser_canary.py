"""The canary in a real JupyterLab, through Debian's Chromium (Playwright): the Deploy
tab starts a prod canary (its confirmation whole, Cancel changing nothing), the split
shows both sides, real calls to the kernel's server show up per side in the Logs tab and
in its table's deployment column, and Promote ends it.
Screenshot: ``test-artifacts/screenshots/canary.png``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.lab import (
    SCREENSHOTS,
    STDERR_OUTPUT,
    Lab,
    playwright_expect,
    run_all,
)

from notebook_kit.workspace.workspace import Workspace

expect = playwright_expect()

pytestmark = pytest.mark.slow
VIEWPORT = {"width": 1280, "height": 1800}  # the page's size (and the screenshots')

APP = "restapi_sample"

CELL = """\
import os
from pathlib import Path

import ipywidgets as widgets

from notebook_kit import Workspace
from notebook_kit.notebook.ui.deploy import DeployPanel
from notebook_kit.notebook.ui.logs import LogsPanel

ws = Workspace(os.environ["NOTEBOOK_KIT_HOME"])
ws.install_sample()
ws.edit("restapi_sample", "employee", label="Employee v2")
server = ws.serve()
(Path(os.environ["NOTEBOOK_KIT_HOME"]) / "server-url").write_text(server.url)
deploy = DeployPanel(ws, lambda: server.url)
deploy.load("restapi_sample", None)
logs = LogsPanel(ws)
widgets.VBox([deploy, logs])"""


@pytest.fixture(scope="module")
def lab(jupyter: Lab) -> Iterator[dict[str, Any]]:
    """A JupyterLab on loopback in a temp root, showing the Deploy and Logs panels."""
    root = jupyter.folder("canary")
    env = {
        "NOTEBOOK_KIT_HOME": str(root / "workspace"),
    }
    with jupyter.notebook("canary", [CELL], env) as notebook:
        yield {"base": jupyter.base, "notebook": notebook.path, "home": root / "workspace"}


def test_canary_in_the_deploy_and_logs_tabs(page: Any, lab: dict[str, Any]) -> None:
    home: Path = lab["home"]
    run_all(page, lab["base"], lab["notebook"])
    panel = page.locator(".nk-canary-panel")
    expect(panel).to_be_visible(timeout=90_000)
    expect(page.locator(".nk-canary")).to_contain_text("No canary runs on prod.")
    expect(page.locator("button.nk-canary-promote")).to_be_disabled()

    # ask first, the question and its button whole; Cancel changes nothing
    page.locator(".nk-canary-percent input").fill("30")
    page.locator(".nk-canary-threshold input").fill("50")
    page.locator("button.nk-canary-start").click()
    confirm = page.locator("button.nk-canary-ask-confirm")
    expect(confirm).to_have_text("Confirm canary")
    expect(page.locator(".nk-canary-ask")).to_contain_text("to 30 % of prod's callers?")
    assert confirm.evaluate("e => e.scrollWidth <= e.clientWidth")
    page.locator("button.nk-canary-ask-cancel").click()
    expect(page.locator(".nk-canary-status")).to_contain_text("Cancelled: nothing changed")
    assert Workspace(home).canary(APP) is None

    page.locator("button.nk-canary-start").click()
    confirm.click()
    expect(page.locator(".nk-canary-status")).to_contain_text("serves 30 % of prod's calls")
    canary = Workspace(home).canary(APP)
    assert canary is not None and canary.percent == 30 and canary.rollback_above == 50.0
    split = page.locator(".nk-canary .nk-canary-split")
    expect(split.locator(".nk-canary-live")).to_contain_text("70 %")
    expect(split.locator(".nk-canary-canary")).to_contain_text("30 %")
    expect(split).to_contain_text("rolled back automatically above 50 % 5xx")

    # real calls to the kernel's server, reaching each side by the header (once the
    # server has loaded the canary: until then the header names nothing it serves)
    key = Workspace(home).keys()["prod"]
    url = (home / "server-url").read_text()

    def sides() -> tuple[int, int]:
        found = Workspace(home).canary(APP)
        assert found is not None and found.live is not None and found.canary is not None
        return found.live.calls, found.canary.calls

    with httpx.Client(base_url=url, timeout=10) as client:
        for _ in range(50):
            for side in (canary.canary_id, canary.live_id):
                headers = {"x-api-key": key, "X-Notebook-Kit-Deployment": str(side)}
                assert client.get(f"/prod/{APP}/employee/E001", headers=headers).status_code == 200
            page.wait_for_timeout(200)
            if sides()[1] >= 2:
                break
    # every call made is in the log before the page is compared with it (the server writes
    # the log a batch at a time: a call answered last may land after the loop's last read)
    live_calls, canary_calls = sides()
    while True:
        page.wait_for_timeout(600)  # more than a flush and its write
        if sides() == (live_calls, canary_calls):
            break
        live_calls, canary_calls = sides()
    assert canary_calls >= 2
    page.locator("button.nk-logs-refresh").click()
    summary = page.locator(".nk-logs-canary")
    expect(summary).to_be_visible(timeout=10_000)
    live_row = summary.locator(".nk-canary-live td")
    canary_row = summary.locator(".nk-canary-canary td")
    expect(canary_row.nth(3)).to_have_text(str(canary_calls))  # calls
    expect(canary_row.nth(5)).to_have_text("0.0 %")  # error rate
    expect(live_row.nth(3)).to_have_text(str(live_calls))
    expect(canary_row.nth(6)).to_have_text(re.compile(r"^\d+\.\d$"))  # p50 ms
    table = page.locator(".nk-logs-table")
    expect(table.locator("th").last).to_have_text("deployment")
    expect(table.locator("tbody tr").first.locator("td").last).to_have_text(str(canary.live_id))

    page.locator(".jp-Cell").first.screenshot(path=str(SCREENSHOTS / "canary.png"))

    # promote: asked, then the canary is live and the split gone
    page.locator("button.nk-canary-promote").click()
    expect(confirm).to_have_text("Confirm promote")
    confirm.click()
    expect(page.locator(".nk-canary-status")).to_contain_text(
        f"Promoted: deployment {canary.canary_id} serves every prod call"
    )
    expect(page.locator(".nk-canary")).to_contain_text("No canary runs on prod.")
    row = page.locator(f'.nk-deployments-prod tr[data-deployment-id="{canary.canary_id}"]')
    expect(row.locator(".nk-live")).to_be_visible()
    assert Workspace(home).canary(APP) is None
    expect(page.locator(STDERR_OUTPUT)).to_have_count(0)
