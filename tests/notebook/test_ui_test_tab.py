"""The Test tab driven from Python over a real workspace (and a real server for "Send to
dev"): set inputs, click, assert on what is shown."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from notebook_kit import Workspace
from notebook_kit.domain.models import Definition
from notebook_kit.errors import ValidationError
from notebook_kit.notebook.ui.feedback import output_text
from notebook_kit.notebook.ui.history import format_duration, status_class
from notebook_kit.notebook.ui.tester import TestPanel
from notebook_kit.runtime.process.handles import BackgroundServer

GREET = (
    "print('computing')\n"
    "res.body = {'hello': req.pathParameters['name'], 'q': req.queryStringParameters}"
)


class Draft:
    """What the form holds: a definition, or the refusal the form would raise."""

    def __init__(self, definition: Definition) -> None:
        self.definition: Definition | ValidationError = definition

    def __call__(self) -> Definition:
        if isinstance(self.definition, ValidationError):
            raise self.definition
        return self.definition


@pytest.fixture
def hello(workspace: Workspace) -> Definition:
    return workspace.create(
        "demo", "hello", label="Hello", method="GET", resource="hello/{name}", action=GREET
    )


def make_panel(
    ws: Workspace, definition: Definition | None, base_url: Callable[[], str] | None = None
) -> tuple[TestPanel, Draft]:
    draft = Draft(definition or Definition("demo", "new", "New", "GET", "new"))
    panel = TestPanel(ws, base_url or (lambda: "http://127.0.0.1:9"), draft)
    panel.load(definition)
    return panel, draft


def classes(widget: object) -> list[str]:
    return list(widget._dom_classes)  # type: ignore[attr-defined]


def test_run_saved_shows_status_class_duration_version_headers_and_body(
    workspace: Workspace, hello: Definition
) -> None:
    panel, _ = make_panel(workspace, hello)
    panel.params["name"].value = "ada"
    panel.query.value = "x=1"
    assert "<b>GET</b>" in panel.request.value
    assert "http://127.0.0.1:9/dev/demo/hello/ada?x=1" in panel.request.value

    panel.saved_button.click()

    assert "200 OK" in panel.status.value
    assert "nk-status-2xx" in classes(panel.status)
    duration = re.search(r">([\d.]+) ms<", panel.duration.value)
    assert duration is not None and float(duration.group(1)) > 0  # never "0.0 ms"
    assert "ran the saved version" in panel.version.value
    shown = output_text(panel.output)
    assert shown.startswith("GET http://127.0.0.1:9/dev/demo/hello/ada?x=1\n")
    assert "Content-Type: application/json" in shown
    assert '{\n  "hello": "ada",\n  "q": {\n    "x": "1"\n  }\n}' in shown  # indented JSON
    assert "--- printed by the action ---\ncomputing" in shown
    assert "traceback" not in shown
    assert panel.message.text == "hello: ran the saved version, answered 200"


def test_run_edited_runs_unsaved_draft_and_leaves_saved_alone(
    workspace: Workspace, hello: Definition
) -> None:
    panel, draft = make_panel(workspace, hello)
    panel.params["name"].value = "ada"
    draft.definition = hello.with_changes(action="res.body = {'edited': True}")

    panel.run_edited()
    assert '"edited": true' in output_text(panel.output)
    assert "ran the edited version" in panel.version.value

    panel.run_saved()
    assert '"hello": "ada"' in output_text(panel.output)
    assert "ran the saved version" in panel.version.value
    assert workspace.get("demo", "hello").action == GREET


def test_run_edited_shows_form_refusal_and_compile_error(
    workspace: Workspace, hello: Definition
) -> None:
    panel, draft = make_panel(workspace, hello)
    panel.params["name"].value = "ada"
    draft.definition = ValidationError("label must not be empty", field="label")
    panel.edited_button.click()
    assert panel.message.text == "label must not be empty"
    assert "nk-status-error" in classes(panel.message)

    draft.definition = hello.with_changes(action="res.body = (")
    panel.edited_button.click()
    assert "line 1" in panel.message.text
    assert not panel.edited_button.disabled
    assert panel.history.calls == []  # refused calls are not history


def test_action_error_shows_traceback_and_5xx_class(
    workspace: Workspace, hello: Definition
) -> None:
    workspace.edit("demo", "hello", action="def f():\n    return 1 / 0\nf()")
    panel, _ = make_panel(workspace, workspace.get("demo", "hello"))
    panel.params["name"].value = "ada"
    panel.saved_button.click()
    assert "500 Internal Server Error" in panel.status.value
    assert "nk-status-5xx" in classes(panel.status)
    assert "nk-status-2xx" not in classes(panel.status)
    shown = output_text(panel.output)
    assert "--- traceback ---" in shown
    assert "ZeroDivisionError" in shown
    assert "raised an error" in panel.message.text


def test_missing_parameter_and_bad_headers_are_refused_beside_buttons(
    workspace: Workspace, hello: Definition
) -> None:
    panel, _ = make_panel(workspace, hello)
    panel.saved_button.click()
    assert "path parameter {name}" in panel.message.text

    panel.params["name"].value = "ada"
    panel.headers.value = "no colon here"
    panel.saved_button.click()
    assert "must be written 'Name: value'" in panel.message.text
    assert not panel.saved_button.disabled
    assert panel.history.calls == []


def test_nothing_to_test_until_saved(workspace: Workspace) -> None:
    panel, _ = make_panel(workspace, None)
    assert panel.saved_button.disabled and panel.dev_button.disabled
    assert not panel.edited_button.disabled  # a new definition can run unsaved
    panel.run_saved()
    assert "save the definition first" in panel.message.text


def test_history_keeps_calls_newest_first_and_reruns_them(
    workspace: Workspace, hello: Definition
) -> None:
    panel, draft = make_panel(workspace, hello)
    panel.params["name"].value = "ada"
    panel.saved_button.click()
    draft.definition = hello.with_changes(action="res.statusCode = 404\nres.body = 'gone'")
    panel.params["name"].value = "bob"
    panel.edited_button.click()

    assert [(c.version, c.status, c.path_parameters) for c in panel.history.calls] == [
        ("edited", 404, {"name": "bob"}),
        ("saved", 200, {"name": "ada"}),
    ]
    rows = panel.history.rows.children
    assert "edited · GET http://127.0.0.1:9/dev/demo/hello/bob" in rows[0].children[1].value
    assert ">404</b>" in rows[0].children[1].value

    # re-running the saved call runs the definition as saved now, with its own inputs
    workspace.edit(
        "demo", "hello", action="res.body = {'v': 2, 'name': req.pathParameters['name']}"
    )
    rows[1].children[0].click()  # the Re-run button of the saved call
    assert '"name": "ada"' in output_text(panel.output)
    assert '"v": 2' in output_text(panel.output)
    assert "ran the saved version" in panel.version.value
    assert len(panel.history.calls) == 3

    # re-running the edited call runs that same draft, even after the form moved on
    draft.definition = hello
    assert panel.history.calls[1].version == "edited"
    panel.history.rows.children[1].children[0].click()
    assert "404 Not Found" in panel.status.value
    assert "nk-status-4xx" in classes(panel.status)
    assert output_text(panel.output).rstrip().endswith("gone")


def test_curl_masks_key_unless_revealed_and_follows_inputs(
    workspace: Workspace, hello: Definition
) -> None:
    panel, _ = make_panel(workspace, hello)
    key = workspace.keys()["dev"]
    panel.params["name"].value = "ada"
    panel.headers.value = "X-Trace: 1"
    panel.body.value = '{"a": 1}'
    curl = panel.curl.value
    assert key not in curl
    assert f"x-api-key: ••••••••{key[-4:]}" in curl
    assert "http://127.0.0.1:9/dev/demo/hello/ada" in curl
    assert "-H 'X-Trace: 1'" in curl
    assert "--data-raw '{\"a\": 1}'" in curl
    assert f"x-api-key: {key}" in panel.curl_copy.text  # the copy runs as is

    panel.curl_reveal.value = True
    assert f"x-api-key: {key}" in panel.curl.value
    assert panel.curl_reveal.description == "Hide key"
    panel.curl_reveal.value = False
    assert key not in panel.curl.value


def test_refresh_follows_changes_made_elsewhere(workspace: Workspace, hello: Definition) -> None:
    panel, _ = make_panel(workspace, hello)
    other = Workspace(workspace.home)  # another kernel or the CLI, on the same store
    other.edit("demo", "hello", resource="hello/{name}/{n}")
    panel.refresh()
    assert list(panel.params) == ["name", "n"]
    other.delete("demo", "hello")
    panel.refresh()
    assert panel.definition is None
    assert panel.saved_button.disabled


def test_send_to_dev_calls_live_url_with_dev_key(
    sample_workspace: Workspace, running_server: BackgroundServer
) -> None:
    employee = sample_workspace.get("restapi_sample", "employee")
    panel, _ = make_panel(sample_workspace, employee, lambda: running_server.url)
    panel.params["id"].value = "E001"
    panel.dev_button.click()
    shown = output_text(panel.output)
    assert shown.startswith(f"GET {running_server.url}/dev/restapi_sample/employee/E001\n")
    assert "200 OK" in panel.status.value
    assert "sent to the live dev URL" in panel.version.value
    assert panel.history.calls[0].version == "dev"

    sample_workspace.undeploy("restapi_sample", "dev")
    deadline = time.monotonic() + 5  # the server reloads within its interval
    while "nk-status-4xx" not in classes(panel.status) and time.monotonic() < deadline:
        panel.history.rows.children[0].children[0].click()  # re-send: dev no longer serves it
        time.sleep(0.05)
    assert "404 Not Found" in panel.status.value
    assert "nk-status-4xx" in classes(panel.status)


def test_send_to_dev_without_server_says_so(workspace: Workspace, hello: Definition) -> None:
    workspace.deploy("demo", "dev")
    panel, _ = make_panel(workspace, hello)
    panel.params["name"].value = "ada"
    panel.dev_button.click()
    assert "cannot reach http://127.0.0.1:9/dev/demo/hello/ada" in panel.message.text
    assert "start the server" in panel.message.text


@pytest.mark.parametrize(
    ("status", "css"), [(200, "2xx"), (204, "2xx"), (302, "3xx"), (404, "4xx"), (503, "5xx")]
)
def test_status_class(status: int, css: str) -> None:
    assert status_class(status) == css


@pytest.mark.parametrize(
    ("ms", "text"), [(0.0412, "0.0412 ms"), (0.3, "0.3 ms"), (12.34, "12.3 ms"), (1500, "1.50 s")]
)
def test_format_duration(ms: float, text: str) -> None:
    assert format_duration(ms) == text


def test_studio_runs_form_draft_as_edited_and_saved_as_saved(sample_workspace: Workspace) -> None:
    import notebook_kit

    studio = notebook_kit.studio(sample_workspace)
    try:
        studio.select("restapi_sample", "employee")
        studio.tester.params["id"].value = "E001"
        studio.form.action.value = "res.body = {'draft': req.pathParameters['id']}"

        studio.tester.run_edited()
        assert '"draft": "E001"' in output_text(studio.tester.output)
        studio.tester.run_saved()
        assert '"name": "Alice Martin"' in output_text(studio.tester.output)
        assert "draft" not in sample_workspace.get("restapi_sample", "employee").action
    finally:
        studio.close()  # its refresh thread stops with it


def test_send_to_dev_before_any_deploy_says_deploy_first(
    workspace: Workspace, hello: Definition
) -> None:
    panel, _ = make_panel(workspace, hello)
    panel.params["name"].value = "ada"
    panel.dev_button.click()
    assert (
        panel.message.text
        == "demo / hello is not deployed to dev: deploy to dev first (Deploy tab)"
    )
    assert "nk-status-error" in classes(panel.message)
    assert panel.history.calls == []  # nothing was sent
