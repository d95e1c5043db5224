"""The studio's details driven from Python over real workspaces: status lines that never
contradict the page, actions that wait for the field updates sent before them, search by
label, path or ID, the first screen of an empty workspace."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from notebook_kit import Workspace
from notebook_kit.notebook.ui import Studio
from notebook_kit.notebook.ui.feedback import Status
from notebook_kit.notebook.ui.studio import TAB_TITLES


@pytest.fixture
def studio(sample_workspace: Workspace) -> Iterator[Studio]:
    widget = Studio(sample_workspace, poll_interval=None)  # tests call refresh() themselves
    yield widget
    widget.close()


def shown(studio: Studio) -> dict[str, str]:
    """Every status line of the studio that shows something: its class to its text."""
    lines = {}
    for status in studio.board.statuses:
        if status.value:
            css = next(c for c in status._dom_classes if c not in ("nk-status", "nk-status-error"))
            lines[css] = status.text
    return lines


def front_end_click(widget: Any) -> None:
    """What the browser sends when a person clicks ``widget``."""
    widget._handle_custom_msg({"event": "click"}, [])


def pong(studio: Studio, shown: dict[Any, str] | None = None) -> None:
    """The front end's answer to every ping sent so far: what the page shows in each
    field asked about (``shown`` where it differs from the kernel's value)."""
    for ping in sorted(studio.sync._waiting):
        fields, _action = studio.sync._waiting[ping]
        values = [(shown or {}).get(field) for field in fields]  # None: not typed into
        studio.sync._handle_custom_msg({"pong": ping, "values": values}, [])


# -- status lines ------------------------------------------------------------------------


def test_every_action_status_line_is_on_the_board(studio: Studio) -> None:
    statuses = studio.board.statuses
    for status in (
        studio.form.save_status,
        studio.deploy.status,
        studio.deploy.rollback_status,
        studio.tester.message,
        studio.app_bar.status,
        studio.sidebar_status,
        studio.manage.delete_status,
    ):
        assert status in statuses
    assert studio.logs.status not in statuses  # it describes the table, redrawn with it


def test_a_deploy_clears_the_rollback_line_that_named_another_live_one(studio: Studio) -> None:
    ws = studio.workspace
    studio.tabs.selected_index = TAB_TITLES.index("Deploy")
    first = ws.deploy("restapi_sample", "dev")
    studio.refresh()
    assert studio.deploy.rollback_target.value < first.id
    studio.deploy.rollback.click()
    studio.deploy.rollback_ask.confirm.click()
    assert "is live" in studio.deploy.rollback_status.text
    studio.deploy.deploy_dev.click()
    live = next(d for d in ws.deployments("restapi_sample") if d.active and d.stage == "dev")
    assert shown(studio) == {"nk-deploy-status": studio.deploy.status.text}
    assert f"deployment {live.id}" in studio.deploy.status.text


def test_an_edit_clears_saved_at_beside_the_unsaved_marker(studio: Studio) -> None:
    studio.definitions.pick("employee")
    studio.form.label.value = "Employee v2"
    studio.form.save.click()
    assert studio.form.save_status.text.startswith("Saved restapi_sample / employee at ")
    assert studio.form.unsaved.value == ""
    studio.form.label.value = "Employee v3"
    assert "unsaved changes" in studio.form.unsaved.value
    assert studio.form.save_status.text == ""


def test_created_and_deleted_lines_clear_when_another_definition_opens(studio: Studio) -> None:
    bar = studio.app_bar
    bar.new_id.value = "shop"
    bar.create.click()
    assert studio.app == "shop"
    assert shown(studio) == {"nk-app-status": "Created application shop (shop)"}
    studio.select("restapi_sample")
    studio.definitions.pick("employee")
    assert shown(studio) == {}
    studio.manage.delete.click()
    studio.manage.delete_ask.confirm.click()
    assert shown(studio) == {
        "nk-delete-status": "Deleted restapi_sample / employee "
        "(what is deployed stays until a redeploy)"
    }
    studio.definitions.pick("calculator")
    assert shown(studio) == {}


def test_a_change_elsewhere_clears_the_lines_but_our_own_action_does_not(
    studio: Studio,
) -> None:
    studio.tabs.selected_index = TAB_TITLES.index("Deploy")
    studio.deploy.deploy_dev.click()
    said = studio.deploy.status.text
    studio.refresh()  # what the poller does after our own deploy moved the store
    assert studio.deploy.status.text == said
    Workspace(studio.workspace.home).deploy("restapi_sample", "dev")  # another process
    studio.refresh()
    assert shown(studio) == {}


def test_a_status_off_the_board_is_left_alone(studio: Studio) -> None:
    studio.logs.status.info("2 of 2 logged requests match")
    studio.sidebar_status.ok("something else")
    assert studio.logs.status.text == "2 of 2 logged requests match"
    assert Status().board is None  # a panel made alone has no board: lines stay apart


# -- acting on what the user sees --------------------------------------------------------


def test_a_browser_click_acts_on_what_the_page_shows(studio: Studio) -> None:
    studio.definitions.pick("employee")
    studio.form.resource.value = "items/{sku"  # the kernel has heard this much...
    front_end_click(studio.form.save)  # ...when the click arrives: it waits
    assert studio.workspace.get("restapi_sample", "employee").resource == "employee/{id}"
    fields = studio.sync._waiting[max(studio.sync._waiting)][0]
    assert studio.form.resource in fields and studio.form.action in fields
    assert studio.tester.params["id"] in fields  # the Test tab's too
    pong(studio, {studio.form.resource: "items/{sku}"})  # what the page shows
    assert studio.workspace.get("restapi_sample", "employee").resource == "items/{sku}"
    assert studio.form.resource.value == "items/{sku}"
    assert studio.form.save_status.text.startswith("Saved restapi_sample / employee")


def test_a_pong_from_a_second_view_is_ignored(studio: Studio) -> None:
    studio.definitions.pick("employee")
    front_end_click(studio.form.save)
    ping = max(studio.sync._waiting)
    pong(studio)
    studio.sync._handle_custom_msg({"pong": ping, "values": []}, [])  # another view, late
    assert studio.sync._waiting == {}


def test_a_click_made_from_python_runs_at_once(studio: Studio) -> None:
    studio.definitions.pick("employee")
    studio.form.label.value = "Now"
    studio.form.save.click()
    assert studio.workspace.get("restapi_sample", "employee").label == "Now"
    assert studio.sync._waiting == {}


def test_enter_or_ctrl_s_in_a_field_saves_after_the_pending_updates(studio: Studio) -> None:
    assert ".nk-field-label input" in studio.sync.save_fields
    assert ".nk-field-resource input" in studio.sync.save_fields
    studio.definitions.pick("employee")
    studio.sync._handle_custom_msg({"event": "save"}, [])  # Enter in the label field
    pong(studio, {studio.form.label: "Typed then Enter"})
    assert studio.workspace.get("restapi_sample", "employee").label == "Typed then Enter"


def test_every_button_editor_and_the_list_wait_for_the_front_end(studio: Studio) -> None:
    for widget in (
        studio.form.save,
        studio.form.action,
        studio.tester.dev_button,
        studio.deploy.deploy_dev,
        studio.definitions,
    ):
        assert "deferred" in widget._handle_custom_msg.__name__


# -- search, first screen ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("search", "expected"),
    [
        ("calc", {"calculator", "calculator-preflight"}),  # label and ID
        ("/employee/{", {"employee", "employee-preflight"}),  # path, with its leading /
        ("EMPLOYEE-PRE", {"employee-preflight"}),  # ID, any case
    ],
)
def test_search_finds_by_label_path_or_id(studio: Studio, search: str, expected: set) -> None:
    studio.search.value = search
    assert set(studio.definitions.ids) == expected


