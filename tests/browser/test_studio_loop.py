"""The whole edit-test-deploy loop, through the studio's UI only, in a real JupyterLab and
Debian's headless Chromium: create an application and a definition, see a compile error
marked on its line, test the edited and the saved versions, deploy to dev, see the
deployment history and roll back, see the logs chart after some calls, see a change made
with the CLI appear by itself, and delete the application.

The test reads the store only to check what the UI did (never to act); the HTTP calls are
what a client of the deployed API makes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.lab import (
    REPO,
    SCREENSHOTS,
    STDERR_OUTPUT,
    Lab,
    free_port,
    new_page,
    playwright_expect,
    run_all,
)

from notebook_kit.workspace.workspace import Workspace

expect = playwright_expect()

pytestmark = pytest.mark.slow

CELLS = [
    """\
import os

import notebook_kit
from notebook_kit import Workspace

ws = Workspace(os.environ["NOTEBOOK_KIT_HOME"])  # empty: made by the test
server = ws.serve(port=int(os.environ["NK_STUDIO_PORT"]))
print("SERVING", server.running)""",
    "notebook_kit.studio(ws)",
]

FIRST = 'res.body = {"hello": req.pathParameters["name"]}'
SECOND = 'res.body = {"hi": req.pathParameters["name"]}'


@pytest.fixture(scope="module")
def lab(jupyter: Lab) -> Iterator[dict[str, Any]]:
    home = jupyter.folder("loop") / "workspace"
    port = free_port()
    env = {"NOTEBOOK_KIT_HOME": str(home), "NK_STUDIO_PORT": str(port)}
    with jupyter.notebook("loop", CELLS, env) as notebook:
        yield {
            "base": jupyter.base,
            "notebook": notebook.path,
            "home": home,
            "api": f"http://127.0.0.1:{port}",
        }


def _type_code(page: Any, editor: Any, text: str) -> None:
    """Replace an editor's text as a person would: click, select all, type."""
    editor.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)


def _get_when(url: str, key: str, expected: dict[str, str]) -> httpx.Response:
    """GET ``url`` until it answers ``expected`` (servers reload within a second)."""
    deadline = time.monotonic() + 5
    while True:
        answer = httpx.get(url, headers={"x-api-key": key}, timeout=5)
        if (answer.status_code == 200 and answer.json() == expected) or (
            time.monotonic() > deadline
        ):
            return answer
        time.sleep(0.1)


def test_the_whole_loop_through_the_studio(chromium: Any, lab: dict[str, Any]) -> None:
    with new_page(chromium, {"width": 1280, "height": 800}) as page:
        try:
            _loop(page, lab)
        except BaseException:
            page.screenshot(path=str(SCREENSHOTS / "studio-loop-failed.png"))
            raise


