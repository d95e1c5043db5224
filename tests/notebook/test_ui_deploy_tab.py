"""The Deploy tab driven from Python over a real workspace: deploy, confirm or cancel,
history, rollback, undeploy, the saved-vs-live diff and the endpoint URLs."""

from __future__ import annotations

import re
import time
from datetime import datetime

import httpx
import pytest

from notebook_kit import Workspace
from notebook_kit.notebook.ui.deploy import DeployPanel
from notebook_kit.notebook.ui.diff_view import local_time
from notebook_kit.notebook.ui.server_panel import mask_key
from notebook_kit.runtime.process.handles import BackgroundServer


@pytest.fixture
def demo(workspace: Workspace) -> Workspace:
    workspace.create("demo", "hello", label="Hello", method="GET", resource="hello/{name}",
                     action="res.body = {'v': 1}")  # fmt: skip
    return workspace


def make_panel(ws: Workspace, app: str = "demo", api_id: str | None = "hello") -> DeployPanel:
    calls: list[str] = []
    panel = DeployPanel(ws, lambda: "http://127.0.0.1:9", lambda: calls.append("deployed"))
    panel.calls = calls  # type: ignore[attr-defined]
    panel.load(app, ws.get(app, api_id) if api_id else None)
    return panel


def rows(panel: DeployPanel, stage: str) -> list[tuple[int, bool]]:
    """(deployment id, live) of the stage's table, as shown (newest first)."""
    table = re.search(rf'<table class="nk-deployments-{stage}".*?</table>', panel.deployments.value)
    if table is None:
        return []
    found = re.findall(r'<tr data-deployment-id="(\d+)"(.*?)</tr>', table.group(0))
    return [(int(i), "nk-live" in rest) for i, rest in found]


def test_deploy_dev_says_stage_id_and_time_and_marks_live(demo: Workspace) -> None:
    panel = make_panel(demo)
    assert rows(panel, "dev") == []
    assert "never deployed" in panel.deployments.value
    panel.deploy_dev.click()

    deployment = demo.deployments("demo")[-1]
    assert panel.status.text == (
        f"Deployed demo to dev (debug): deployment {deployment.id} at "
        f"{local_time(deployment.deployed_at)}, live within a second on every server"
    )
    assert rows(panel, "dev") == [(deployment.id, True)]
    assert deployment.host in panel.deployments.value
    assert 'class="nk-diff-dev" data-in-sync="true"' in panel.diff.value
    assert 'class="nk-diff-prod" data-in-sync="false"' in panel.diff.value
    assert "not deployed" in panel.diff.value
    assert panel.calls == ["deployed"]  # type: ignore[attr-defined]


def test_deploy_prod_asks_and_cancel_changes_nothing(demo: Workspace) -> None:
    panel = make_panel(demo)
    panel.deploy_prod.click()
    assert panel.prod_ask.asking
    assert panel.prod_ask.confirm.description == "Confirm deploy to prod"
    assert "prod" not in {str(d.stage) for d in demo.deployments("demo")}

    panel.prod_ask.cancel.click()
    assert not panel.prod_ask.asking
    assert panel.status.text == "Cancelled: nothing changed"
    assert demo.deployments("demo") == []

    panel.deploy_prod.click()
    panel.prod_ask.confirm.click()
    assert [str(d.stage) for d in demo.deployments("demo")] == ["prod"]
    assert panel.status.text.startswith("Deployed demo to prod (release): deployment ")
    assert rows(panel, "prod")[0][1]


def test_rollback_to_kept_deployment_after_confirm(demo: Workspace) -> None:
    panel = make_panel(demo)
    panel.deploy_dev.click()
    first = demo.deployments("demo")[-1].id
    demo.edit("demo", "hello", action="res.body = {'v': 2}")
    panel.refresh()
    assert 'data-in-sync="false"' in panel.diff.value.split("nk-diff-prod")[0]
    panel.deploy_dev.click()
    second = demo.deployments("demo")[-1].id
    assert rows(panel, "dev") == [(second, True), (first, False)]
    assert panel.rollback_target.value == first  # the one before the live one
    assert [v for _, v in panel.rollback_target.options] == [first]

    panel.rollback.click()
    assert panel.rollback_ask.asking
    assert panel.rollback_ask.confirm.description == f"Confirm rollback to {first}"
    assert demo.live("dev")["demo"][0].action == "res.body = {'v': 2}"  # asked, not done
    panel.rollback_ask.confirm.click()

    assert demo.live("dev")["demo"][0].action == "res.body = {'v': 1}"
    assert panel.rollback_status.text == (
        f"Rolled demo back on dev: deployment {first} "
        f"(of {local_time(demo.deployments('demo')[0].deployed_at)}) is live"
    )
    assert rows(panel, "dev") == [(second, False), (first, True)]
    # what is live now differs from what is saved: the diff says how
    dev = panel.diff.value.split('class="nk-diff-prod"')[0]
    assert "changed" in dev
    assert "-res.body = {&#x27;v&#x27;: 1}" in dev
    assert "+res.body = {&#x27;v&#x27;: 2}" in dev
    assert panel.calls == ["deployed", "deployed", "deployed"]  # type: ignore[attr-defined]


