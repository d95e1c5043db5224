"""The studio driven from Python: set values, click, assert on the store and on what is shown."""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from dulwich.repo import Repo

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


def fill_new(studio: Studio, app: str = "demo", **fields: str) -> None:
    studio.app_picker.value = app
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


def saved_ids(ws: Workspace, app: str = "demo") -> list[str]:
    return [d.id for d in ws.store.list_definitions(app)]


def test_studio_shows_first_application_when_opened(studio: Studio) -> None:
    assert studio.app == "restapi_sample"
    assert "nk-studio" in studio._dom_classes
    assert studio.table.table.value.count("<tr data-api-id=") == 4


def test_form_creates_definition_when_valid(studio: Studio, sample_workspace: Workspace) -> None:
    fill_new(studio, content_type="application/json")
    studio.form.requires_auth.value = False
    studio.form.save.click()

    saved = sample_workspace.get("demo", "hello")
    assert (saved.resource, saved.content_type, saved.requires_auth) == (
        "hello/{name}",
        "application/json",
        False,
    )
    assert studio.status.text == "Saved demo / hello"
    assert 'data-api-id="hello"' in studio.table.table.value
    assert studio.table.picker.value == "hello"
    assert list(studio.tester.params) == ["name"]


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"id": "bad id!"}, "id", "must be 1 to 64 characters"),
        ({"label": ""}, "label", "label must not be empty"),
        ({"resource": "a/{b"}, "resource", "unclosed brace"),
        ({"content_type": "json"}, "content_type", "is not a media type"),
        ({"action": "x = 1\nres.body = (\n"}, "action", "action line"),
        ({"functions": "def f(:\n  pass"}, "functions", "functions line 1"),
    ],
)
def test_form_refuses_invalid_input_and_saves_nothing(
    studio: Studio, sample_workspace: Workspace, fields: dict[str, str], field: str, message: str
) -> None:
    fill_new(studio, **fields)
    studio.form.save.click()

    assert saved_ids(sample_workspace) == []
    assert message in studio.form.errors[field].value
    assert "nk-status-error" in studio.status._dom_classes
    assert message in studio.status.text
    others = [name for name, error in studio.form.errors.items() if error.value and name != field]
    assert others == []
    assert not studio.form.save.disabled


def test_form_refuses_bad_constant_next_to_constants(
    studio: Studio, sample_workspace: Workspace
) -> None:
    fill_new(studio)
    studio.form.constants.add.click()
    row = studio.form.constants.rows.children[0]
    row.name.value, row.type.value, row.value.value = "LIMIT", "Integer", "ten"
    studio.form.save.click()

    assert saved_ids(sample_workspace) == []
    assert "is not an Integer" in studio.form.errors["constants"].value


def test_form_saves_constants_rows_and_drops_removed_ones(
    studio: Studio, sample_workspace: Workspace
) -> None:
    fill_new(studio, action="res.body = {'limit': const.LIMIT}")
    for name, type_, value in (("LIMIT", "Integer", "10"), ("GONE", "String", "x")):
        studio.form.constants.add.click()
        row = studio.form.constants.rows.children[-1]
        row.name.value, row.type.value, row.value.value = name, type_, value
    studio.form.constants.rows.children[1].remove.click()
    studio.form.save.click()

    saved = sample_workspace.get("demo", "hello")
    assert [(c.name, c.value) for c in saved.constants] == [("LIMIT", 10)]
    assert sample_workspace.invoke("demo", "hello", path_parameters={"name": "x"}).json() == {
        "limit": 10
    }


def test_form_edits_picked_definition(studio: Studio, sample_workspace: Workspace) -> None:
    studio.table.picker.value = "employee"
    assert studio.form.id.value == "employee"
    studio.form.label.value = "Employee by id"
    studio.form.save.click()

    assert sample_workspace.get("restapi_sample", "employee").label == "Employee by id"
    assert "changed" in studio.table.table.value  # saved differs from what dev serves


