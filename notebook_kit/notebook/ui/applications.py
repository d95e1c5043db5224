"""``ApplicationBar``: pick the application to work on, create one, rename its label,
delete it (confirmed, saying what goes).

The bar does not switch the studio itself: picking or creating application X calls
``request_switch(X, proceed)``; the studio calls ``proceed()`` at once, or once the user
agreed to drop unsaved edits, or never (then it calls ``show(current)`` to put the picker
back). ``app`` is the application the studio shows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import ipywidgets as widgets

from ...errors import NotebookKitError
from ...workspace.workspace import Workspace
from .feedback import Confirm, Status

__all__ = ["ApplicationBar"]

SwitchRequest = Callable[[str, Callable[[], None]], None]


class ApplicationBar(widgets.VBox):
    """The application picker with create, rename and delete, and its own status line."""

    def __init__(self, workspace: Workspace, request_switch: SwitchRequest) -> None:
        self.workspace = workspace
        self.request_switch = request_switch
        self.app = ""
        self._quiet = False  # set while the bar itself moves the picker
        auto = widgets.Layout(width="auto")
        self.picker = widgets.Dropdown(  # auto: its bar's width, margins included
            description="Application", layout=widgets.Layout(width="auto")
        )
        self.label = widgets.Text(
            placeholder="label", layout=widgets.Layout(flex="1 1 6em", width="auto", min_width="0")
        )
        self.rename = widgets.Button(description="Rename", layout=auto, tooltip="Save this label")
        self.delete = widgets.Button(description="Delete application", icon="trash", layout=auto)
        self.new_id = widgets.Text(
            placeholder="new application ID", layout=widgets.Layout(flex="1 1 auto", width="auto")
        )
        self.new_label = widgets.Text(
            placeholder="label (optional)", layout=widgets.Layout(flex="1 1 auto", width="auto")
        )
        self.create = widgets.Button(description="Create", icon="plus", layout=auto)
        # Creating is occasional: a toggle reveals its fields (open by itself while the
        # workspace has no application, since then it is the only thing to do).
        self.new_toggle = widgets.ToggleButton(
            description="New application", icon="plus", layout=auto, tooltip="Create an application"
        )
        self.new_box = widgets.HBox(
            [self.new_id, self.new_label, self.create],
            layout=widgets.Layout(flex_flow="row wrap", align_items="center", width="100%"),
        )
        self.status = Status("nk-app-status")
        self.delete_ask = Confirm(self.status, "Confirm delete application", "nk-app-delete-ask")
        for widget, css in (
            (self.picker, "nk-app-picker"),
            (self.label, "nk-app-label"),
            (self.rename, "nk-app-rename"),
            (self.delete, "nk-app-delete"),
            (self.new_id, "nk-app-new-id"),
            (self.new_label, "nk-app-new-label"),
            (self.create, "nk-app-create"),
            (self.new_toggle, "nk-app-new"),
            (self.new_box, "nk-app-new-fields"),
        ):
            widget.add_class(css)
        self.picker.observe(self._on_picker_value, names="value")
        self.rename.on_click(self._on_rename_click)
        self.delete.on_click(self._on_delete_click)
        self.create.on_click(self._on_create_click)
        self.new_toggle.observe(self._on_new_toggle_value, names="value")
        row = widgets.Layout(flex_flow="row wrap", align_items="center", width="100%")
        self.delete_ask.layout.flex_flow = "row wrap"  # the bar sits in a narrow sidebar
        # An empty workspace leads with creating an application: this first, the rest hidden.
        self.welcome = widgets.HTML(
            "<b>Start here: create an application</b><br>"
            "<span>An application groups definitions under one URL prefix: give it an ID "
            "(letters, digits, - and _), then add its definitions.</span>"
        )
        self.welcome.add_class("nk-app-welcome")
        self.label_row = widgets.HBox([self.label, self.rename], layout=row)
        self.actions_row = widgets.HBox([self.new_toggle, self.delete], layout=row)
        super().__init__(
            [
                self.welcome,
                self.picker,
                self.label_row,
                self.actions_row,
                self.delete_ask,
                self.new_box,
                self.status,
            ]
        )
        self.add_class("nk-app-bar")
        apps = self.refresh()
        self._switched(apps[0] if apps else "")
        self.new_toggle.value = not apps
        self._show_new_fields()

    # -- the interface the studio uses ---------------------------------------------------

    def refresh(self) -> list[str]:
        """Re-read the applications (returns their IDs). If the current one is gone (deleted
        here or by another process), the bar asks to switch to the first remaining one."""
        apps = [a.id for a in self.workspace.applications()]
        gone = bool(self.app) and self.app not in apps
        self._set_picker(apps, None if gone else self.app or None)
        self._show_label()
        self._show_first_screen(not apps)
        if gone:
            self._switch_to(apps[0] if apps else "")
        return apps

    def show(self, app: str) -> None:
        """Show ``app`` as the current application without asking anyone (after a switch
        was cancelled, or when the studio itself moved to ``app``)."""
        apps = [a.id for a in self.workspace.applications()]
        self.app = app if app in apps else ""
        self._set_picker(apps, self.app or None)
        self._show_label()

    # -- helpers -------------------------------------------------------------------------

    def _set_picker(self, apps: list[str], value: str | None) -> None:
        self._quiet = True
        try:
            if list(self.picker.options) != apps:
                self.picker.options = apps
            self.picker.value = value
        finally:
            self._quiet = False

    def _show_label(self) -> None:
        if not self.app or self.picker.value != self.app:
            self.label.value = ""
            return
        try:
            self.label.value = self.workspace.application(self.app).label
        except NotebookKitError:  # gone meanwhile: the next refresh shows it
            self.label.value = ""

    def _show_first_screen(self, empty: bool) -> None:
        """With no application, only the welcome and the new application's fields show
        (the create row first); with one, the picker and its actions."""
        self.welcome.layout.display = None if empty else "none"
        for part in (self.picker, self.label_row, self.actions_row):
            part.layout.display = "none" if empty else None
        if empty and not self.new_toggle.value:
            self.new_toggle.value = True  # shows the fields

    def _show_new_fields(self) -> None:
        self.new_box.layout.display = None if self.new_toggle.value else "none"

    def _switched(self, app: str) -> None:
        """Make ``app`` the current one (the studio agreed)."""
        self.show(app)

    def _switch_to(self, app: str) -> None:
        """Ask the studio to move to ``app``; until it agrees the picker shows the request."""
        self.request_switch(app, lambda: self._switched(app))

    # -- callbacks -----------------------------------------------------------------------

    def _on_picker_value(self, change: Mapping[str, object]) -> None:
        if self._quiet:
            return
        app = str(change["new"] or "")
        if app != self.app:
            self.delete_ask.close_question()
            self.status.clear()
            self._switch_to(app)

    def _on_new_toggle_value(self, _change: Mapping[str, object]) -> None:
        self._show_new_fields()

    def _on_create_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.create):
            app = self.new_id.value.strip()
            record = self.workspace.create_application(app, self.new_label.value.strip())
            self.new_id.value = self.new_label.value = ""
            self.new_toggle.value = False  # done: fold the fields away again
            self.refresh()
            self._switch_to(record.id)  # first: the studio moves there, then it is said
            self.status.ok(f"Created application {record.id} ({record.label})")

    def _on_rename_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.rename):
            if not self.app:
                self.status.error("Choose an application first")
                return
            record = self.workspace.rename_application(self.app, self.label.value.strip())
            self.label.value = record.label
            self.status.ok(f"Renamed {record.id}: its label is now {record.label!r}")

    def _on_delete_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.delete):
            if not self.app:
                self.status.error("Choose an application first")
                return
            impact = self.workspace.deletion_impact(self.app)
            self.delete_ask.ask(impact.describe(), lambda: self._delete(impact.app))
            self.status.info("Confirm or cancel the deletion")

    def _delete(self, app: str) -> None:
        impact = self.workspace.deletion_impact(app)
        self.workspace.delete_application(app)
        undeployed = (
            f"; undeployed from {' and '.join(impact.live_stages)}" if impact.live_stages else ""
        )
        self.refresh()  # the current one is gone: asks to move to the first remaining one
        self.status.ok(f"Deleted application {app} ({impact.definitions} definitions{undeployed})")