def test_rollback_without_other_deployment_is_refused(demo: Workspace) -> None:
    panel = make_panel(demo)
    panel.deploy_dev.click()
    panel.rollback.click()
    assert panel.rollback_status.text == "demo has no other deployment on dev to go back to"
    assert not panel.rollback_ask.asking
    panel.rollback_stage.value = "prod"
    assert panel.rollback_target.options == ()


def test_undeploy_asks_then_takes_stage_down(demo: Workspace) -> None:
    panel = make_panel(demo)
    panel.deploy_dev.click()
    panel.undeploy_dev.click()
    assert panel.undeploy_ask.asking
    assert panel.undeploy_ask.confirm.description == "Confirm undeploy dev"
    panel.undeploy_ask.cancel.click()
    assert "demo" in demo.live("dev")

    panel.undeploy_dev.click()
    panel.undeploy_ask.confirm.click()
    assert "demo" not in demo.live("dev")
    assert panel.status.text == "Undeployed demo from dev: its URLs answer 404"
    assert rows(panel, "dev")[0][1] is False  # history stays, nothing live

    panel.undeploy_dev.click()
    panel.undeploy_ask.confirm.click()
    assert "is not deployed to dev" in panel.status.text


def test_deploy_refusals_show_beside_buttons(workspace: Workspace) -> None:
    panel = DeployPanel(workspace, lambda: "http://127.0.0.1:9")
    panel.load("", None)
    panel.deploy_dev.click()
    assert panel.status.text == "choose an application first"
    panel.load("nothing-here", None)
    assert "Nothing saved yet" in panel.diff.value
    panel.deploy_dev.click()
    assert "no application 'nothing-here'" in panel.status.text
    assert "nk-status-error" in panel.status._dom_classes


def test_refresh_shows_deploys_made_by_another_process(demo: Workspace) -> None:
    panel = make_panel(demo)
    other = Workspace(demo.home)
    deployment = other.deploy("demo", "prod")
    panel.refresh()
    assert rows(panel, "prod") == [(deployment.id, True)]
    assert 'class="nk-diff-prod" data-in-sync="true"' in panel.diff.value


def test_diff_lists_added_and_removed_definitions(demo: Workspace) -> None:
    demo.create("demo", "gone", label="Gone", method="GET", resource="gone")
    panel = make_panel(demo)
    panel.deploy_dev.click()
    demo.delete("demo", "gone")
    demo.create("demo", "fresh", label="Fresh", method="POST", resource="fresh")
    panel.refresh()
    dev = panel.diff.value.split('class="nk-diff-prod"')[0]
    assert "saved differs: 1 added, 1 removed" in dev
    assert re.search(r'nk-diff-added"[^>]*>added</span> fresh', dev)
    assert re.search(r'nk-diff-removed"[^>]*>removed</span> gone', dev)


def test_urls_and_curl_of_deployed_definition(
    sample_workspace: Workspace, running_server: BackgroundServer
) -> None:
    panel = DeployPanel(sample_workspace, lambda: running_server.url)
    employee = sample_workspace.get("restapi_sample", "employee")
    panel.load("restapi_sample", employee)
    url = f"{running_server.url}/dev/restapi_sample/employee/{{id}}"
    assert panel.url_texts["dev"].value == url
    assert f'href="{url}"' in panel.urls.value
    key = sample_workspace.keys()["dev"]
    runnable = f"curl --globoff '{url}' -H 'x-api-key: {key}'"
    assert panel.curl.value == f"curl --globoff '{url}' -H 'x-api-key: {mask_key(key)}'"
    assert key not in panel.curl.value  # masked, as in the Test tab
    assert panel.curl_copy.text == runnable  # the copy runs as is
    panel.curl_reveal.value = True
    assert panel.curl.value == runnable
    assert panel.curl_reveal.description == "Hide key"
    answer = httpx.get(url.replace("{id}", "E001"), headers={"x-api-key": key}, timeout=10)
    assert answer.status_code == 200

    panel.undeploy_dev.click()
    panel.undeploy_ask.confirm.click()
    assert panel.curl.value.startswith(f"curl --globoff '{running_server.url}/prod/")
    deadline = time.monotonic() + 5  # the server picks the undeploy up within its interval
    while answer.status_code == 200 and time.monotonic() < deadline:
        answer = httpx.get(url.replace("{id}", "E001"), headers={"x-api-key": key}, timeout=10)
        time.sleep(0.05)
    assert answer.status_code == 404


