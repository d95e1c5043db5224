"""``ApplicationBar``: pick the application the studio shows, or create one."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from ...workspace.workspace import Workspace
from .feedback import Status

__all__ = ["ApplicationBar"]


class ApplicationBar(widgets.VBox):
    """A picker of applications and a create row. Picking or creating ``X`` calls
    ``request_switch(X, proceed)``; the studio calls ``proceed()`` to make it current."""

    def __init__(
        self, workspace: Workspace, request_switch: Callable[[str, Callable[[], None]], None]
    ) -> None:
        self.workspace = workspace
        self.request_switch = request_switch
        self.app = ""
        auto = widgets.Layout(width="auto")
        self.picker = widgets.Dropdown(options=[], layout=auto)
        self.new_id = widgets.Text(placeholder="new application ID", layout=auto)
        self.new_label = widgets.Text(placeholder="label (optional)", layout=auto)
        self.create = widgets.Button(description="Create application", layout=auto)
        self.status = Status("nk-app-status")
        for widget, css in (
            (self.picker, "nk-app-picker"),
            (self.new_id, "nk-app-new-id"),
            (self.new_label, "nk-app-new-label"),
            (self.create, "nk-app-create"),
        ):
            widget.add_class(css)
        self._quiet = False
        self.picker.observe(self._on_picker_value, names="value")
        self.create.on_click(self._on_create_click)
        super().__init__(
            [
                widgets.HTML("<b>Application</b>"),
                self.picker,
                self.new_id,
                self.new_label,
                self.create,
                self.status,
            ]
        )
        self.add_class("nk-app-bar")
        self.refresh()
        apps = [a.id for a in workspace.applications()]
        self.show(apps[0] if apps else "")

    def refresh(self) -> None:
        apps = [a.id for a in self.workspace.applications()]
        self._quiet = True
        try:
            self.picker.options = apps
            self.picker.value = self.app if self.app in apps else None
        finally:
            self._quiet = False

    def show(self, app: str) -> None:
        """Make ``app`` the one shown (no callback)."""
        self.app = app
        self.refresh()

    def _switch(self, app: str) -> None:
        def proceed() -> None:
            self.show(app)

        self.request_switch(app, proceed)

    def _on_picker_value(self, change: dict[str, object]) -> None:
        if self._quiet or change["new"] is None or change["new"] == self.app:
            return
        self._switch(str(change["new"]))

    def _on_create_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.create):
            app = self.workspace.create_application(self.new_id.value.strip(), self.new_label.value)
            self.new_id.value = self.new_label.value = ""
            self.status.ok(f"Created application {app.id}")
            self.refresh()
            self._switch(app.id)