def _loop(page: Any, lab: dict[str, Any]) -> None:
    run_all(page, lab["base"], lab["notebook"])
    studio = page.locator(".nk-studio")
    expect(studio).to_be_visible(timeout=90_000)
    page.keyboard.press("Control+b")  # fold Lab's file browser: the studio gets the room
    tabs = studio.locator(".nk-tabs .lm-TabBar-tab")
    home = lab["home"]

    # 1. an application, from the application bar
    studio.locator(".nk-app-new-id input").fill("loop")
    studio.locator(".nk-app-new-label input").fill("Loop demo")
    studio.locator("button.nk-app-create").click()
    expect(studio.locator(".nk-app-status")).to_contain_text("loop")
    expect(studio.locator(".nk-app-picker select")).to_have_value("loop")
    expect(studio.locator(".nk-app-new-id input")).to_be_hidden()  # folded after a create

    # 2. a definition; a compile error is marked on its line, then fixed and saved (Ctrl+S)
    studio.locator("button.nk-new").click()
    studio.locator(".nk-field-id input").fill("greet")
    studio.locator(".nk-field-label input").fill("Greeting")
    studio.locator(".nk-field-resource input").fill("greet/{name}")
    action = studio.locator(".nk-action")
    _type_code(page, action, "name = 1\nres.body = (\n")
    expect(action.locator(".cm-nk-error-line")).to_have_count(1)
    expect(action.locator(".cm-nk-error-line")).to_contain_text("res.body = (")
    _type_code(page, action, FIRST)
    expect(action.locator(".cm-nk-error-line")).to_have_count(0)
    page.keyboard.press("Control+s")
    expect(studio.locator(".nk-save-status")).to_contain_text("Saved loop / greet")
    expect(studio.locator('.nk-definition-row[data-api-id="greet"]')).to_have_class(
        re.compile("nk-selected")
    )
    assert Workspace(home).get("loop", "greet").action == FIRST
    # the other actions sit under Save, in view without scrolling past the form
    for control in ("button.nk-delete", "button.nk-manage-more"):
        expect(studio.locator(control)).to_be_in_viewport()
    studio.locator("button.nk-manage-more").click()
    expect(studio.locator("button.nk-commit-run")).to_be_in_viewport()
    studio.locator("button.nk-manage-more").click()
    expect(studio.locator("button.nk-commit-run")).to_be_hidden()

    # 3. Test: the saved version, then an unsaved edit with Ctrl+Enter, then saved again
    tabs.filter(has_text="Test").click()
    studio.locator(".nk-test-param-name input").fill("ada")
    studio.locator("button.nk-test-run-saved").click()
    output = studio.locator(".nk-test-output")
    expect(output).to_contain_text('"hello": "ada"')
    expect(studio.locator(".nk-test-version")).to_contain_text("ran the saved version")
    expect(studio.locator(".nk-test-status")).to_have_class(re.compile(r"\bnk-status-2xx\b"))
    tabs.filter(has_text="Edit").click()
    _type_code(page, action, SECOND)
    expect(studio.locator(".nk-unsaved")).to_contain_text("unsaved changes")
    page.keyboard.press("Control+Enter")  # runs the edited version, in the Test tab
    expect(output).to_contain_text('"hi": "ada"')
    expect(studio.locator(".nk-test-version")).to_contain_text("ran the edited version")
    expect(studio.locator(".nk-test-request")).to_contain_text("the edited version, unsaved")
    studio.locator("button.nk-test-run-saved").click()
    expect(output).to_contain_text('"hello": "ada"')
    expect(studio.locator(".nk-test-edited")).to_have_count(0)
    assert Workspace(home).get("loop", "greet").action == FIRST  # the edit is not saved

    # 4. deploy to dev; save the edit; deploy again: two deployments, the newest live
    tabs.filter(has_text="Deploy").click()
    studio.locator("button.nk-deploy-dev").click()
    expect(studio.locator(".nk-deploy-status")).to_contain_text("Deployed loop to dev")
    first_id = Workspace(home).deployments("loop")[-1].id
    key = Workspace(home).keys()["dev"]
    url = f"{lab['api']}/dev/loop/greet/ada"
    assert _get_when(url, key, {"hello": "ada"}).json() == {"hello": "ada"}
    tabs.filter(has_text="Edit").click()
    action.locator(".cm-content").click()
    page.keyboard.press("Control+s")
    expect(studio.locator(".nk-save-status")).to_contain_text("Saved loop / greet")
    expect(studio.locator(".nk-unsaved")).to_have_text("")
    tabs.filter(has_text="Deploy").click()
    studio.locator("button.nk-deploy-dev").click()
    history = studio.locator(".nk-deployments-dev tr[data-deployment-id]")
    expect(history).to_have_count(2)
    assert _get_when(url, key, {"hi": "ada"}).json() == {"hi": "ada"}

    # 5. roll back to the first deployment, confirmed
    studio.locator(".nk-rollback-stage select").select_option("dev")
    target = studio.locator(".nk-rollback-target select")  # the one before the live one
    chosen = target.evaluate("e => e.options[e.selectedIndex].text")
    assert chosen.split()[0] == str(first_id)  # ipywidgets shows spaces as no-break ones
    studio.locator("button.nk-rollback").click()
    studio.locator("button.nk-rollback-ask-confirm").click()
    expect(studio.locator(".nk-rollback-status")).to_contain_text(str(first_id))
    live = studio.locator(f'.nk-deployments-dev tr[data-deployment-id="{first_id}"] .nk-live')
    expect(live).to_be_visible()
    assert _get_when(url, key, {"hello": "ada"}).json() == {"hello": "ada"}

    # 6. some calls, then the Logs tab draws its charts from the request log
    for name in ("bo", "cy", "di"):
        assert httpx.get(
            f"{lab['api']}/dev/loop/greet/{name}", headers={"x-api-key": key}
        ).is_success
    assert httpx.get(f"{lab['api']}/dev/loop/greet/x").status_code == 403  # no key
    tabs.filter(has_text="Logs").click()
    expect(studio.locator(".nk-logs-chart-rate svg")).to_be_visible(timeout=20_000)
    expect(studio.locator(".nk-logs-chart-latency svg")).to_be_visible()
    studio.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(SCREENSHOTS / "studio-logs.png"))

    # 7. the CLI (another process) adds a definition: the studio shows it by itself
    source = home.parent / "ping.py"
    source.write_text('res.body = "pong"\n')
    subprocess.run(
        [
            *(sys.executable, "-m", "notebook_kit", "create", "loop", "ping"),
            *("--label", "Ping from the CLI", "--method", "get", "--resource", "ping"),
            *("--action-file", str(source)),
        ],
        env={**os.environ, "NOTEBOOK_KIT_HOME": str(home)},
        check=True,
        capture_output=True,
        timeout=60,
    )
    expect(studio.locator('.nk-definition-row[data-api-id="ping"]')).to_be_visible(timeout=3_000)

    tabs.filter(has_text="Edit").click()
    expect(page.locator(STDERR_OUTPUT)).to_have_count(0)
    studio.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(SCREENSHOTS / "studio-loop.png"))  # what 1280x800 shows
    if os.environ.get("NOTEBOOK_KIT_UPDATE_DOCS"):  # refresh the README's picture on purpose
        shutil.copyfile(SCREENSHOTS / "studio-loop.png", REPO / "docs" / "studio.png")

    # 8. delete the application, confirmed: it is gone from the store and the studio
    studio.locator("button.nk-app-delete").click()
    studio.locator("button.nk-app-delete-ask-confirm").click()
    expect(studio.locator(".nk-definition-row")).to_have_count(0)
    assert [a.id for a in Workspace(home).applications()] == []
    expect(page.locator(STDERR_OUTPUT)).to_have_count(0)
