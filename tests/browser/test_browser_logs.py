"""The Logs, Resources and application panels in a real JupyterLab, driven through
Debian's Chromium by Playwright: the charts are SVG the browser draws, the log refreshes
itself while open, the resource tree is boxes, and an application is created and deleted
(confirmed) from the bar. Screenshots: ``test-artifacts/screenshots/logs*.png``."""

from __future__ import annotations

import time
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
VIEWPORT = {"width": 1280, "height": 800}  # the page's size (and the screenshots')

CELL = """\
import os
from pathlib import Path

import httpx
import ipywidgets as widgets

from notebook_kit import Workspace
from notebook_kit.notebook.ui import ApplicationBar, LogsPanel, ResourcesPanel

ws = Workspace(os.environ["NK_HOME"])
server = ws.serve()
key = ws.keys()["dev"]
for path in ["employee/E001", "employee/E002", "employee/NOPE", "nothing"]:
    httpx.get(f"{server.url}/dev/restapi_sample/{path}", headers={"x-api-key": key})
server.sync()
Path(os.environ["NK_OUT"], "url").write_text(server.url)
bar = ApplicationBar(ws, lambda app, proceed: proceed())
logs = LogsPanel(ws, interval=1.0)
logs.set_active(True)
sidebar = widgets.Box([bar], layout=widgets.Layout(width="320px"))  # as in the studio
widgets.VBox([sidebar, logs, ResourcesPanel(ws)])"""


@pytest.fixture(scope="module")
def lab(jupyter: Lab) -> Iterator[dict[str, Any]]:
    root = jupyter.folder("logs")
    Workspace(root / "home").install_sample()
    env = {
        "NK_HOME": str(root / "home"),
        "NK_OUT": str(root),
    }
    with jupyter.notebook("logs", [CELL], env) as notebook:
        yield {"base": jupyter.base, "notebook": notebook.path, "root": root}


def _server_url(root: Path) -> str:
    deadline = time.monotonic() + 60
    while not (root / "url").exists():
        assert time.monotonic() < deadline, "the kernel did not start its server"
        time.sleep(0.1)
    return (root / "url").read_text()


def test_logs_resources_and_applications_in_jupyterlab(page: Any, lab: dict[str, Any]) -> None:
    run_all(page, lab["base"], lab["notebook"])

    # the charts: real SVG, drawn with a size, one stacked bar per class present
    rate = page.locator(".nk-logs-chart-rate svg.nk-chart-rate")
    expect(rate).to_be_visible(timeout=90_000)
    box = rate.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 100
    expect(page.locator(".nk-logs-chart-rate rect.nk-bar-2xx")).to_have_count(1)
    expect(page.locator(".nk-logs-chart-rate rect.nk-bar-4xx")).to_have_count(1)
    expect(page.locator(".nk-logs-chart-latency circle.nk-point")).to_have_count(2)
    expect(page.locator(".nk-logs-table tbody tr")).to_have_count(4)
    expect(page.locator(".nk-logs-empty")).to_be_hidden()
    page.locator(".nk-logs").screenshot(path=str(SCREENSHOTS / "logs.png"))

    # calls made elsewhere show up by themselves while the panel is active
    url = _server_url(lab["root"])
    for _ in range(2):
        httpx.get(f"{url}/prod/restapi_sample/employee/E001", timeout=10)  # no key: 403
    expect(page.locator(".nk-logs-table tbody tr")).to_have_count(6, timeout=15_000)
    expect(page.locator(".nk-logs-table")).to_contain_text("/prod/restapi_sample/employee/E001")
    # the filter, chosen in the browser, reaches the kernel
    page.locator(".nk-logs-stage select").select_option("prod")
    expect(page.locator(".nk-logs-table tbody tr")).to_have_count(2)
    expect(page.locator(".nk-logs-chart-rate rect.nk-bar-2xx")).to_have_count(0)
    expect(page.locator(".nk-logs-feedback")).to_contain_text("2 of 6 logged requests match")

    # resources: boxes with method badges, not preformatted text
    view = page.locator(".nk-resources-view")
    expect(view.locator(".nk-resource-app")).to_have_count(2)
    expect(view.locator(".nk-resources-dev .nk-method-GET")).to_be_visible()
    expect(view.locator("pre")).to_have_count(0)
    expect(view.locator(".nk-resources-dev .nk-resources-total")).to_have_text("5 resources")

    # applications: create, then delete it (confirmed); nothing truncated on the way
    expect(page.locator(".nk-app-new-id input")).to_be_hidden()  # folded until asked for
    page.locator("button.nk-app-new").click()
    page.locator(".nk-app-new-id input").fill("shop")
    page.locator(".nk-app-new-label input").fill("The shop")
    page.locator("button.nk-app-create").click()
    expect(page.locator(".nk-app-status")).to_have_text("Created application shop (The shop)")
    expect(page.locator(".nk-app-picker select")).to_have_value("shop")
    expect(page.locator(".nk-app-label input")).to_have_value("The shop")
    expect(page.locator(".nk-app-new-id input")).to_be_hidden()  # folded again
    page.locator("button.nk-app-delete").click()
    ask = page.locator(".nk-app-delete-ask")
    expect(ask).to_contain_text("its 0 definitions go and nothing of it is live")
    confirm = page.locator("button.nk-app-delete-ask-confirm")
    expect(confirm).to_be_visible()
    for button in page.locator(".nk-app-bar button").all():  # nothing truncated at 320 px
        assert button.evaluate("b => b.scrollWidth <= b.clientWidth"), button.inner_text()
    bar_box = page.locator(".nk-app-bar").bounding_box()
    assert bar_box is not None and bar_box["width"] <= 321
    page.locator(".nk-app-bar").screenshot(path=str(SCREENSHOTS / "logs-app-delete.png"))
    confirm.click()
    expect(page.locator(".nk-app-status")).to_have_text("Deleted application shop (0 definitions)")
    expect(page.locator(".nk-app-picker select")).to_have_value("restapi_sample")
    expect(ask).to_be_hidden()
    expect(page.locator(STDERR_OUTPUT)).to_have_count(0)
    assert [a.id for a in Workspace(lab["root"] / "home").applications()] == ["restapi_sample"]
