"""The Test tab's examples driven from Python over a real workspace: save the current
request as an example, run the application's examples, see the pass/fail table; and a
deploy refused by a failing example, said in the Deploy tab."""

from __future__ import annotations

import pytest

from notebook_kit import Workspace
from notebook_kit.domain.models import Definition
from notebook_kit.notebook.ui.deploy import DeployPanel
from notebook_kit.notebook.ui.tester import TestPanel

APP = "restapi_sample"


@pytest.fixture
def panel(sample_workspace: Workspace) -> TestPanel:
    employee = sample_workspace.get(APP, "employee")
    tester = TestPanel(sample_workspace, lambda: "http://127.0.0.1:9", lambda: employee)
    tester.load(employee)
    return tester


def _run(panel: TestPanel, employee_id: str) -> None:
    panel.params["id"].value = employee_id
    panel.saved_button.click()


def test_save_as_example_keeps_the_request_and_the_last_status(
    panel: TestPanel, sample_workspace: Workspace
) -> None:
    examples = panel.examples
    _run(panel, "E999")
    assert examples.expected_status.value == 404  # the last answer's status by default
    _run(panel, "E001")
    assert examples.expected_status.value == 200
    panel.query.value = "?x=1"
    panel.headers.value = "Accept: application/json"
    examples.name.value = "alice"
    examples.fields.value = "name=Alice Martin\n\nage=34\n"
    examples.max_ms.value = "2000"
    examples.save_button.click()
    assert (
        examples.save_status.text == "Saved example employee/alice: expects 200 and 2 JSON field(s)"
    )
    saved = sample_workspace.examples(APP)[0]
    assert saved.request.to_dict() == {
        "path_parameters": {"id": "E001"},
        "query": "x=1",
        "headers": {"Accept": "application/json"},
        "body": "",
    }
    assert saved.expect.to_dict() == {
        "status": 200,
        "json": {"name": "Alice Martin", "age": 34},
        "max_ms": 2000.0,
    }


@pytest.mark.parametrize(
    ("name", "fields", "max_ms", "headers", "message"),
    [
        ("", "", "", "", "example name '' must be 1 to 64 characters"),
        ("a", "total", "", "", "JSON field 'total' must look like PATH=VALUE"),
        ("a", "a..b=1", "", "", "segment 2 is empty"),
        ("a", "", "soon", "", "the maximum duration must be milliseconds"),
        ("a", "", "", "Bad header", "header line 1 'Bad header' must be written 'Name: value'"),
    ],
)
def test_a_refused_save_says_why_beside_the_button_and_saves_nothing(
    panel: TestPanel,
    sample_workspace: Workspace,
    name: str,
    fields: str,
    max_ms: str,
    headers: str,
    message: str,
) -> None:
    examples = panel.examples
    panel.params["id"].value = "E001"
    panel.headers.value = headers
    examples.name.value, examples.fields.value, examples.max_ms.value = name, fields, max_ms
    examples.save_button.click()
    assert message in examples.save_status.text
    assert "nk-status-error" in examples.save_status._dom_classes
    assert not examples.save_button.disabled
    assert sample_workspace.examples(APP) == []


def test_run_examples_shows_a_pass_fail_table(
    panel: TestPanel, sample_workspace: Workspace
) -> None:
    ws = sample_workspace
    ws.add_example(APP, "employee", "alice", request={"path_parameters": {"id": "E001"}},
                   expect={"json": {"name": "Alice Martin"}})  # fmt: skip
    ws.add_example(APP, "employee", "bob", request={"path_parameters": {"id": "E002"}},
                   expect={"json": {"name": "Bob"}})  # fmt: skip
    examples = panel.examples
    examples.run_button.click()
    table = examples.table.value
    assert 'class="nk-example-pass" data-example="employee/alice"' in table
    assert 'class="nk-example-fail" data-example="employee/bob"' in table
    assert "name is &quot;Bob Tanaka&quot;, expected &quot;Bob&quot;" in table
    assert examples.run_status.text == f"1 of 2 examples of {APP} fail on the saved definitions"
    ws.remove_example(APP, "employee", "bob")
    examples.target.value = "prod"
    examples.run_button.click()
    assert examples.run_status.text == f"all 1 example of {APP} pass on what prod serves"
    assert "nk-example-fail" not in examples.table.value
    ws.undeploy(APP, "prod")
    examples.run_button.click()
    assert examples.run_status.text == f"application {APP!r} is not deployed to prod"


def test_an_unsaved_definition_saves_no_example(sample_workspace: Workspace) -> None:
    draft = Definition(APP, "new", "New", "GET", "new")
    tester = TestPanel(sample_workspace, lambda: "http://127.0.0.1:9", lambda: draft)
    tester.load(None)
    assert tester.examples.save_button.disabled and tester.examples.run_button.disabled
    tester.examples.name.value = "x"
    tester.examples.save()
    assert tester.examples.save_status.text == (
        "save the definition first: an example belongs to one"
    )


def test_the_deploy_tab_says_which_example_refused_the_deploy(
    sample_workspace: Workspace,
) -> None:
    ws = sample_workspace
    ws.add_example(APP, "employee", "bob", request={"path_parameters": {"id": "E002"}},
                   expect={"json": {"name": "Bob"}})  # fmt: skip
    deploy = DeployPanel(ws, lambda: "http://127.0.0.1:9")
    deploy.load(APP, ws.get(APP, "employee"))
    before = ws.deployments(APP)
    deploy.deploy_dev.click()
    assert deploy.status.text == (
        f"deploy of {APP} to dev refused, nothing changed: example employee/bob fails: "
        'name is "Bob Tanaka", expected "Bob" (force=True, CLI --force, deploys anyway)'
    )
    assert ws.deployments(APP) == before


def test_remove_asks_first_and_cancel_keeps_it(
    panel: TestPanel, sample_workspace: Workspace
) -> None:
    ws = sample_workspace
    examples = panel.examples
    assert examples.saved.options == () and examples.remove_button.disabled
    _run(panel, "E001")
    for name in ("alice", "again"):
        examples.name.value = name
        examples.save_button.click()
    assert examples.saved.options == ("again", "alice")
    assert examples.saved.value == "again"  # the one just saved
    examples.saved.value = "alice"
    examples.remove_button.click()
    assert examples.remove_ask.asking
    assert examples.remove_ask.question.value == "<span>Remove example employee/alice?</span>"
    examples.remove_ask.cancel.click()
    assert examples.remove_status.text == "Cancelled: nothing changed"
    assert [e.name for e in ws.examples(APP)] == ["again", "alice"]
    examples.remove_button.click()
    examples.remove_ask.confirm.click()
    assert examples.remove_status.text == "Removed example employee/alice"
    assert [e.name for e in ws.examples(APP)] == ["again"]
    assert examples.saved.options == ("again",)
    # another definition has its own examples
    panel.load(ws.get(APP, "calculator"))
    assert examples.saved.options == () and examples.remove_button.disabled