def test_duplicate_id_is_refused_with_status(studio: Studio, sample_workspace: Workspace) -> None:
    before = sample_workspace.get("restapi_sample", "calculator")
    fill_new(studio, app="restapi_sample", id="calculator", resource="other")
    studio.form.save.click()

    assert "already has a definition 'calculator'" in studio.status.text
    assert sample_workspace.get("restapi_sample", "calculator") == before


@pytest.mark.parametrize(
    ("search", "shown"),
    [
        ("", {"employee", "employee-preflight", "calculator", "calculator-preflight"}),
        ("employee", {"employee", "employee-preflight"}),
        ("PREFLIGHT", {"employee-preflight", "calculator-preflight"}),
        ("nothing like it", set()),
    ],
)
def test_search_filters_rows_by_label(studio: Studio, search: str, shown: set[str]) -> None:
    studio.search.value = search

    rows = set(re.findall(r'data-api-id="([^"]+)"', studio.table.table.value))
    assert rows == shown
    assert {v for _, v in studio.table.picker.options if v} == shown


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
    assert "raised an error" in studio.status.text


def test_test_panel_refuses_missing_parameter_and_bad_headers(studio: Studio) -> None:
    fill_new(studio)
    studio.form.save.click()
    studio.tester.run.click()
    assert "path parameter {name}" in studio.status.text

    studio.tester.params["name"].value = "ada"
    studio.tester.headers.value = "no colon here"
    studio.tester.run.click()
    assert "must be written 'Name: value'" in studio.status.text
    assert not studio.tester.run.disabled


def test_deploy_dev_shows_deployed_and_served_url_answers(
    studio: Studio, sample_workspace: Workspace
) -> None:
    studio.server_panel.start.click()
    fill_new(studio)
    studio.form.save.click()
    studio.tester.params["name"].value = "ada"
    studio.deploy.deploy_dev.click()

    assert sample_workspace.deployed_state(sample_workspace.get("demo", "hello"), "dev") == (
        "deployed"
    )
    assert re.search(r'nk-state-dev"[^>]*>deployed<', studio.table.table.value)
    assert re.search(r'nk-state-prod"[^>]*>not deployed<', studio.table.table.value)
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
    assert studio.status.text == "dev answered 200"


def test_send_to_dev_without_server_shows_error(studio: Studio) -> None:
    studio.server_panel.url.value = "http://127.0.0.1:9"  # nothing listens there
    studio.table.picker.value = "calculator"
    studio.tester.send_dev.click()
    assert "cannot reach http://127.0.0.1:9/dev/restapi_sample/calculator" in studio.status.text


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
    studio.table.picker.value = "employee"
    studio.deploy.undeploy_dev.click()
    assert "restapi_sample" not in sample_workspace.live("dev")
    studio.deploy.undeploy_dev.click()
    assert "is not deployed to dev" in studio.status.text


def test_deploy_refusal_shows_status(studio: Studio) -> None:
    studio.app_picker.value = "nothing-here"
    studio.deploy.deploy_dev.click()
    assert "no application 'nothing-here'" in studio.status.text


def test_delete_needs_confirmation(studio: Studio, sample_workspace: Workspace) -> None:
    studio.table.picker.value = "calculator"
    studio.manage.delete.click()
    assert "calculator" in saved_ids(sample_workspace, "restapi_sample")

    studio.manage.delete_confirm.click()
    assert "calculator" not in saved_ids(sample_workspace, "restapi_sample")
    assert 'data-api-id="calculator"' not in studio.table.table.value
    assert studio.form.editing is None


def test_copy_to_another_application(studio: Studio, sample_workspace: Workspace) -> None:
    studio.table.picker.value = "employee"
    studio.manage.copy_to_app.value = "hr"
    studio.manage.copy_new_id.value = "staff"
    studio.manage.copy_run.click()

    assert sample_workspace.get("hr", "staff").resource == "employee/{id}"
    assert studio.app == "hr"
    assert studio.form.editing is not None and studio.form.editing.id == "staff"
    studio.manage.copy_run.click()  # the same again collides
    assert "already has a definition 'staff'" in studio.status.text


