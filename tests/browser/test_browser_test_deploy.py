"""The Test, Deploy and Contract tabs in a real JupyterLab, through Debian's Chromium
(Playwright).

What only a browser shows: the status is coloured by its class, a history row's Re-run
button reaches the kernel and runs that call again, the curl line reveals the key on
request, prod's confirmation shows whole and its Cancel changes nothing; a contract drafted
by the kernel appears in the editor, Ctrl+S there saves it and the summary follows, and
Clear asks first.
Screenshot: ``test-artifacts/screenshots/test-deploy.png``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from support.lab import (
    SCREENSHOTS,
    STDERR_OUTPUT,
    TEST_AND_DEPLOY_CELL,
    Lab,
    playwright_expect,
    run_all,
)

from notebook_kit.workspace.workspace import Workspace

expect = playwright_expect()

pytestmark = pytest.mark.slow
VIEWPORT = {"width": 1280, "height": 1600}  # the page's size (and the screenshots')


GREEN, ORANGE = "rgb(26, 127, 55)", "rgb(154, 103, 0)"


@pytest.fixture(scope="module")
def lab(jupyter: Lab) -> Iterator[dict[str, Any]]:
    """A JupyterLab on loopback in a temp root, showing the two panels over the sample."""
    root = jupyter.folder("test-deploy")
    env = {
        "NOTEBOOK_KIT_HOME": str(root / "workspace"),
    }
    with jupyter.notebook("test-deploy", [TEST_AND_DEPLOY_CELL], env) as notebook:
        yield {"base": jupyter.base, "notebook": notebook.path, "home": root / "workspace"}


def _colour(page: Any) -> str:
    return str(page.locator(".nk-test-status b").evaluate("e => getComputedStyle(e).color"))


def test_test_and_deploy_tabs_in_jupyterlab(page: Any, lab: dict[str, Any]) -> None:
    run_all(page, lab["base"], lab["notebook"])
    expect(page.locator(".nk-test")).to_be_visible(timeout=90_000)
    expect(page.locator(".nk-test-request")).to_contain_text("GET http://127.0.0.1:")

    # a found employee: 200, green, the real duration, the saved version
    page.locator(".nk-test-param-id input").fill("E001")
    expect(page.locator(".nk-test-request")).to_contain_text("/dev/restapi_sample/employee/E001")
    page.locator("button.nk-test-run-saved").click()
    status = page.locator(".nk-test-status")
    expect(status).to_contain_text("200 OK")
    expect(status).to_have_class(re.compile(r"\bnk-status-2xx\b"))
    assert _colour(page) == GREEN
    expect(page.locator(".nk-test-output")).to_contain_text('"name": "Alice Martin"')
    expect(page.locator(".nk-test-version")).to_contain_text("ran the saved version")
    expect(page.locator(".nk-test-duration")).to_contain_text(re.compile(r"[\d.]+ m?s"))
    expect(page.locator(".nk-test-duration")).not_to_contain_text("0.0 ms")

    # an unknown one: 404, another class and colour
    page.locator(".nk-test-param-id input").fill("E999")
    page.locator("button.nk-test-run-saved").click()
    expect(status).to_contain_text("404 Not Found")
    expect(status).to_have_class(re.compile(r"\bnk-status-4xx\b"))
    assert _colour(page) == ORANGE

    # the history holds both calls, newest first; re-running the first brings its 200 back
    rows = page.locator(".nk-test-history-row")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("employee/E999")
    expect(rows.nth(1)).to_contain_text("employee/E001")
    rows.nth(1).locator("button.nk-test-history-rerun").click()
    expect(rows).to_have_count(3)
    expect(status).to_have_class(re.compile(r"\bnk-status-2xx\b"))
    expect(rows.nth(0)).to_contain_text("employee/E001")
    expect(page.locator(".nk-test-param-id input")).to_have_value("E999")  # inputs kept

    # curl: the key masked until revealed
    key = Workspace(lab["home"]).keys()["dev"]
    curl = page.locator(".nk-test-curl textarea")
    expect(curl).to_have_value(re.compile(rf"x-api-key: •+{key[-4:]}"))
    reveal = page.locator(".nk-test-curl-reveal")
    reveal.click()
    expect(curl).to_have_value(re.compile(rf"x-api-key: {key}"))
    expect(reveal).to_have_text("Hide key")
    assert reveal.evaluate("e => e.scrollWidth <= e.clientWidth")  # not truncated

    # prod asks first, the question and its buttons whole; Cancel deploys nothing
    before = len(Workspace(lab["home"]).deployments("restapi_sample"))
    page.locator("button.nk-deploy-prod").click()
    confirm = page.locator("button.nk-deploy-prod-ask-confirm")
    expect(confirm).to_be_visible()
    expect(confirm).to_have_text("Confirm deploy to prod")
    assert confirm.evaluate("e => e.scrollWidth <= e.clientWidth")  # not truncated
    page.locator("button.nk-deploy-prod-ask-cancel").click()
    expect(confirm).to_be_hidden()
    expect(page.locator(".nk-deploy-status")).to_contain_text("Cancelled: nothing changed")
    assert len(Workspace(lab["home"]).deployments("restapi_sample")) == before

    # confirmed, the new deployment is the live one in the prod table
    page.locator("button.nk-deploy-prod").click()
    confirm.click()
    expect(page.locator(".nk-deploy-status")).to_contain_text(
        "Deployed restapi_sample to prod (release): deployment"
    )
    newest = Workspace(lab["home"]).deployments("restapi_sample")[-1]
    row = page.locator(f'.nk-deployments-prod tr[data-deployment-id="{newest.id}"]')
    expect(row.locator(".nk-live")).to_be_visible()
    expect(page.locator(".nk-deployments-prod .nk-live")).to_have_count(1)

    # the Contract tab: a draft in the editor, Ctrl+S saves it, the summary follows
    page.locator("button.nk-contract-infer").click()
    contract = page.locator(".nk-contract-editor .cm-content")
    expect(contract).to_contain_text('"in": "path"')
    expect(page.locator(".nk-contract-status")).to_contain_text("not saved yet")
    contract.click()
    page.keyboard.press("Control+s")
    expect(page.locator(".nk-contract-status")).to_contain_text("Contract saved")
    expect(page.locator(".nk-contract-summary tr.nk-contract-parameter")).to_contain_text("id")
    saved = Workspace(lab["home"]).contract("restapi_sample", "employee")
    assert [(p.location, p.name) for p in saved.parameters] == [("path", "id")]
    page.locator("button.nk-contract-clear").click()
    page.locator("button.nk-contract-clear-ask-confirm").click()
    expect(page.locator(".nk-contract-summary")).to_contain_text("Nothing declared")
    assert Workspace(lab["home"]).contract("restapi_sample", "employee").is_empty

    expect(page.locator(STDERR_OUTPUT)).to_have_count(0)
    page.locator(".jp-Cell").first.screenshot(path=str(SCREENSHOTS / "test-deploy.png"))
