"""Record and replay in a real JupyterLab, through Debian's Chromium (Playwright): in the
studio, a call recorded by the kernel's server is listed in the Logs tab, opens in the
Test tab with one click (its request filled in) and runs there; replayed against the
saved version after an edit, the diff shows.
Screenshot: ``test-artifacts/screenshots/replay.png``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from support.lab import (
    SCREENSHOTS,
    STDERR_OUTPUT,
    Lab,
    playwright_expect,
    run_all,
)

expect = playwright_expect()

pytestmark = pytest.mark.slow
VIEWPORT = {"width": 1280, "height": 1200}  # the page's size (and the screenshots')

APP = "restapi_sample"

CELL = """\
import os

import httpx

import notebook_kit
from notebook_kit import Workspace

ws = Workspace(os.environ["NOTEBOOK_KIT_HOME"])
ws.install_sample()
ws.set_setting("record_requests_dev", "true")
server = ws.serve()
key = ws.keys()["dev"]
httpx.post(
    f"{server.url}/dev/restapi_sample/calculator",
    headers={"x-api-key": key, "Content-Type": "application/json"},
    content=b'{"arg1": 2, "arg2": 3, "operation": "plus"}',
)
server.sync()
ws.edit("restapi_sample", "calculator", action="res.body = '42'")
notebook_kit.studio(ws)"""


@pytest.fixture(scope="module")
def lab(jupyter: Lab) -> Iterator[dict[str, Any]]:
    root = jupyter.folder("replay")
    env = {
        "NOTEBOOK_KIT_HOME": str(root / "workspace"),
    }
    with jupyter.notebook("replay", [CELL], env) as notebook:
        yield {"base": jupyter.base, "notebook": notebook.path, "home": root / "workspace"}


def test_a_recorded_call_opens_in_test_and_replays(page: Any, lab: dict[str, Any]) -> None:
    run_all(page, lab["base"], lab["notebook"])
    studio = page.locator(".nk-studio")
    expect(studio).to_be_visible(timeout=90_000)
    page.keyboard.press("Control+b")
    tabs = studio.locator(".nk-tabs .lm-TabBar-tab")
    tabs.filter(has_text="Logs").click()
    entry = studio.locator(".nk-replay-entry select")
    expect(entry).to_be_visible(timeout=10_000)
    expect(entry.locator("option").first).to_contain_text(f"POST /dev/{APP}/calculator · 200")

    # one click: the Test tab, the calculator, its body and headers as called
    studio.locator("button.nk-replay-open").click()
    expect(studio.locator(".nk-test")).to_be_visible()
    expect(studio.locator(".nk-test h4")).to_contain_text(f"Test {APP} / calculator")
    expect(studio.locator(".nk-test-body textarea")).to_have_value(
        '{"arg1": 2, "arg2": 3, "operation": "plus"}'
    )
    headers = studio.locator(".nk-test-headers textarea")
    expect(headers).to_have_value(re.compile(r"content-type: application/json", re.I))
    expect(headers).not_to_have_value(re.compile(r"x-api-key|cookie|host", re.I))
    expect(studio.locator(".nk-test-message")).to_contain_text("Logged call 1 loaded")
    studio.locator("button.nk-test-run-saved").click()
    expect(studio.locator(".nk-test-status")).to_contain_text("200 OK")
    expect(studio.locator(".nk-test-output")).to_contain_text("42")

    # replay against the saved version: the answers differ, the diff shows
    tabs.filter(has_text="Logs").click()
    studio.locator(".nk-replay-against select").select_option("saved")
    studio.locator("button.nk-replay-run").click()
    expect(studio.locator(".nk-replay-status")).to_contain_text("The answers differ")
    diff = studio.locator(".nk-replay-diff")
    expect(diff).to_contain_text("+++ saved")
    expect(diff).to_contain_text("-5")
    expect(diff).to_contain_text("+42")
    added = diff.locator("span", has_text=re.compile(r"^\+42$"))
    assert added.evaluate("e => getComputedStyle(e).color") == "rgb(26, 127, 55)"
    studio.locator(".nk-replay-against select").select_option(label="dev (live)")
    studio.locator("button.nk-replay-run").click()
    expect(studio.locator(".nk-replay-status")).to_contain_text("Same answer")
    expect(page.locator(STDERR_OUTPUT)).to_have_count(0)
    studio.locator(".nk-replay-against select").select_option("saved")
    studio.locator("button.nk-replay-run").click()
    expect(diff).to_be_visible()
    studio.screenshot(path=str(SCREENSHOTS / "replay.png"))