def test_rollback_choice_survives_refresh_but_not_a_new_deploy(demo: Workspace) -> None:
    panel = make_panel(demo)
    for _ in range(3):
        panel.deploy_dev.click()
    first, second, third = (d.id for d in demo.deployments("demo"))
    assert panel.rollback_target.value == second
    panel.rollback_target.value = first
    panel.refresh()  # as the studio does when another process changed the store
    assert panel.rollback_target.value == first
    panel.deploy_dev.click()
    assert panel.rollback_target.value == third  # the one before the new live one


def test_curl_fills_path_parameters_from_the_test_tab(
    sample_workspace: Workspace, running_server: BackgroundServer
) -> None:
    values = {"id": "E 001"}
    panel = DeployPanel(
        sample_workspace, lambda: running_server.url, path_parameters=lambda: values
    )
    panel.load("restapi_sample", sample_workspace.get("restapi_sample", "employee"))
    assert f"curl {running_server.url}/dev/restapi_sample/employee/E%20001 -H" in panel.curl.value
    assert "--globoff" not in panel.curl.value and "{id}" not in panel.curl.value
    values["id"] = ""  # not given: the template stays, curl told not to glob it
    panel.show_urls()
    assert "--globoff" in panel.curl.value and "employee/{id}" in panel.curl.value


def test_undeploy_is_offered_only_where_the_application_is_served(demo: Workspace) -> None:
    panel = make_panel(demo)
    assert panel.undeploy_dev.disabled and panel.undeploy_prod.disabled  # never deployed
    panel.deploy_dev.click()
    assert not panel.undeploy_dev.disabled
    assert panel.undeploy_prod.disabled
    panel.undeploy_dev.click()
    panel.undeploy_ask.confirm.click()
    assert panel.undeploy_dev.disabled  # nothing left to take down
    assert not panel.deploy_dev.disabled


def test_deploy_description_goes_with_the_deployment_into_the_table(demo: Workspace) -> None:
    panel = make_panel(demo)
    panel.description.value = "first <b>cut</b>"
    panel.deploy_dev.click()
    deployment = demo.deployments("demo")[-1]
    assert deployment.description == "first <b>cut</b>"
    assert "first &lt;b&gt;cut&lt;/b&gt;" in panel.deployments.value
    assert panel.description.value == ""  # the next deploy says its own
    panel.description.value = "two\nlines"
    panel.deploy_dev.click()
    assert "one line" in panel.status.text
    assert len(demo.deployments("demo")) == 1


def test_history_shows_local_times_and_a_rollback_button_per_other_row(demo: Workspace) -> None:
    panel = make_panel(demo)
    panel.deploy_dev.click()
    panel.deploy_dev.click()
    first, second = demo.deployments("demo")
    when = datetime.fromisoformat(first.deployed_at.replace("Z", "+00:00")).astimezone()
    assert when.strftime("%Y-%m-%d %H:%M:%S") in panel.deployments.value
    assert f'title="{first.deployed_at} (UTC)"' in panel.deployments.value
    buttons = re.findall(
        r'class="nk-row-rollback[^"]*" data-nk-event="rollback" data-nk-id="(\d+)"',
        panel.deployments.value,
    )
    assert buttons == [str(first.id)]  # not on the live one

    panel.deployments.click("rollback", str(first.id))  # the row's button
    assert panel.rollback_ask.asking
    assert panel.rollback_ask.confirm.description == f"Confirm rollback to {first.id}"
    assert demo.live("dev")["demo"] and demo.deployments("demo")[-1].active  # asked only
    panel.rollback_ask.confirm.click()
    assert [d.active for d in demo.deployments("demo")] == [True, False]
    assert f"deployment {first.id}" in panel.rollback_status.text
    assert re.findall(r'data-nk-id="(\d+)" title="Serve', panel.deployments.value) == [
        str(second.id)
    ]
