"""The studio driven from Python: set values, click, assert on the store and on what is shown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import notebook_kit
from notebook_kit import Workspace
from notebook_kit.notebook.ui import Studio


@pytest.fixture
def studio(sample_workspace: Workspace) -> Iterator[Studio]:
    widget = notebook_kit.studio(sample_workspace)
    yield widget
    if widget.server_panel.server is not None:
        widget.server_panel.server.stop()
    widget.close()


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
