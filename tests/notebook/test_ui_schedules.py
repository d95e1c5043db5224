"""The studio's Schedules tab, driven from Python: save a schedule, see it per stage with
its next and last runs once deployed, pause, resume, run now (a real action process),
delete after a confirm, refusals as a status line."""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_kit.notebook.ui.schedules import SchedulesPanel
from notebook_kit.notebook.ui.studio import TAB_TITLES, Studio
from notebook_kit.workspace.workspace import Workspace

APP = "jobs"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "home")
    workspace.create(APP, "refresh", label="Refresh", method="POST", resource="refresh",
                     action="res.body = {'ok': True}")  # fmt: skip
    workspace.create(APP, "item", label="Item", method="GET", resource="item/{id}",
                     action="pass")  # fmt: skip
    return workspace


@pytest.fixture
def panel(ws: Workspace) -> SchedulesPanel:
    shown = SchedulesPanel(ws, lambda: APP)
    shown.refresh()
    return shown


def _save(panel: SchedulesPanel, name: str, cron: str, definition: str = "refresh") -> None:
    panel.name.value = name
    panel.definition.value = definition
    panel.cron.value = cron
    panel.timezone.value = "Europe/Paris"
    panel.save.click()


def test_save_deploy_and_see_next_and_last_runs(panel: SchedulesPanel, ws: Workspace) -> None:
    assert "jobs has no schedules" in panel.table.value
    assert list(panel.definition.options) == ["item", "refresh"]
    _save(panel, "nightly", "0 2 * * *")
    assert panel.status.text == "Schedule nightly saved: it runs once jobs is deployed"
    assert 'data-name="nightly" data-stage=""' in panel.table.value
    ws.deploy(APP, "dev")
    panel.refresh()
    assert 'data-name="nightly" data-stage="dev"' in panel.table.value
    (row,) = ws.schedules(APP)
    assert row["next_run"] in panel.table.value  # the next run is shown
    panel.picked.value = ("nightly", "dev")
    ws.run_schedule_now(APP, "nightly", "dev")  # elsewhere: Refresh shows it
    assert "No runs yet" in panel.runs.value
    panel.reload.click()
    assert panel.runs.value.count("nk-schedule-run-row") == 1
    panel.run_now.click()
    assert panel.status.text.startswith("Run of nightly on dev: succeeded in ")
    assert panel.runs.value.count("nk-schedule-run-row") == 2 and "succeeded" in panel.runs.value
    panel.pause.click()
    assert panel.status.text == "Schedule nightly paused on dev"
    assert ws.schedules(APP)[0]["paused"] is True
    panel.resume.click()
    assert ws.schedules(APP)[0]["paused"] is False


def test_refusals_show_in_the_status(panel: SchedulesPanel, ws: Workspace) -> None:
    _save(panel, "bad", "0 25 * * *")
    assert panel.status.text == "cron expression '0 25 * * *': hour 25 is out of range 0-23"
    _save(panel, "bad", "* * * * *", definition="item")
    assert "path parameters" in panel.status.text
    assert ws.schedules(APP) == []
    _save(panel, "later", "@hourly")
    panel.picked.value = ("later", None)
    panel.run_now.click()
    assert panel.status.text == "later is not deployed: deploy jobs first"
    panel.picked.value = None
    panel.pause.click()
    assert panel.status.text == "Pick a schedule first"


def test_delete_asks_first_and_cancel_keeps_it(panel: SchedulesPanel, ws: Workspace) -> None:
    _save(panel, "nightly", "0 2 * * *")
    panel.picked.value = ("nightly", None)
    panel.delete.click()
    assert panel.ask.asking and "Delete schedule nightly of jobs?" in panel.ask.question.value
    panel.ask.cancel.click()
    assert [r["name"] for r in ws.schedules(APP)] == ["nightly"]
    panel.delete.click()
    panel.ask.confirm.click()
    assert ws.schedules(APP) == []
    assert "jobs has no schedules" in panel.table.value


def test_the_studio_has_a_schedules_tab_after_secrets(ws: Workspace) -> None:
    studio = Studio(ws, poll_interval=None)
    try:
        studio.select(APP)
        index = TAB_TITLES.index("Schedules")
        assert index == TAB_TITLES.index("Secrets") + 1
        assert studio.tabs.children[index] is studio.schedules
        studio.tabs.selected_index = index
        _save(studio.schedules, "nightly", "0 2 * * *")
        assert 'data-name="nightly"' in studio.schedules.table.value
    finally:
        studio.close()


def test_the_run_log_as_a_frame(tmp_path: Path) -> None:
    import notebook_kit

    ws = notebook_kit.Workspace(tmp_path / "nb")
    ws.create(APP, "refresh", label="Refresh", method="POST", resource="refresh",
              action="res.body = {}")  # fmt: skip
    ws.add_schedule(APP, "hourly", "refresh", "@hourly")
    ws.deploy(APP, "dev")
    ws.run_schedule_now(APP, "hourly", "dev")
    frame = ws.schedule_runs_frame(APP)
    assert list(frame["status"]) == ["succeeded"]
    assert str(frame["tick"].dtype).endswith(", UTC]")
    assert frame["duration_ms"].iloc[0] > 0
    assert ws.schedule_runs_frame("other").empty