def export_bytes(studio: Studio) -> bytes:
    studio.manage.export.click()
    link = studio.manage.export_link.value
    assert 'download="restapi_sample.json"' in link
    data = re.search(r'href="data:application/json;base64,([^"]+)"', link)
    assert data is not None
    return base64.b64decode(data.group(1))


def upload(studio: Studio, name: str, content: bytes) -> None:
    studio.manage.upload.value = (
        {
            "name": name,
            "type": "application/json",
            "size": len(content),
            "content": memoryview(content),
            "last_modified": datetime.now(UTC),
        },
    )


def test_export_link_content_reimports(studio: Studio, tmp_path: Path) -> None:
    content = export_bytes(studio)
    other = Studio(Workspace(tmp_path / "other"))
    upload(other, "restapi_sample.json", content)

    assert other.status.text == "Imported restapi_sample from restapi_sample.json"
    assert len(other.workspace.definitions("restapi_sample")) == 4
    assert other.app == "restapi_sample"
    assert other.manage.upload.value == ()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"format": "notebook-kit/1", "applic', "invalid JSON"),
        (b'{"hello": 1}', "the 'format' field is missing"),
    ],
)
def test_import_refusal_shown_and_nothing_written(
    studio: Studio, tmp_path: Path, content: bytes, message: str
) -> None:
    other = Studio(Workspace(tmp_path / "other"))
    upload(other, "broken.json", content)

    assert message in other.status.text
    assert other.workspace.applications() == []


def test_import_of_existing_application_needs_replace(studio: Studio) -> None:
    content = export_bytes(studio)
    upload(studio, "restapi_sample.json", content)
    assert "already exists" in studio.status.text

    studio.manage.import_replace.value = True
    upload(studio, "restapi_sample.json", content)
    assert studio.status.text.startswith("Imported restapi_sample")


def test_commit_creates_git_commit(studio: Studio, tmp_path: Path) -> None:
    studio.manage.commit_repo.value = str(tmp_path / "repo")
    studio.manage.commit_message.value = "first version"
    studio.manage.commit_run.click()

    with Repo(str(tmp_path / "repo")) as repo:
        assert repo[repo.head()].message == b"first version"
    assert "Committed restapi_sample" in studio.status.text
    studio.manage.commit_run.click()
    assert "nothing to commit" in studio.status.text


def test_server_panel_masks_reveals_and_rotates_keys(
    studio: Studio, sample_workspace: Workspace
) -> None:
    key = sample_workspace.keys()["dev"]
    panel = studio.server_panel
    assert key not in panel.key_views["dev"].value
    assert key[-4:] in panel.key_views["dev"].value
    panel.reveal.value = True
    assert key in panel.key_views["dev"].value

    panel.rotate["dev"].click()
    new_key = sample_workspace.keys()["dev"]
    assert new_key != key
    assert new_key in panel.key_views["dev"].value


def test_server_panel_starts_and_stops_server(studio: Studio) -> None:
    panel = studio.server_panel
    panel.start.click()
    url = panel.server.url
    assert panel.url.value == url and panel.stop.disabled is False
    assert httpx.get(url + "/nowhere", timeout=10).status_code == 404

    panel.stop.click()
    assert panel.start.disabled is False and panel.state.value == "stopped"
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/nowhere", timeout=2)


def test_studio_uses_server_started_with_serve(sample_workspace: Workspace) -> None:
    server = sample_workspace.serve()
    try:
        widget = Studio(sample_workspace)
        assert widget.server_panel.server is server
        assert widget.server_panel.base_url() == server.url
    finally:
        server.stop()


def test_export_document_matches_core_export(studio: Studio, sample_workspace: Workspace) -> None:
    document = json.loads(export_bytes(studio))
    expected = sample_workspace.export("restapi_sample")
    assert {k: v for k, v in document.items() if k != "exported_at"} == {
        k: v for k, v in expected.items() if k != "exported_at"
    }


def test_studio_text_repr_is_stable(studio: Studio) -> None:
    assert repr(studio) == "<notebook_kit Studio: application 'restapi_sample'>"
    bundle = studio._repr_mimebundle_()
    assert bundle["text/plain"] == repr(studio)


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
