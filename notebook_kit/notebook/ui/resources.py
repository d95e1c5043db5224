"""``ResourcesPanel``: per stage, the resource tree and the totals, counted as the spec does."""

from __future__ import annotations

import html

import ipywidgets as widgets

from ...domain.models import Stage
from ...workspace.workspace import Workspace
from .feedback import Status

__all__ = ["ResourcesPanel"]


class ResourcesPanel(widgets.VBox):
    """What each stage serves: its resource tree and how many resources it uses."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.status = Status("nk-resources-status")
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.refresh_button.add_class("nk-resources-refresh")
        self.view = widgets.HTML()
        self.view.add_class("nk-resources-view")
        self.refresh_button.on_click(self._on_refresh_button_click)
        super().__init__([widgets.HTML("<h4>Resources</h4>"), self.refresh_button, self.view])
        self.add_class("nk-resources")
        self.refresh()

    def refresh(self) -> None:
        counts = self.workspace.resources()
        columns = []
        for stage in Stage:
            stage_counts = counts[str(stage)]
            per_app = "".join(
                f"<li>{html.escape(app)}: {n}</li>" for app, n in stage_counts["apps"].items()
            )
            tree = "\n".join(self.workspace.resource_tree(stage)) or "(nothing deployed)"
            columns.append(
                f'<div class="nk-resources-{stage}" style="margin-right:3em">'
                f"<b>{stage}</b>: {stage_counts['total']} resources"
                f"<ul>{per_app}</ul><pre>{html.escape(tree)}</pre></div>"
            )
        self.view.value = '<div style="display:flex">' + "".join(columns) + "</div>"

    def _on_refresh_button_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.refresh_button):
            self.refresh()
