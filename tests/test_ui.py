"""The studio driven from Python: set values, click, assert on the store and on what is shown."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

import notebook_kit
from notebook_kit import Workspace
from notebook_kit.notebook.ui import Studio
from notebook_kit.notebook.ui.feedback import output_text


@pytest.fixture
def studio(sample_workspace: Workspace) -> Iterator[Studio]:
    widget = notebook_kit.studio(sample_workspace)
    yield widget
    if widget.server_panel.server is not None:
        widget.server_panel.server.stop()
    widget.close()


def fill_new(studio: Studio, app: str = "demo", **fields: str) -> None:
    if app not in {a.id for a in studio.workspace.applications()}:
        studio.workspace.create_application(app)
    studio.select(app)
    studio.new.click()
    values = {
        "id": "hello",
        "label": "Say hello",
        "resource": "hello/{name}",
        "action": "print('computing')\nres.body = {'hello': req.pathParameters['name']}",
        **fields,
    }
    form = studio.form
    for name, value in values.items():
        getattr(form, name).value = value


def get_when_live(url: str, key: str) -> httpx.Response:
    """GET ``url``, allowing the server its reload interval to pick up a deploy."""
    deadline = time.monotonic() + 3
    while True:
        answer = httpx.get(url, headers={"x-api-key": key}, timeout=10)
        if answer.status_code != 404 or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def test_test_panel_shows_status_body_and_printed_output(studio: Studio) -> None:
    fill_new(studio)
    studio.form.save.click()
    studio.tester.params["name"].value = "ada"
    studio.tester.headers.value = "X-Trace: 1"
    studio.tester.run.click()

    shown = output_text(studio.tester.output)
    assert shown.startswith("Status 200 OK")
    assert '"hello": "ada"' in shown
    assert "--- printed by the action ---\ncomputing" in shown
    assert "traceback" not in shown


def test_test_panel_shows_traceback_when_action_raises(studio: Studio) -> None:
    fill_new(studio, action="def f():\n    return 1 / 0\nf()")
    studio.form.save.click()
    studio.tester.params["name"].value = "ada"
    studio.tester.run.click()

    shown = output_text(studio.tester.output)
    assert shown.startswith("Status 500")
    assert "--- traceback ---" in shown
    assert "ZeroDivisionError" in shown
    assert "raised an error" in studio.tester.status.text


def test_test_panel_refuses_missing_parameter_and_bad_headers(studio: Studio) -> None:
    fill_new(studio)
    studio.form.save.click()
    studio.tester.run.click()
    assert "path parameter {name}" in studio.tester.status.text

    studio.tester.params["name"].value = "ada"
    studio.tester.headers.value = "no colon here"
    studio.tester.run.click()
    assert "must be written 'Name: value'" in studio.tester.status.text
    assert not studio.tester.run.disabled


def test_deploy_dev_shows_deployed_and_served_url_answers(
    studio: Studio, sample_workspace: Workspace
) -> None:
    studio.server_panel.start.click()
    fill_new(studio)
    studio.form.save.click()
    studio.tester.params["name"].value = "ada"
    studio.deploy.path_parameters = studio.tester.path_parameters
    studio.deploy.deploy_dev.click()

    assert sample_workspace.deployed_state(sample_workspace.get("demo", "hello"), "dev") == (
        "deployed"
    )
    row = next(r for r in studio.definitions.rows if r["id"] == "hello")
    assert row["states"] == [["dev", "deployed"], ["prod", "not deployed"]]
    url = studio.deploy.url_texts["dev"].value
    assert url == f"{studio.server_panel.server.url}/dev/demo/hello/ada"
    assert f'href="{url}"' in studio.deploy.urls.value
    assert studio.deploy.url_copies["dev"].text == url
    key = sample_workspace.keys()["dev"]
    assert studio.deploy.curl.value == f"curl {url} -H 'x-api-key: {key}'"
    assert get_when_live(url, key).json() == {"hello": "ada"}

    studio.tester.send_dev.click()
    shown = output_text(studio.tester.output)
    assert shown.startswith(f"GET {url}\nStatus 200 OK")
    assert studio.tester.status.text == "dev answered 200"


def test_send_to_dev_without_server_shows_error(studio: Studio) -> None:
    studio.server_panel.url.value = "http://127.0.0.1:9"  # nothing listens there
    studio.definitions.pick("calculator")
    studio.tester.send_dev.click()
    assert (
        "cannot reach http://127.0.0.1:9/dev/restapi_sample/calculator" in studio.tester.status.text
    )


def test_prod_deploy_needs_confirmation(studio: Studio, sample_workspace: Workspace) -> None:
    fill_new(studio)
    studio.form.save.click()
    studio.deploy.deploy_prod.click()

    hello = sample_workspace.get("demo", "hello")
    assert sample_workspace.deployed_state(hello, "prod") == "not deployed"
    assert studio.deploy.confirm_prod.layout.display is None
    studio.deploy.confirm_prod.click()
    assert sample_workspace.deployed_state(hello, "prod") == "deployed"
    assert studio.deploy.confirm_prod.layout.display == "none"


def test_undeploy_dev_takes_application_off_dev(
    studio: Studio, sample_workspace: Workspace
) -> None:
    studio.definitions.pick("employee")
    studio.deploy.undeploy_dev.click()
    assert "restapi_sample" not in sample_workspace.live("dev")
    studio.deploy.undeploy_dev.click()
    assert "is not deployed to dev" in studio.deploy.status.text


def test_deploy_refusal_shows_status(studio: Studio) -> None:
    studio.deploy.load("nothing-here", None)
    studio.deploy.deploy_dev.click()
    assert "no application 'nothing-here'" in studio.deploy.status.text


def test_resources_panel_shows_totals_and_tree(studio: Studio) -> None:
    view = studio.resources.view.value
    assert "<b>dev</b>: 5 resources" in view
    assert "/{id} (GET, OPTIONS)" in view
    studio.definitions.pick("employee")
    studio.deploy.undeploy_prod.click()
    assert "<b>prod</b>: 1 resources" in studio.resources.view.value


def test_confirm_runs_the_action_only_on_confirm_and_cancel_changes_nothing() -> None:
    from notebook_kit.errors import ValidationError
    from notebook_kit.notebook.ui.feedback import Confirm, Status

    status = Status()
    bar = Confirm(status, "Confirm delete", "nk-demo")
    ran: list[str] = []
    assert not bar.asking
    bar.ask("Delete it?", lambda: ran.append("deleted"))
    assert bar.asking and "Delete it?" in bar.question.value
    bar.cancel.click()
    assert ran == [] and not bar.asking and status.text == "Cancelled: nothing changed"
    bar.confirm.click()  # hidden and forgotten: nothing pending runs
    assert ran == []
    bar.ask("Delete it?", lambda: ran.append("deleted"), confirm_label="Confirm delete it")
    assert bar.confirm.description == "Confirm delete it"
    assert bar.confirm.layout.width == "auto"
    bar.confirm.click()
    assert ran == ["deleted"] and not bar.asking

    def refused() -> None:
        raise ValidationError("not allowed")

    bar.ask("Again?", refused)
    bar.confirm.click()
    assert status.text == "not allowed" and "nk-status-error" in status._dom_classes
