"""The studio's Secrets tab in a real JupyterLab, through Debian's Chromium (Playwright):
set a secret from the password field (the field empties, the value never reaches the
page), see it listed by name, stage and version with the not-live-until-deploy warning,
read it from a live action after a deploy, then delete it (asked: Cancel changes nothing,
Confirm deletes). Screenshot: ``test-artifacts/screenshots/secrets.png``. Then the
Schedules tab beside it: a schedule saved from its form, deployed, shown with its next
run, run now.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.lab import SCREENSHOTS, STDERR_OUTPUT, Lab, playwright_expect, run_all
from support.polling import wait_until

from notebook_kit.workspace.workspace import Workspace

expect = playwright_expect()

pytestmark = pytest.mark.slow
VIEWPORT = {"width": 1280, "height": 1400}

APP = "restapi_sample"
VALUE = "canary-browser-7f3a9c"

CELL = """\
import os
from pathlib import Path

import notebook_kit
from notebook_kit import Workspace

ws = Workspace(os.environ["NOTEBOOK_KIT_HOME"])
ws.install_sample()
ws.create("restapi_sample", "token", label="Token", method="GET", resource="token",
          action="res.body = {'length': len(secrets.API_TOKEN)}", requires_auth=False)
server = ws.serve()
(Path(os.environ["NOTEBOOK_KIT_HOME"]) / "server-url").write_text(server.url)
notebook_kit.studio(ws)"""


@pytest.fixture(scope="module")
def lab(jupyter: Lab) -> Iterator[dict[str, Any]]:
    """A JupyterLab showing the studio over a served sample, its secrets key in a file
    of the test's own (never the user's configuration folder)."""
    root = jupyter.folder("secrets")
    env = {
        "NOTEBOOK_KIT_HOME": str(root / "workspace"),
        "NOTEBOOK_KIT_SECRETS_KEY_FILE": str(root / "secrets.key"),
    }
    with jupyter.notebook("secrets", [CELL], env) as notebook:
        yield {"base": jupyter.base, "notebook": notebook.path, "env": env}


def _workspace(env: dict[str, str]) -> Workspace:
    return Workspace(env["NOTEBOOK_KIT_HOME"])


def test_secrets_tab_sets_lists_and_deletes_without_showing_a_value(
    page: Any, lab: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTEBOOK_KIT_SECRETS_KEY_FILE", lab["env"]["NOTEBOOK_KIT_SECRETS_KEY_FILE"])
    run_all(page, lab["base"], lab["notebook"])
    studio = page.locator(".nk-studio")
    expect(studio).to_be_visible(timeout=90_000)
    page.keyboard.press("Control+b")
    studio.locator(".nk-tabs .lm-TabBar-tab").filter(has_text="Secrets").click()
    panel = studio.locator(".nk-secrets-panel")
    expect(panel).to_be_visible()

    # set: the value goes from the password field to the store, and nowhere else
    panel.locator(".nk-secret-name input").fill("API_TOKEN")
    panel.locator(".nk-secret-stage select").select_option("dev")
    panel.locator(".nk-secret-value input").fill(VALUE)
    panel.locator("button.nk-secret-set").click()
    expect(panel.locator(".nk-secrets-status")).to_contain_text("Secret API_TOKEN set on dev")
    expect(panel.locator(".nk-secret-value input")).to_have_value("")
    table = panel.locator(".nk-secrets-table")
    expect(table).to_contain_text("API_TOKEN")
    expect(table).to_contain_text("dev")
    expect(panel.locator(".nk-secrets-warning")).to_contain_text("deploy")
    assert VALUE not in page.content()

    # live after a deploy: an action of the application reads it
    ws = _workspace(lab["env"])
    assert [(s.name, s.stage) for s in ws.secrets(APP)] == [("API_TOKEN", "dev")]
    ws.deploy(APP, "dev")
    url = (Path(lab["env"]["NOTEBOOK_KIT_HOME"]) / "server-url").read_text()
    with httpx.Client(base_url=url, timeout=10) as client:
        wait_until(
            lambda: client.get(f"/dev/{APP}/token").json() == {"length": len(VALUE)}, within=10
        )

    # delete: asked; Cancel changes nothing; Confirm deletes
    panel.locator(".nk-secret-picked select").select_option(label="API_TOKEN (dev)")
    panel.locator("button.nk-secret-delete").click()
    expect(panel.locator(".nk-secret-delete-ask")).to_contain_text("Delete secret API_TOKEN")
    panel.locator("button.nk-secret-delete-ask-cancel").click()
    assert [s.name for s in _workspace(lab["env"]).secrets(APP)] == ["API_TOKEN"]
    panel.locator("button.nk-secret-delete").click()
    panel.locator("button.nk-secret-delete-ask-confirm").click()
    expect(panel.locator(".nk-secrets-status")).to_contain_text("Secret API_TOKEN deleted on dev")
    expect(panel.locator(".nk-secrets")).not_to_contain_text("API_TOKEN")
    assert _workspace(lab["env"]).secrets(APP) == []
    assert VALUE not in page.content()

    panel.screenshot(path=str(SCREENSHOTS / "secrets.png"))

    # the Schedules tab, next: save a schedule from its form, see it deployed with its
    # next run, run it now (the secret it reads is gone: the run fails, and says why)
    studio.locator(".nk-tabs .lm-TabBar-tab").filter(has_text="Schedules").click()
    schedules = studio.locator(".nk-schedules-panel")
    expect(schedules).to_be_visible()
    schedules.locator(".nk-schedule-name input").fill("hourly")
    schedules.locator(".nk-schedule-definition select").select_option("token")
    schedules.locator(".nk-schedule-cron input").fill("@hourly")
    schedules.locator("button.nk-schedule-save").click()
    expect(schedules.locator(".nk-schedules-status")).to_contain_text("Schedule hourly saved")
    _workspace(lab["env"]).deploy(APP, "dev")
    schedules.locator("button.nk-schedules-refresh").click()
    row = schedules.locator('.nk-schedule-row[data-name="hourly"][data-stage="dev"]')
    expect(row).to_contain_text(":00:00.000Z")  # its next run, on the hour
    schedules.locator(".nk-schedule-picked select").select_option(label="hourly (dev)")
    schedules.locator("button.nk-schedule-run-now").click()
    expect(schedules.locator(".nk-schedules-status")).to_contain_text(
        "Run of hourly on dev: failed", timeout=30_000
    )
    expect(schedules.locator(".nk-schedule-runs-table")).to_contain_text("failed")
    expect(page.locator(STDERR_OUTPUT)).to_have_count(0)
