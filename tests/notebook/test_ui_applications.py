"""The ApplicationBar from Python on a real workspace: pick, create, rename, delete
(confirmed, saying what goes), and the switch handshake with the studio."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from notebook_kit.errors import NotFoundError
from notebook_kit.notebook.ui.applications import ApplicationBar
from notebook_kit.workspace.workspace import Workspace


class Studio:
    """What the studio does with a switch request: remember it; agree or refuse later."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, Callable[[], None]]] = []

    def __call__(self, app: str, proceed: Callable[[], None]) -> None:
        self.requests.append((app, proceed))

    def agree(self) -> str:
        app, proceed = self.requests.pop()
        proceed()
        return app


@pytest.fixture
def studio() -> Studio:
    return Studio()


@pytest.fixture
def bar(sample_workspace: Workspace, studio: Studio) -> ApplicationBar:
    sample_workspace.create_application("alpha", "Alpha shop")
    return ApplicationBar(sample_workspace, studio)


def test_starts_on_the_first_application(bar: ApplicationBar, studio: Studio) -> None:
    assert list(bar.picker.options) == ["alpha", "restapi_sample"]
    assert (bar.app, bar.picker.value, bar.label.value) == ("alpha", "alpha", "Alpha shop")
    assert studio.requests == []  # the first showing asks nobody


def test_empty_workspace_shows_nothing(workspace: Workspace, studio: Studio) -> None:
    empty = ApplicationBar(workspace, studio)
    assert (empty.app, empty.picker.value, list(empty.picker.options)) == ("", None, [])
    empty.delete.click()
    assert empty.status.text == "Choose an application first"


def test_picking_asks_the_studio_and_waits_for_it(bar: ApplicationBar, studio: Studio) -> None:
    bar.picker.value = "restapi_sample"
    assert [app for app, _ in studio.requests] == ["restapi_sample"]
    assert bar.app == "alpha"  # not until the studio agrees
    assert studio.agree() == "restapi_sample"
    assert (bar.app, bar.label.value) == ("restapi_sample", "REST API sample")


def test_a_refused_switch_puts_the_picker_back(bar: ApplicationBar, studio: Studio) -> None:
    bar.picker.value = "restapi_sample"
    studio.requests.clear()  # the user kept their unsaved edits
    bar.show(bar.app)
    assert (bar.app, bar.picker.value) == ("alpha", "alpha")
    assert studio.requests == []  # showing asks nobody


def test_create_adds_the_application_and_asks_to_switch(
    bar: ApplicationBar, studio: Studio, sample_workspace: Workspace
) -> None:
    bar.new_id.value, bar.new_label.value = "beta", "Beta API"
    bar.create.click()
    assert sample_workspace.application("beta").label == "Beta API"
    assert bar.status.text == "Created application beta (Beta API)"
    assert (bar.new_id.value, bar.new_label.value) == ("", "")
    assert "beta" in bar.picker.options
    assert studio.agree() == "beta"
    assert (bar.app, bar.picker.value, bar.label.value) == ("beta", "beta", "Beta API")


@pytest.mark.parametrize(
    ("new_id", "message"),
    [
        ("", "application ID '' must be 1 to 64 characters"),
        ("has space", "application ID 'has space' must be"),
        ("alpha", "application 'alpha' already exists"),
    ],
)
def test_create_refusals_show_next_to_the_fields_and_change_nothing(
    bar: ApplicationBar, studio: Studio, sample_workspace: Workspace, new_id: str, message: str
) -> None:
    bar.new_id.value = new_id
    bar.create.click()
    assert bar.status.text.startswith(message)
    assert "nk-status-error" in bar.status._dom_classes
    assert bar.new_id.value == new_id  # kept for correcting
    assert [a.id for a in sample_workspace.applications()] == ["alpha", "restapi_sample"]
    assert studio.requests == []


def test_rename_changes_only_the_label(
    bar: ApplicationBar, sample_workspace: Workspace, studio: Studio
) -> None:
    generation = sample_workspace.store.generation()
    bar.label.value = "  Alpha, renamed "
    bar.rename.click()
    assert sample_workspace.application("alpha").label == "Alpha, renamed"
    assert bar.status.text == "Renamed alpha: its label is now 'Alpha, renamed'"
    assert sample_workspace.store.generation() > generation  # other processes notice
    bar.label.value = ""
    bar.rename.click()
    assert sample_workspace.application("alpha").label == "alpha"  # blank: the ID
    assert studio.requests == []


def test_rename_or_delete_of_an_unknown_application_is_refused(
    sample_workspace: Workspace,
) -> None:
    with pytest.raises(NotFoundError, match="no application 'nope'"):
        sample_workspace.rename_application("nope", "x")
    with pytest.raises(NotFoundError, match="no application 'nope'"):
        sample_workspace.deletion_impact("nope")
    assert [a.id for a in sample_workspace.applications()] == ["restapi_sample"]


def test_delete_asks_saying_what_goes_and_cancel_keeps_it(
    bar: ApplicationBar, studio: Studio, sample_workspace: Workspace
) -> None:
    bar.picker.value = "restapi_sample"
    studio.agree()
    bar.delete.click()
    assert bar.delete_ask.asking
    question = bar.delete_ask.question.value
    assert "restapi_sample" in question and "its 4 definitions go" in question
    assert "undeployed from dev and prod" in question
    bar.delete_ask.cancel.click()
    assert not bar.delete_ask.asking
    assert sample_workspace.application("restapi_sample")
    assert bar.status.text == "Cancelled: nothing changed"


def test_confirmed_delete_removes_it_undeploys_and_moves_on(
    bar: ApplicationBar, studio: Studio, sample_workspace: Workspace
) -> None:
    bar.picker.value = "restapi_sample"
    studio.agree()
    bar.delete.click()
    bar.delete_ask.confirm.click()
    assert [a.id for a in sample_workspace.applications()] == ["alpha"]
    assert sample_workspace.live("dev") == {} and sample_workspace.live("prod") == {}
    assert sample_workspace.definitions() == []
    assert bar.status.text == (
        "Deleted application restapi_sample (4 definitions; undeployed from dev and prod)"
    )
    assert list(bar.picker.options) == ["alpha"]
    assert studio.agree() == "alpha"
    assert bar.app == "alpha"


def test_deleting_the_last_application_switches_to_none(
    workspace: Workspace, studio: Studio
) -> None:
    workspace.create_application("only")
    bar = ApplicationBar(workspace, studio)
    assert workspace.deletion_impact("only").describe() == (
        "Delete application only: its 0 definitions go and nothing of it is live (history stays)."
    )
    bar.delete.click()
    bar.delete_ask.confirm.click()
    assert studio.agree() == ""
    assert (bar.app, bar.picker.value, bar.label.value) == ("", None, "")


def test_refresh_sees_applications_made_and_deleted_elsewhere(
    bar: ApplicationBar, sample_workspace: Workspace, studio: Studio
) -> None:
    Workspace(sample_workspace.home).create_application("gamma")
    assert bar.refresh() == ["alpha", "gamma", "restapi_sample"]
    assert bar.picker.value == "alpha" and studio.requests == []
    Workspace(sample_workspace.home).delete_application("alpha")
    bar.refresh()
    assert bar.picker.value is None and list(bar.picker.options) == ["gamma", "restapi_sample"]
    assert bar.label.value == ""
    assert studio.agree() == "gamma"  # the current one went: the studio is asked to move
    assert (bar.app, bar.picker.value) == ("gamma", "gamma")
