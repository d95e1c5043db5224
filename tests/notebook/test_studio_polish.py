"""What a newcomer's pass over the studio fixed, driven from Python on real workspaces:
the compact "New application" toggle, the definition's other actions right under Save,
Test's request line following the edited version, a rollback with nothing to go back to,
and hidden tabs that re-read the store only when they are shown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from notebook_kit import Workspace
from notebook_kit.notebook.ui import ApplicationBar, Studio
from notebook_kit.notebook.ui.feedback import output_text
from notebook_kit.notebook.ui.studio import TAB_TITLES


@pytest.fixture
def studio(sample_workspace: Workspace) -> Iterator[Studio]:
    widget = Studio(sample_workspace, poll_interval=None)
    yield widget
    widget.close()


def _shown(widget: object) -> bool:
    return widget.layout.display != "none"  # type: ignore[attr-defined]


# -- the application bar -------------------------------------------------------------


def test_creating_an_application_is_folded_behind_a_toggle(studio: Studio) -> None:
    bar = studio.app_bar
    assert not _shown(bar.new_box)  # the sidebar keeps its room for the list
    bar.new_toggle.value = True
    assert _shown(bar.new_box)
    bar.new_id.value, bar.new_label.value = "beta", "Beta API"
    bar.create.click()
    assert bar.app == "beta"
    assert "Created application beta" in bar.status.text
    assert not _shown(bar.new_box) and bar.new_toggle.value is False  # folded again


def test_a_refused_create_keeps_the_fields_open(studio: Studio) -> None:
    bar = studio.app_bar
    bar.new_toggle.value = True
    bar.new_id.value = "restapi_sample"  # exists already
    bar.create.click()
    assert "nk-status-error" in bar.status._dom_classes
    assert _shown(bar.new_box) and bar.new_id.value == "restapi_sample"


def test_an_empty_workspace_shows_the_create_fields_at_once(workspace: Workspace) -> None:
    bar = ApplicationBar(workspace, request_switch=lambda app, proceed: proceed())
    try:
        assert bar.new_toggle.value is True and _shown(bar.new_box)
    finally:
        bar.close()


# -- the definition's other actions --------------------------------------------------


def test_delete_and_the_folded_actions_sit_right_under_save(studio: Studio) -> None:
    children = list(studio.form.children)
    at = children.index(studio.form.save_row)
    assert children[at + 1] is studio.manage  # above the long fields, no scrolling
    assert children.index(studio.form.action) > at + 1
    manage = studio.manage
    assert not _shown(manage.more_box)
    manage.more.value = True
    assert _shown(manage.more_box)
    studio.select("restapi_sample", "employee")
    manage.copy_to_app.value = "copies"
    studio.workspace.create_application("copies")
    manage.copy_run.click()
    assert "Copied restapi_sample / employee to copies / employee" in manage.copy_status.text
    manage.more.value = False
    assert not _shown(manage.more_box)


def test_add_cors_preflight_makes_the_options_definition_beside_delete(studio: Studio) -> None:
    ws, manage = studio.workspace, studio.manage
    ws.create(
        "restapi_sample", "notes", label="Notes", method="POST", resource="notes",
        content_type="application/json",
    )  # fmt: skip
    studio.select("restapi_sample", "notes")
    assert not manage.preflight.disabled
    manage.preflight.click()
    made = ws.get("restapi_sample", "notes-preflight")
    assert (made.method, made.resource, made.requires_auth) == ("OPTIONS", "notes", False)
    assert "content-type,x-api-key" in made.action
    assert "Added notes-preflight (OPTIONS notes, no key)" in manage.delete_status.text
    manage.preflight.click()  # twice: refused, said beside the button
    assert "already answers OPTIONS with 'notes-preflight'" in manage.delete_status.text
    studio.select("restapi_sample", "employee-preflight")
    assert manage.preflight.disabled  # an OPTIONS definition is a preflight already


# -- Test: the request line is the one that ran ------------------------------------


def test_run_edited_shows_the_edited_method_url_and_parameters(studio: Studio) -> None:
    studio.select("restapi_sample", "employee")
    tester = studio.tester
    tester.params["id"].value = "7"
    saved_line = tester.request.value
    assert "/dev/restapi_sample/employee/7" in saved_line
    studio.form.resource.value = "staff/{team}/{id}"
    studio.form.method.value = "POST"
    studio.form.action.value = "res.body = {'team': req.pathParameters.get('team')}"
    tester.run_edited()  # the new {team} has no value yet: asked for, beside the buttons
    assert "give a value for the path parameter {team}" in tester.message.text
    line = tester.request.value
    assert "<b>POST</b>" in line and "/dev/restapi_sample/staff/{team}/7" in line
    assert "the edited version, unsaved" in line
    assert set(tester.params) == {"team", "id"} and tester.params["id"].value == "7"
    tester.params["team"].value = "ops"
    assert "/dev/restapi_sample/staff/ops/7" in tester.request.value
    tester.run_edited()
    assert "ran the edited version" in tester.version.value
    assert '"team": "ops"' in output_text(tester.output)
    tester.refresh()  # nothing changed in the store: the edited line stays
    assert "staff/ops/7" in tester.request.value
    tester.run_saved()
    assert "ran the saved version" in tester.version.value
    assert "<b>GET</b>" in tester.request.value and "unsaved" not in tester.request.value
    assert "/dev/restapi_sample/employee/7" in tester.request.value
    assert set(tester.params) == {"id"}


def test_an_invalid_edit_leaves_the_request_line_alone(studio: Studio) -> None:
    studio.select("restapi_sample", "employee")
    before = studio.tester.request.value
    studio.form.resource.value = "bad resource/{"
    studio.tester.run_edited()
    assert "nk-status-error" in studio.tester.message._dom_classes
    assert studio.tester.request.value == before


# -- Deploy: no rollback offered when there is nothing to go back to -----------------


def test_rollback_target_is_disabled_with_a_single_deployment(studio: Studio) -> None:
    studio.tabs.selected_index = TAB_TITLES.index("Deploy")
    deploy = studio.deploy
    assert deploy.rollback_target.options == () and deploy.rollback_target.disabled
    deploy.deploy_dev.click()
    assert not deploy.rollback_target.disabled
    deploy.rollback.click()
    assert deploy.rollback_ask.asking


# -- refresh: only what is shown ------------------------------------------------------


def test_a_hidden_tab_reads_the_store_when_it_is_shown(studio: Studio) -> None:
    other = Workspace(studio.workspace.home)  # another process, as far as the studio knows
    other.create("restapi_sample", "ping", label="Ping", method="GET", resource="ping")
    other.deploy("restapi_sample", "dev")
    assert studio.tabs.selected_index == 0
    resources_before = studio.resources.view.value
    deployments_before = studio.deploy.deployments.value
    studio.refresh()
    assert any(row["id"] == "ping" for row in studio.definitions.rows)  # the list: always
    assert studio.resources.view.value == resources_before  # hidden: not re-read
    assert studio.deploy.deployments.value == deployments_before
    studio.tabs.selected_index = TAB_TITLES.index("Resources")
    assert 'data-path="/restapi_sample/ping"' in studio.resources.view.value
    studio.tabs.selected_index = TAB_TITLES.index("Deploy")
    assert studio.deploy.deployments.value != deployments_before
    studio.tabs.selected_index = TAB_TITLES.index("Resources")
    other.undeploy("restapi_sample", "dev")
    studio.refresh()  # the shown tab re-reads at once
    assert "nk-resources-dev" in studio.resources.view.value
    assert 'data-path="/restapi_sample/ping"' not in studio.resources.view.value  # prod: never


def test_a_new_definition_runs_as_edited_and_the_test_tab_says_so(studio: Studio) -> None:
    studio.new.click()
    tester = studio.tester
    assert "Run edited runs the form as it is" in tester.title.value
    assert tester.saved_button.disabled and not tester.edited_button.disabled
    studio.form.id.value, studio.form.label.value = "ping", "Ping"
    studio.form.resource.value = "ping"
    studio.form.action.value = "res.body = 'pong'"
    tester.run_edited()
    assert "ran the edited version" in tester.version.value
    assert "/dev/restapi_sample/ping" in tester.request.value
    assert "the edited version, unsaved" in tester.request.value
    assert "ping" not in {d.id for d in studio.workspace.definitions("restapi_sample")}


def test_reveal_key_hides_alone_for_an_endpoint_without_a_key(studio: Studio) -> None:
    tester = studio.tester
    studio.select("restapi_sample", "calculator-preflight")  # no API key required
    assert not _shown(tester.curl_reveal)
    assert all(_shown(button) for button in tester.buttons)  # the run buttons stay
    studio.select("restapi_sample", "employee")
    assert _shown(tester.curl_reveal)
