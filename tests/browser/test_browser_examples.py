"""The Test tab's examples and the deploy gate in a real JupyterLab, through Debian's
Chromium (Playwright): save the current request as an example (the last status by
default), run the application's examples into a pass/fail table, and a deploy refused by
a failing example, said in the Deploy tab. Screenshot:
``test-artifacts/screenshots/examples.png``.
"""

from __future__ import annotations

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


@pytest.fixture(scope="module")
def lab(jupyter: Lab) -> Iterator[dict[str, Any]]:
    """A JupyterLab on loopback in a temp root, showing the two panels over the sample."""
    root = jupyter.folder("examples")
    env = {
        "NOTEBOOK_KIT_HOME": str(root / "workspace"),
    }
    with jupyter.notebook("examples", [TEST_AND_DEPLOY_CELL], env) as notebook:
        yield {"base": jupyter.base, "notebook": notebook.path, "home": root / "workspace"}


def test_save_and_run_examples_and_a_refused_deploy(page: Any, lab: dict[str, Any]) -> None:
    run_all(page, lab["base"], lab["notebook"])
    expect(page.locator(".nk-examples")).to_be_visible(timeout=90_000)

    # run a found employee; its 200 becomes the expected status; save it as an example
    page.locator(".nk-test-param-id input").fill("E001")
    page.locator("button.nk-test-run-saved").click()
    expect(page.locator(".nk-test-status")).to_contain_text("200 OK")
    expect(page.locator(".nk-example-status input")).to_have_value("200")
    page.locator(".nk-example-name input").fill("alice")
    page.locator(".nk-example-fields textarea").fill("name=Alice Martin\nage=34")
    page.locator("button.nk-example-save").click()
    expect(page.locator(".nk-example-save-status")).to_contain_text(
        "Saved example employee/alice: expects 200 and 2 JSON field(s)"
    )

    # a second one whose expectation is wrong
    page.locator(".nk-test-param-id input").fill("E002")
    page.locator("button.nk-test-run-saved").click()
    expect(page.locator(".nk-test-status")).to_contain_text("200 OK")
    page.locator(".nk-example-name input").fill("bob")
    page.locator(".nk-example-fields textarea").fill("name=Bob")
    page.locator("button.nk-example-save").click()
    expect(page.locator(".nk-example-save-status")).to_contain_text("Saved example employee/bob")
    saved = Workspace(lab["home"]).examples("restapi_sample")
    assert [e.name for e in saved] == ["alice", "bob"]

    # run them: a pass/fail table with the difference
    page.locator("button.nk-examples-run").click()
    table = page.locator(".nk-examples-table")
    expect(table.locator('tr[data-example="employee/alice"]')).to_contain_text("PASS")
    bob = table.locator('tr[data-example="employee/bob"]')
    expect(bob).to_contain_text("FAIL")
    expect(bob).to_contain_text('name is "Bob Tanaka", expected "Bob"')
    assert bob.locator("b").evaluate("e => getComputedStyle(e).color") == "rgb(207, 34, 46)"
    expect(page.locator(".nk-examples-status")).to_contain_text(
        "1 of 2 examples of restapi_sample fail on the saved definitions"
    )

    # the deploy is refused, naming the example and the difference; nothing changes
    before = len(Workspace(lab["home"]).deployments("restapi_sample"))
    page.locator("button.nk-deploy-dev").click()
    expect(page.locator(".nk-deploy-status")).to_contain_text(
        "deploy of restapi_sample to dev refused, nothing changed: example employee/bob "
        'fails: name is "Bob Tanaka", expected "Bob"'
    )
    assert len(Workspace(lab["home"]).deployments("restapi_sample")) == before

    expect(page.locator(STDERR_OUTPUT)).to_have_count(0)
    page.locator(".jp-Cell").first.screenshot(path=str(SCREENSHOTS / "examples.png"))
