"""``LogsPanel``: the request log, newest first."""

from __future__ import annotations

import html

import ipywidgets as widgets

from ...workspace.workspace import Workspace

__all__ = ["LogsPanel"]


class LogsPanel(widgets.VBox):
    """The newest requests the servers logged; ``refresh()`` re-reads them."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.app = ""
        self.active = False
        self.table = widgets.HTML()
        self.table.add_class("nk-logs-table")
        super().__init__([widgets.HTML("<h4>Request log</h4>"), self.table])
        self.add_class("nk-logs")

    def load(self, app: str) -> None:
        self.app = app
        self.refresh()

    def set_active(self, active: bool) -> None:
        self.active = active
        if active:
            self.refresh()

    def refresh(self) -> None:
        rows = self.workspace.request_log(limit=50)
        cells = "".join(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(r.get(k, '')))}</td>"
                for k in ("at", "stage", "method", "path", "status", "duration_ms")
            )
            + "</tr>"
            for r in reversed(rows)
        )
        self.table.value = f"<table>{cells}</table>" if rows else "<i>no requests yet</i>"
