"""``SchedulesPanel``: the studio's Schedules tab (docs/schedules.md).

The schedules of the application shown, per stage they are deployed to, with their next
and last runs; a form saves one (a definition, a cron expression, a time zone, the
overlap rule); picking one pauses, resumes or runs it now on its stage, or deletes it
(asking first, with Cancel); the latest runs are listed under it (Refresh reads them
again: runs change no saved state, so the studio's refresh does not follow them). Every
rule comes from the core (``Workspace.add_schedule`` and the rest); this only draws and
asks.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from ...errors import NotebookKitError
from ...workspace.workspace import Workspace
from .feedback import Confirm, Status

__all__ = ["SchedulesPanel", "runs_html", "schedules_html"]

_CELL = "padding:2px 10px;text-align:left;border-bottom:1px solid #d0d7de"
_COLUMNS = ("name", "stage", "definition", "cron", "timezone", "overlap", "paused",
            "next_run", "last_run", "last_status")  # fmt: skip
_RUN_COLUMNS = ("tick", "schedule", "stage", "status", "duration_ms", "error")
_RECENT = 10


def _table(rows: list[dict[str, Any]], columns: tuple[str, ...], css: str, row_css: str) -> str:
    head = "".join(f'<th style="{_CELL}">{c.replace("_", " ")}</th>' for c in columns)

    def cell(value: Any) -> str:
        if isinstance(value, float):
            value = f"{value:.0f}"
        text = "" if value is None else str(value)
        return f'<td style="{_CELL}">{html.escape(text)}</td>'

    body = "".join(
        f'<tr class="{row_css}" data-name="{html.escape(str(r.get("name") or r.get("schedule")))}"'
        f' data-stage="{r["stage"] or ""}">' + "".join(cell(r[c]) for c in columns) + "</tr>"
        for r in rows
    )
    return f'<table class="{css}"><tr>{head}</tr>{body}</table>'


def schedules_html(app: str, rows: list[dict[str, Any]]) -> str:
    """The table of ``rows`` (``Workspace.schedules``): one per schedule and stage."""
    if not rows:
        return f"<p>{html.escape(app)} has no schedules.</p>"
    return _table(rows, _COLUMNS, "nk-schedules-table", "nk-schedule-row")


def runs_html(rows: list[dict[str, Any]]) -> str:
    """The latest runs (``Workspace.schedule_runs``)."""
    if not rows:
        return "<p>No runs yet.</p>"
    return _table(rows, _RUN_COLUMNS, "nk-schedule-runs-table", "nk-schedule-run-row")


class SchedulesPanel(widgets.VBox):
    """The Schedules tab (see the module docstring); ``app()`` names the application
    shown."""

    def __init__(self, workspace: Workspace, app: Callable[[], str]) -> None:
        self.workspace = workspace
        self._app = app
        self.table = widgets.HTML(value="")
        self.table.add_class("nk-schedules")
        self.name = widgets.Text(placeholder="nightly", description="Name")
        self.definition = widgets.Dropdown(options=[], description="Definition")
        self.cron = widgets.Text(placeholder="0 2 * * *  (or 6 fields: seconds first)",
                                 description="Cron")  # fmt: skip
        self.timezone = widgets.Text(value="UTC", description="Time zone")
        self.overlap = widgets.Dropdown(options=["skip", "queue"], description="Overlap")
        self.save = widgets.Button(description="Save schedule", button_style="primary",
                                   icon="clock-o")  # fmt: skip
        self.picked = widgets.Dropdown(options=[], description="Schedule")
        self.pause = widgets.Button(description="Pause", icon="pause")
        self.resume = widgets.Button(description="Resume", icon="play")
        self.run_now = widgets.Button(description="Run now", icon="bolt")
        self.delete = widgets.Button(description="Delete…", icon="trash")
        self.reload = widgets.Button(description="Refresh", icon="refresh",
                                     tooltip="Read the next and last runs again")  # fmt: skip
        self.status = Status("nk-schedules-status")
        self.ask = Confirm(self.status, "Delete schedule", "nk-schedule-delete-ask")
        self.runs = widgets.HTML(value="")
        self.runs.add_class("nk-schedule-runs")
        for widget, css in (
            (self.name, "nk-schedule-name"), (self.definition, "nk-schedule-definition"),
            (self.cron, "nk-schedule-cron"), (self.timezone, "nk-schedule-timezone"),
            (self.overlap, "nk-schedule-overlap"), (self.save, "nk-schedule-save"),
            (self.picked, "nk-schedule-picked"), (self.pause, "nk-schedule-pause"),
            (self.resume, "nk-schedule-resume"), (self.run_now, "nk-schedule-run-now"),
            (self.delete, "nk-schedule-delete"), (self.reload, "nk-schedules-refresh"),
        ):  # fmt: skip
            widget.add_class(css)
        self.save.on_click(self._on_save_click)
        self.pause.on_click(self._on_pause_click)
        self.resume.on_click(self._on_resume_click)
        self.run_now.on_click(self._on_run_now_click)
        self.delete.on_click(self._on_delete_click)
        self.reload.on_click(lambda _button: self.refresh())
        note = widgets.HTML(
            "<small>A schedule runs once its application is deployed, each tick once across "
            "every node; pause, resume and run now act on the picked stage.</small>"
        )
        super().__init__(
            [
                widgets.HTML("<b>Schedules</b>"),
                self.table,
                note,
                widgets.HBox([self.name, self.definition]),
                widgets.HBox([self.cron, self.timezone, self.overlap]),
                self.save,
                widgets.HBox([self.picked, self.pause, self.resume, self.run_now, self.delete]),
                self.ask,
                self.status,
                widgets.HBox([widgets.HTML("<b>Latest runs</b>"), self.reload]),
                self.runs,
            ]
        )
        self.add_class("nk-schedules-panel")

    def refresh(self) -> None:
        """Re-read the application's schedules, its definitions and its latest runs."""
        app = self._app()
        try:
            rows = self.workspace.schedules(app) if app else []
            ids = [d.id for d in self.workspace.definitions(app)] if app else []
            runs = self.workspace.schedule_runs(app, limit=_RECENT) if app else []
        except NotebookKitError as exc:
            self.table.value = ""
            self.status.error(exc)
            return
        self.table.value = schedules_html(app, rows)
        self.runs.value = runs_html(runs)
        if list(self.definition.options) != ids:
            self.definition.options = ids
        picks = [
            (f"{r['name']} ({r['stage'] or 'not deployed'})", (r["name"], r["stage"])) for r in rows
        ]
        if list(self.picked.options) != picks:
            self.picked.options = picks

    def _on_save_click(self, _button: widgets.Button) -> None:
        app, name = self._app(), self.name.value.strip()
        with self.status.working(self.save):
            saved = self.workspace.add_schedule(
                app, name, self.definition.value or "", self.cron.value,
                self.timezone.value.strip(), self.overlap.value, replace=True,
            )  # fmt: skip
            self.status.ok(f"Schedule {saved.name} saved: it runs once {app} is deployed")
            self.refresh()

    def _picked(self) -> tuple[str, str | None] | None:
        if not self.picked.value:
            self.status.error("Pick a schedule first")
            return None
        name, stage = self.picked.value
        return str(name), stage

    def _on_stage_action(self, button: widgets.Button, act: Callable[[str, str], str]) -> None:
        picked = self._picked()
        if picked is None:
            return
        name, stage = picked
        if stage is None:
            self.status.error(f"{name} is not deployed: deploy {self._app()} first")
            return
        with self.status.working(button):
            self.status.ok(act(name, stage))
            self.refresh()

    def _on_pause_click(self, button: widgets.Button) -> None:
        def pause(name: str, stage: str) -> str:
            self.workspace.pause_schedule(self._app(), name, stage)
            return f"Schedule {name} paused on {stage}"

        self._on_stage_action(button, pause)

    def _on_resume_click(self, button: widgets.Button) -> None:
        def resume(name: str, stage: str) -> str:
            self.workspace.resume_schedule(self._app(), name, stage)
            return f"Schedule {name} resumed on {stage}"

        self._on_stage_action(button, resume)

    def _on_run_now_click(self, button: widgets.Button) -> None:
        def run(name: str, stage: str) -> str:
            done = self.workspace.run_schedule_now(self._app(), name, stage)
            said = f"Run of {name} on {stage}: {done['status']} in {done['duration_ms']:.0f} ms"
            return said + (f": {done['error']}" if done.get("error") else "")

        self._on_stage_action(button, run)

    def _on_delete_click(self, _button: widgets.Button) -> None:
        picked = self._picked()
        if picked is None:
            return
        name, app = picked[0], self._app()

        def delete() -> None:
            self.workspace.delete_schedule(app, name)
            self.status.ok(f"Schedule {name} deleted (deploy {app} to stop it where it runs)")
            self.refresh()

        self.ask.ask(f"Delete schedule {name} of {app}?", delete)