# -- compile errors ------------------------------------------------------------------------


def test_a_compile_error_is_written_under_its_editor_as_typed(studio: Studio) -> None:
    studio.definitions.pick("employee")
    studio.form.action.value = "x = 1\nres.body = (\n"
    under = studio.form.errors["action"].value
    assert "line 2" in under and "action" in under  # not only the marker's tooltip
    assert studio.form.action.error_line == 2
    studio.form.functions.value = "def f(:\n  pass"
    assert "line 1" in studio.form.errors["functions"].value
    studio.form.action.value = "res.body = 1"
    studio.form.functions.value = ""
    assert studio.form.errors["action"].value == studio.form.errors["functions"].value == ""


def test_an_empty_workspace_leads_with_creating_an_application(workspace: Workspace) -> None:
    studio = Studio(workspace, poll_interval=None)
    try:
        bar = studio.app_bar
        visible = [c for c in bar.children if c.layout.display != "none" and c is not bar.status]
        assert visible[0] is bar.welcome and "create an application" in bar.welcome.value
        assert bar.new_box in visible and bar.new_box.layout.display is None
        assert bar.picker not in visible and bar.actions_row not in visible
        assert "Create an application first" in studio.form.title.value
        bar.new_id.value = "shop"
        bar.create.click()
        assert studio.app == "shop"
        assert bar.welcome.layout.display == "none"
        assert bar.picker.layout.display is None and bar.new_box.layout.display == "none"
        assert studio.form.title.value == "<h4>New definition in shop</h4>"
    finally:
        studio.close()
