"""The studio's shell driven from Python: the layout, the definition list, the form with its
code editors, unsaved edits, feedback beside each button, the server tab and the refresh
after changes made by another process. Real workspaces, real clicks."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from dulwich.repo import Repo

from notebook_kit import Workspace
from notebook_kit.errors import ValidationError
from notebook_kit.notebook.ui import Studio
from notebook_kit.notebook.ui.code_editor import CodeEditor
from notebook_kit.notebook.ui.feedback import output_text
from notebook_kit.notebook.ui.studio import TAB_TITLES

SAMPLE = {"employee", "employee-preflight", "calculator", "calculator-preflight"}


@pytest.fixture
def studio(sample_workspace: Workspace) -> Iterator[Studio]:
    widget = Studio(sample_workspace, poll_interval=None)  # tests call refresh() themselves
    yield widget
    if widget.server_panel.server is not None:
        widget.server_panel.server.stop()
    widget.close()


def switch(studio: Studio, app: str) -> None:
    """What the application bar does when ``app`` is picked."""
    studio._request_switch(app, lambda: studio.app_bar.show(app))


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
    for name, value in values.items():
        getattr(studio.form, name).value = value


def saved_ids(ws: Workspace, app: str = "demo") -> list[str]:
    return [d.id for d in ws.store.list_definitions(app)]


def editor_event(editor: CodeEditor, event: str) -> None:
    """What the browser sends on Ctrl/Cmd+S ("save") or Ctrl/Cmd+Enter ("run")."""
    editor._handle_event(editor, {"event": event}, [])


# -- layout and list ---------------------------------------------------------------------


def test_studio_opens_first_application_in_two_panes(studio: Studio) -> None:
    assert studio.app == "restapi_sample"
    assert "nk-studio" in studio._dom_classes
    assert "nk-sidebar" in studio.sidebar._dom_classes
    assert "nk-tabs" in studio.tabs._dom_classes
    assert tuple(studio.tabs.titles) == TAB_TITLES
    assert set(studio.definitions.ids) == SAMPLE
    row = next(r for r in studio.definitions.rows if r["id"] == "calculator")
    assert (row["method"], row["resource"]) == ("POST", "calculator")
    assert row["states"] == [["dev", "deployed"], ["prod", "deployed"]]
    assert studio.form.editing is None and studio.definitions.selected == ""


def test_clicking_a_row_opens_it_everywhere(studio: Studio) -> None:
    studio.definitions.pick("employee")

    assert studio.form.id.value == "employee"
    assert studio.definitions.selected == "employee"
    assert studio.current is not None and studio.current.id == "employee"
    assert studio.manage.definition == studio.current
    assert not studio.form.dirty


def test_clicking_the_open_row_again_reloads_it(studio: Studio) -> None:
    studio.definitions.pick("employee")
    studio.form.label.value = "typo"
    studio.definitions.pick("employee")  # asks: the edits would go
    assert studio.discard_ask.asking
    studio.discard_ask.confirm.click()
    assert studio.form.label.value == studio.workspace.get("restapi_sample", "employee").label


def test_a_click_from_the_browser_for_an_unknown_row_is_ignored(studio: Studio) -> None:
    studio.definitions._handle_event(None, {"event": "pick", "id": "nope"}, [])
    assert studio.form.editing is None


@pytest.mark.parametrize(
    ("search", "shown"),
    [
        ("", SAMPLE),
        ("employee", {"employee", "employee-preflight"}),
        ("PREFLIGHT", {"employee-preflight", "calculator-preflight"}),
        ("nothing like it", set()),
    ],
)
def test_search_filters_rows_by_label(studio: Studio, search: str, shown: set[str]) -> None:
    studio.search.value = search

    assert set(studio.definitions.ids) == shown
    if not shown:
        assert studio.definitions.empty_text == "No definition matches the search."


def test_an_empty_workspace_asks_for_an_application_first(workspace: Workspace) -> None:
    studio = Studio(workspace, poll_interval=None)
    try:
        assert studio.app == "" and studio.definitions.rows == []
        assert studio.definitions.empty_text == "Create or pick an application first."
        studio.form.id.value, studio.form.label.value = "x", "X"
        studio.form.resource.value = "x"
        studio.form.save.click()
        assert "choose or create an application first" in studio.form.errors["app"].value
        assert workspace.applications() == []
    finally:
        studio.close()


# -- the form ----------------------------------------------------------------------------


def test_form_creates_definition_and_list_selects_it(
    studio: Studio, sample_workspace: Workspace
) -> None:
    fill_new(studio, content_type="application/json")
    studio.form.requires_auth.value = False
    studio.form.save.click()

    saved = sample_workspace.get("demo", "hello")
    assert (saved.resource, saved.content_type, saved.requires_auth) == (
        "hello/{name}",
        "application/json",
        False,
    )
    assert studio.form.save_status.text.startswith("Saved demo / hello at ")
    assert studio.definitions.ids == ["hello"] and studio.definitions.selected == "hello"
    assert studio.current == saved and studio.form.editing == saved
    assert not studio.form.dirty and studio.form.unsaved.value == ""


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"id": "bad id!"}, "id", "must be 1 to 64 characters"),
        ({"label": ""}, "label", "label must not be empty"),
        ({"resource": "a/{b"}, "resource", "unclosed brace"),
        ({"content_type": "json"}, "content_type", "is not a media type"),
        ({"timeout": "soon"}, "timeout", "timeout must be seconds"),
        ({"action": "x = 1\nres.body = (\n"}, "action", "action line 2"),
        ({"functions": "def f(:\n  pass"}, "functions", "functions line 1"),
    ],
)
def test_form_refuses_invalid_input_beside_field_and_saves_nothing(
    studio: Studio, sample_workspace: Workspace, fields: dict[str, str], field: str, message: str
) -> None:
    fill_new(studio, **fields)
    studio.form.save.click()

    assert saved_ids(sample_workspace) == []
    assert message in studio.form.errors[field].value
    assert "nk-status-error" in studio.form.save_status._dom_classes
    assert message in studio.form.save_status.text
    others = [name for name, error in studio.form.errors.items() if error.value and name != field]
    assert others == []
    assert not studio.form.save.disabled and studio.form.dirty


@pytest.mark.parametrize(
    ("field", "source", "line"),
    [
        ("action", "x = 1\ny = 2\nres.body = (\n", 3),
        ("action", "x = 1\n  y = 2\n", 2),
        ("functions", "def ok():\n    return 1\n\ndef f(:\n  pass", 4),
    ],
)
def test_compile_error_marks_its_line_in_the_editor(
    studio: Studio, field: str, source: str, line: int
) -> None:
    fill_new(studio, **{field: source})
    editor = getattr(studio.form, field)
    assert editor.error_line == line  # marked as typed
    studio.form.save.click()
    assert editor.error_line == line and f"line {line}" in editor.error_message
    other = studio.form.functions if field == "action" else studio.form.action
    assert other.error_line == 0

    editor.value = "res.body = 1" if field == "action" else "def f():\n    return 1\n"
    assert editor.error_line == 0 and editor.error_message == ""


def test_ctrl_s_in_the_editor_saves(studio: Studio, sample_workspace: Workspace) -> None:
    studio.definitions.pick("employee")
    studio.form.action.value = "res.body = {'changed': True}"
    editor_event(studio.form.action, "save")

    assert sample_workspace.get("restapi_sample", "employee").action == (
        "res.body = {'changed': True}"
    )
    assert studio.form.save_status.text.startswith("Saved restapi_sample / employee")


def test_ctrl_enter_in_the_editor_runs_the_edited_version(
    studio: Studio, sample_workspace: Workspace
) -> None:
    studio.definitions.pick("employee")
    saved = sample_workspace.get("restapi_sample", "employee")
    studio.tester.params["id"].value = "E001"
    studio.form.action.value = "res.body = {'edited': req.pathParameters['id']}"
    editor_event(studio.form.action, "run")

    assert studio.tabs.selected_index == TAB_TITLES.index("Test")
    assert "edited" in studio.tester.version.value
    assert '"edited": "E001"' in output_text(studio.tester.output)
    assert sample_workspace.get("restapi_sample", "employee") == saved  # nothing saved
    assert studio.form.dirty


def test_run_edited_with_an_invalid_form_refuses_beside_the_field(studio: Studio) -> None:
    studio.definitions.pick("employee")
    studio.form.resource.value = "a/{b"
    studio.tester.run_edited()

    assert "unclosed brace" in studio.form.errors["resource"].value
    assert "unclosed brace" in studio.tester.message.text


def test_draft_is_the_edited_definition_unsaved(
    studio: Studio, sample_workspace: Workspace
) -> None:
    studio.definitions.pick("employee")
    before = sample_workspace.get("restapi_sample", "employee")
    studio.form.label.value = "Edited label"
    studio.form.timeout.value = "2.5"
    draft = studio.form.draft()

    assert (draft.app, draft.id, draft.label, draft.timeout) == (
        "restapi_sample",
        "employee",
        "Edited label",
        2.5,
    )
    assert sample_workspace.get("restapi_sample", "employee") == before

    studio.form.action.value = "res.body = ("
    with pytest.raises(ValidationError, match="action line 1"):
        studio.form.draft()
    assert "action line 1" in studio.form.errors["action"].value
    assert studio.form.action.error_line == 1


def test_unsaved_marker_follows_the_fields(studio: Studio) -> None:
    studio.definitions.pick("calculator")
    assert studio.form.unsaved.value == ""
    label = studio.form.label.value
    studio.form.label.value = label + "!"
    assert "unsaved changes" in studio.form.unsaved.value and studio.form.dirty
    studio.form.label.value = label
    assert studio.form.unsaved.value == "" and not studio.form.dirty

    studio.form.constants.add.click()  # an empty row is no edit
    assert not studio.form.dirty
    row = studio.form.constants.rows.children[-1]
    row.name.value = "LIMIT"
    assert studio.form.dirty


def test_form_refuses_bad_constant_beside_constants(
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


def test_form_edits_picked_definition_and_list_shows_changed(
    studio: Studio, sample_workspace: Workspace
) -> None:
    studio.definitions.pick("employee")
    studio.form.label.value = "Employee by id"
    studio.form.save.click()

    assert sample_workspace.get("restapi_sample", "employee").label == "Employee by id"
    row = next(r for r in studio.definitions.rows if r["id"] == "employee")
    assert row["label"] == "Employee by id"
    assert row["states"][0] == ["dev", "changed"]  # saved differs from what dev serves


def test_renaming_keeps_list_form_and_selection_together(studio: Studio) -> None:
    studio.definitions.pick("employee")
    studio.form.id.value = "staff"
    studio.form.save.click()

    assert "staff" in studio.definitions.ids and "employee" not in studio.definitions.ids
    assert studio.definitions.selected == "staff" and studio.form.editing is not None
    assert studio.form.editing.id == "staff"


def test_duplicate_id_is_refused_beside_save(studio: Studio, sample_workspace: Workspace) -> None:
    before = sample_workspace.get("restapi_sample", "calculator")
    fill_new(studio, app="restapi_sample", id="calculator", resource="other")
    studio.form.save.click()

    assert "already has a definition 'calculator'" in studio.form.save_status.text
    assert sample_workspace.get("restapi_sample", "calculator") == before


# -- asking before unsaved edits are lost -------------------------------------------------


def test_new_with_unsaved_edits_asks_and_cancel_keeps_them(studio: Studio) -> None:
    studio.definitions.pick("employee")
    studio.form.label.value = "my edit"
    studio.new.click()

    assert studio.discard_ask.asking
    assert "Discard unsaved changes to employee" in studio.discard_ask.question.value
    assert studio.form.label.value == "my edit"
    studio.discard_ask.cancel.click()
    assert not studio.discard_ask.asking
    assert studio.form.label.value == "my edit" and studio.definitions.selected == "employee"
    assert studio.sidebar_status.text == "Kept your unsaved changes"

    studio.new.click()
    studio.discard_ask.confirm.click()
    assert studio.form.editing is None and studio.form.label.value == ""
    assert studio.definitions.selected == ""


def test_new_with_a_clean_form_asks_nothing(studio: Studio) -> None:
    studio.definitions.pick("employee")
    studio.new.click()
    assert not studio.discard_ask.asking and studio.form.editing is None


def test_picking_another_row_with_unsaved_edits_asks(studio: Studio) -> None:
    studio.definitions.pick("employee")
    studio.form.action.value = "res.body = 'mine'"
    studio.definitions.pick("calculator")
    assert studio.discard_ask.asking and studio.form.id.value == "employee"

    studio.discard_ask.confirm.click()
    assert studio.form.id.value == "calculator" and studio.definitions.selected == "calculator"
    assert not studio.form.dirty


def test_switching_application_with_unsaved_edits_asks_and_cancel_stays(
    studio: Studio, sample_workspace: Workspace
) -> None:
    sample_workspace.create_application("other")
    studio.refresh()
    studio.definitions.pick("employee")
    studio.form.label.value = "my edit"
    shown: list[str] = []
    studio.app_bar.show = shown.append  # type: ignore[method-assign]
    studio._request_switch("other", lambda: shown.append("switched"))

    assert studio.discard_ask.asking and shown == []
    studio.discard_ask.cancel.click()
    assert shown == ["restapi_sample"]  # the bar is put back on the current application
    assert studio.form.label.value == "my edit"


def test_switching_application_when_clean_shows_it(
    studio: Studio, sample_workspace: Workspace
) -> None:
    sample_workspace.create("other", "ping", label="Ping", method="GET", resource="ping")
    studio.refresh()
    switch(studio, "other")

    assert studio.app == "other" and studio.definitions.ids == ["ping"]
    assert studio.form.editing is None and studio.form.app == "other"


# -- definition and application actions ---------------------------------------------------


def test_delete_asks_and_cancel_keeps(studio: Studio, sample_workspace: Workspace) -> None:
    studio.definitions.pick("calculator")
    studio.manage.delete.click()
    assert studio.manage.delete_ask.asking
    assert studio.manage.delete_ask.confirm.description == "Confirm delete calculator"
    studio.manage.delete_ask.cancel.click()
    assert "calculator" in saved_ids(sample_workspace, "restapi_sample")

    studio.manage.delete.click()
    studio.manage.delete_ask.confirm.click()
    assert "calculator" not in saved_ids(sample_workspace, "restapi_sample")
    assert "calculator" not in studio.definitions.ids
    assert studio.form.editing is None and studio.definitions.selected == ""
    assert studio.manage.delete_status.text.startswith("Deleted restapi_sample / calculator")


def test_copy_to_another_application_opens_the_copy(
    studio: Studio, sample_workspace: Workspace
) -> None:
    studio.definitions.pick("employee")
    studio.manage.copy_to_app.value = "hr"
    studio.manage.copy_new_id.value = "staff"
    studio.manage.copy_run.click()

    assert sample_workspace.get("hr", "staff").resource == "employee/{id}"
    assert studio.app == "hr" and studio.definitions.selected == "staff"
    assert studio.form.editing is not None and studio.form.editing.id == "staff"
    assert studio.manage.copy_status.text == "Copied restapi_sample / employee to hr / staff"
    studio.manage.copy_run.click()  # the same again collides
    assert "already has a definition 'staff'" in studio.manage.copy_status.text


def test_copy_with_unsaved_edits_asks_before_opening_the_copy(
    studio: Studio, sample_workspace: Workspace
) -> None:
    studio.definitions.pick("employee")
    studio.form.label.value = "my edit"
    studio.manage.copy_to_app.value = "hr"
    studio.manage.copy_run.click()

    assert sample_workspace.get("hr", "employee").label != "my edit"  # the saved one
    assert studio.discard_ask.asking and studio.form.label.value == "my edit"
    studio.discard_ask.cancel.click()
    assert studio.app == "restapi_sample" and studio.form.label.value == "my edit"


def test_deleting_the_open_definition_with_edits_asks_nothing_more(studio: Studio) -> None:
    studio.definitions.pick("employee")
    studio.form.label.value = "my edit"
    studio.manage.delete.click()
    studio.manage.delete_ask.confirm.click()

    assert not studio.discard_ask.asking
    assert studio.form.editing is None and "employee" not in studio.definitions.ids


def export_bytes(studio: Studio) -> bytes:
    studio.manage.export.click()
    link = studio.manage.export_link.value
    data = re.search(r'href="data:application/json;base64,([^"]+)"', link)
    assert data is not None and f'download="{studio.app}.json"' in link
    assert studio.manage.export_status.text.startswith(f"Exported {studio.app}")
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


def test_export_link_content_reimports_and_is_shown(studio: Studio, tmp_path: Path) -> None:
    content = export_bytes(studio)
    expected = studio.workspace.export("restapi_sample")
    assert {k: v for k, v in json.loads(content).items() if k != "exported_at"} == {
        k: v for k, v in expected.items() if k != "exported_at"
    }
    other = Studio(Workspace(tmp_path / "other"), poll_interval=None)
    upload(other, "restapi_sample.json", content)

    assert other.manage.import_status.text == "Imported restapi_sample from restapi_sample.json"
    assert other.app == "restapi_sample" and set(other.definitions.ids) == SAMPLE
    assert other.manage.upload.value == ()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"format": "notebook-kit/1", "applic', "invalid JSON"),
        (b'{"hello": 1}', "the 'format' field is missing"),
    ],
)
def test_import_refusal_shown_beside_import_and_nothing_written(
    tmp_path: Path, content: bytes, message: str
) -> None:
    other = Studio(Workspace(tmp_path / "other"), poll_interval=None)
    upload(other, "broken.json", content)

    assert message in other.manage.import_status.text
    assert "nk-status-error" in other.manage.import_status._dom_classes
    assert other.workspace.applications() == []


def test_import_of_existing_application_needs_replace(studio: Studio) -> None:
    content = export_bytes(studio)
    upload(studio, "restapi_sample.json", content)
    assert "already exists" in studio.manage.import_status.text

    studio.manage.import_replace.value = True
    upload(studio, "restapi_sample.json", content)
    assert studio.manage.import_status.text.startswith("Imported restapi_sample")


def test_commit_creates_git_commit(studio: Studio, tmp_path: Path) -> None:
    studio.manage.commit_repo.value = str(tmp_path / "repo")
    studio.manage.commit_message.value = "first version"
    studio.manage.commit_run.click()

    with Repo(str(tmp_path / "repo")) as repo:
        assert repo[repo.head()].message == b"first version"
    assert "Committed restapi_sample" in studio.manage.commit_status.text
    studio.manage.commit_run.click()
    assert "nothing to commit" in studio.manage.commit_status.text


# -- server tab --------------------------------------------------------------------------


def test_server_tab_shows_the_real_port_and_stops(studio: Studio) -> None:
    panel = studio.server_panel
    assert panel.port.value == 0
    panel.start.click()
    assert panel.server is not None
    port = panel.server.port
    assert port != 0 and panel.port.value == port
    assert f"port {port}" in panel.state.value and panel.url.value == panel.server.url
    assert panel.status.text == f"Serving on {panel.server.url} (port {port})"
    assert httpx.get(panel.server.url + "/nowhere", timeout=10).status_code == 404

    panel.stop.click()
    assert panel.start.disabled is False and "stopped" in panel.state.value
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/nowhere", timeout=2)


def test_studio_uses_server_started_with_serve(sample_workspace: Workspace) -> None:
    server = sample_workspace.serve()
    try:
        widget = Studio(sample_workspace, poll_interval=None)
        assert widget.server_panel.server is server
        assert widget.server_panel.base_url() == server.url
        assert widget.server_panel.port.value == server.port != 0
    finally:
        server.stop()


def test_server_tab_masks_reveals_and_rotates_keys_after_confirm(
    studio: Studio, sample_workspace: Workspace
) -> None:
    key = sample_workspace.keys()["dev"]
    panel = studio.server_panel
    assert key not in panel.key_views["dev"].value and key[-4:] in panel.key_views["dev"].value
    panel.reveal.value = True
    assert key in panel.key_views["dev"].value

    panel.rotate["dev"].click()
    assert panel.rotate_ask.asking and sample_workspace.keys()["dev"] == key
    panel.rotate_ask.cancel.click()
    assert sample_workspace.keys()["dev"] == key
    panel.rotate["dev"].click()
    panel.rotate_ask.confirm.click()
    new_key = sample_workspace.keys()["dev"]
    assert new_key != key and new_key in panel.key_views["dev"].value
    assert panel.keys_status.text.startswith("Rotated the dev key")


# -- refresh after changes made elsewhere -------------------------------------------------


def test_refresh_shows_definitions_created_elsewhere(studio: Studio, tmp_path: Path) -> None:
    elsewhere = Workspace(studio.workspace.home)  # another handle on the same store
    elsewhere.create("restapi_sample", "ping", label="Ping", method="GET", resource="ping")
    assert studio.poller.check()
    assert "ping" in studio.definitions.ids
    assert not studio.poller.check()  # nothing new since


def test_refresh_reloads_the_open_definition_when_the_form_is_clean(studio: Studio) -> None:
    studio.definitions.pick("employee")
    Workspace(studio.workspace.home).edit("restapi_sample", "employee", label="Renamed elsewhere")
    studio.poller.check()

    assert studio.form.label.value == "Renamed elsewhere" and not studio.form.dirty
    assert "changed in another process: reloaded" in studio.form.save_status.text


def test_refresh_keeps_unsaved_edits_and_says_so_beside_save(studio: Studio) -> None:
    studio.definitions.pick("employee")
    studio.form.action.value = "res.body = 'my unsaved edit'"
    Workspace(studio.workspace.home).edit("restapi_sample", "employee", label="Elsewhere")
    studio.poller.check()

    assert studio.form.action.value == "res.body = 'my unsaved edit'" and studio.form.dirty
    assert "changed in another process" in studio.form.save_status.text
    studio.form.save.click()  # the user's edits win, by choice
    saved = studio.workspace.get("restapi_sample", "employee")
    assert saved.action == "res.body = 'my unsaved edit'"


def test_refresh_after_the_open_definition_is_deleted_elsewhere(studio: Studio) -> None:
    studio.definitions.pick("employee")
    Workspace(studio.workspace.home).delete("restapi_sample", "employee")
    studio.poller.check()

    assert studio.form.editing is None and "employee" not in studio.definitions.ids
    assert "deleted in another process" in studio.form.save_status.text


def test_refresh_after_the_application_is_deleted_elsewhere(
    studio: Studio, sample_workspace: Workspace
) -> None:
    sample_workspace.create("other", "ping", label="Ping", method="GET", resource="ping")
    studio.definitions.pick("employee")
    Workspace(studio.workspace.home).delete_application("restapi_sample")
    studio.poller.check()

    assert studio.app == "other" and studio.definitions.ids == ["ping"]
    assert studio.form.editing is None and studio.current is None


def test_refresh_after_a_cli_change(
    studio: Studio, cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    studio.definitions.pick("calculator")
    cli("undeploy", "restapi_sample", "--stage", "dev")
    studio.poller.check()

    row = next(r for r in studio.definitions.rows if r["id"] == "calculator")
    assert row["states"][0] == ["dev", "not deployed"]


def test_background_refresh_within_two_seconds_and_stops_on_close(
    sample_workspace: Workspace,
) -> None:
    widget = Studio(sample_workspace, poll_interval=0.2)
    try:
        assert widget.poller.running
        Workspace(sample_workspace.home).create(
            "restapi_sample", "ping", label="Ping", method="GET", resource="ping"
        )
        deadline = time.monotonic() + 2
        while "ping" not in widget.definitions.ids and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "ping" in widget.definitions.ids
    finally:
        widget.close()
    assert not widget.poller.running
    names = [t.name for t in threading.enumerate()]
    assert "notebook_kit-studio-refresh" not in names


def test_a_new_studio_on_the_same_workspace_takes_over_the_polling(
    sample_workspace: Workspace,
) -> None:
    first = Studio(sample_workspace, poll_interval=0.2)
    second = Studio(Workspace(sample_workspace.home), poll_interval=0.2)  # the cell run again
    try:
        assert second.poller.running and not first.poller.running
        names = [t.name for t in threading.enumerate()]
        assert names.count("notebook_kit-studio-refresh") == 1
        first.refresh()  # the older one still refreshes when asked
    finally:
        second.close()
        first.close()
    assert "notebook_kit-studio-refresh" not in [t.name for t in threading.enumerate()]


def test_studio_text_repr_is_stable(studio: Studio) -> None:
    assert repr(studio) == "<notebook_kit Studio: application 'restapi_sample'>"
    assert studio._repr_mimebundle_()["text/plain"] == repr(studio)
