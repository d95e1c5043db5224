"""The studio's feedback pieces driven from Python (the panels have their own test files:
test_studio_shell, test_ui_test_tab, test_ui_deploy_tab, test_ui_logs, test_ui_resources,
test_ui_applications)."""

from __future__ import annotations


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
