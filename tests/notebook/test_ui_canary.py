"""The studio's canary widgets from Python over a real workspace: the Deploy tab starts,
promotes and drops a canary (each confirmed, Cancel changing nothing); the Logs tab shows
the two sides side by side and the deployment that answered each call (served by a real
server). In the browser: ``test_browser_canary.py``."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from support.polling import wait_until

from notebook_kit.notebook.ui.deploy import DeployPanel
from notebook_kit.notebook.ui.logs import LogsPanel
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace

APP = "restapi_sample"


@pytest.fixture
def deploy_tab(sample_workspace: Workspace) -> DeployPanel:
    sample_workspace.edit(APP, "employee", label="Employee v2")
    panel = DeployPanel(sample_workspace, lambda: "http://127.0.0.1:9")
    panel.load(APP, None)
    return panel


def _sides(html: str) -> list[tuple[str, int, str]]:
    """(side, deployment, share) of the split as drawn."""
    found = re.findall(
        r'<tr class="nk-canary-(\w+)" data-deployment-id="(\d+)"><td[^>]*>\w+</td>'
        r"<td[^>]*>\d+</td><td[^>]*>(\d+ %)</td>",
        html,
    )
    return [(side, int(dep), share) for side, dep, share in found]


def test_start_promote_and_drop_a_canary_each_confirmed(deploy_tab: DeployPanel) -> None:
    ws, canary = deploy_tab.workspace, deploy_tab.canary
    live = next(d.id for d in ws.deployments(APP) if d.active and d.stage == "prod")
    assert "No canary runs on prod" in canary.split.value
    assert canary.promote.disabled and canary.drop.disabled
    canary.percent.value = 20
    canary.rollback_above.value = "5"
    canary.start.click()
    assert canary.ask.asking and "20 % of prod&#x27;s callers" in canary.ask.question.value
    canary.ask.cancel.click()
    assert ws.canary(APP) is None and canary.status.text == "Cancelled: nothing changed"
    canary.start.click()
    canary.ask.confirm.click()
    running = ws.canary(APP)
    assert running is not None and (running.percent, running.rollback_above) == (20, 5.0)
    assert canary.status.text == (
        f"Deployment {running.canary_id} serves 20 % of prod's calls as a canary"
    )
    assert _sides(canary.split.value) == [
        ("live", live, "80 %"),
        ("canary", running.canary_id, "20 %"),
    ]
    assert "rolled back automatically above 5 % 5xx (after 20 calls)" in canary.split.value
    assert not canary.promote.disabled
    canary.promote.click()
    canary.ask.confirm.click()
    assert ws.canary(APP) is None
    assert canary.status.text == f"Promoted: deployment {running.canary_id} serves every prod call"
    # the deployments table above marks the promoted canary live
    assert f'data-deployment-id="{running.canary_id}" data-stage="prod">' in (
        deploy_tab.deployments.value
    )
    canary.start.click()
    canary.ask.confirm.click()
    canary.drop.click()
    canary.ask.confirm.click()
    assert ws.canary(APP) is None
    assert canary.status.text == (
        f"Canary dropped: deployment {running.canary_id} serves every prod call"
    )


@pytest.mark.parametrize(
    ("percent", "threshold", "message"),
    [
        (10, "five", "the rollback threshold must be a number of percent, not 'five'"),
        (10, "100", "rollback threshold must be at least 0 and below 100 (%), not 100.0"),
    ],
)
def test_a_bad_canary_shows_why_and_changes_nothing(
    deploy_tab: DeployPanel, percent: int, threshold: str, message: str
) -> None:
    ws, canary = deploy_tab.workspace, deploy_tab.canary
    before = ws.deployments()
    canary.percent.value = percent
    canary.rollback_above.value = threshold
    canary.start.click()
    if canary.ask.asking:
        canary.ask.confirm.click()
    assert canary.status.text == message
    assert ws.deployments() == before and ws.canary(APP) is None


def test_a_canary_of_an_app_not_on_prod_is_refused(sample_workspace: Workspace) -> None:
    sample_workspace.create("fresh", "one", label="One", method="GET", resource="one")
    panel = DeployPanel(sample_workspace, lambda: "http://127.0.0.1:9")
    panel.load("fresh", None)
    panel.canary.start.click()
    panel.canary.ask.confirm.click()
    assert "fresh is not live on prod" in panel.canary.status.text
    assert sample_workspace.deployments("fresh") == []


@pytest.fixture
def logs_tab(sample_workspace: Workspace) -> Iterator[LogsPanel]:
    panel = LogsPanel(sample_workspace, interval=0.1)
    yield panel
    panel.close()


def test_the_logs_tab_shows_the_sides_and_who_answered(
    sample_workspace: Workspace, logs_tab: LogsPanel
) -> None:
    ws = sample_workspace
    assert logs_tab.canaries.layout.display == "none"  # no canary: nothing shown
    ws.edit(APP, "employee", label="Employee v2")
    canary = ws.deploy(APP, "prod", canary=50).id
    live = ws.canary(APP).live_id  # type: ignore[union-attr]
    key = ws.keys()["prod"]
    with (
        BackgroundServer(ws) as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
    ):
        for side in (canary, canary, live):
            headers = {"x-api-key": key, "X-Notebook-Kit-Deployment": str(side)}
            assert client.get(f"/prod/{APP}/employee/E001", headers=headers).status_code == 200
        server.sync()
    wait_until(lambda: len(ws.request_log()) == 3)
    logs_tab.refresh()
    assert logs_tab.canaries.layout.display is None
    shown = logs_tab.canaries.value
    assert _sides(shown) == [("live", live, "50 %"), ("canary", canary, "50 %")]
    calls = re.findall(r'<tr class="nk-canary-\w+"[^>]*>(?:<td[^>]*>[^<]*</td>){4}', shown)
    assert [re.findall(r">([^<]*)</td>", c)[3] for c in calls] == ["1", "2"]
    cells = re.findall(r"<td[^>]*>([^<]*)</td></tr>", logs_tab.table.value)
    assert cells == [str(live), str(canary), str(canary)]  # newest first
    ws.promote(APP)
    logs_tab.refresh()
    assert logs_tab.canaries.layout.display == "none"
