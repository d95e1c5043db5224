"""``SecretsPanel``: the studio's Secrets tab (docs/secrets.md).

The secrets of the application shown: name, stage, when set and version, never a value.
A form sets one (a password field, emptied as soon as the value is handed to the core,
so the value never stays in the widgets' state, in the kernel or in the page); picking a
row and Delete asks first, with Cancel. A change to a stage the application is live on
says, next to the form, that what is live keeps its values until the next deploy. Every
rule comes from the core (``Workspace.set_secret`` and the rest); this only draws and
asks.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Callable

import ipywidgets as widgets

from ...domain.models import Stage
from ...domain.secrets import SecretInfo, SecretNotLiveWarning
from ...errors import NotebookKitError
from ...workspace.workspace import Workspace
from .feedback import Confirm, Status

__all__ = ["SecretsPanel", "secrets_html"]

_CELL = "padding:2px 10px;text-align:left;border-bottom:1px solid #d0d7de"


def secrets_html(app: str, found: list[SecretInfo]) -> str:
    """The table of ``found`` (names, stages, times; there are no values to show)."""
    if not found:
        return f"<p>{html.escape(app)} has no secrets.</p>"
    head = "".join(f'<th style="{_CELL}">{h}</th>' for h in ("name", "stage", "set at", "version"))
    rows = "".join(
        f'<tr class="nk-secret-row" data-name="{html.escape(s.name)}" data-stage="{s.stage}">'
        + "".join(
            f'<td style="{_CELL}">{html.escape(str(v))}</td>'
            for v in (s.name, s.stage, s.set_at, s.version)
        )
        + "</tr>"
        for s in found
    )
    return f'<table class="nk-secrets-table"><tr>{head}</tr>{rows}</table>'


class SecretsPanel(widgets.VBox):
    """The Secrets tab (see the module docstring); ``app()`` names the application
    shown."""

    def __init__(self, workspace: Workspace, app: Callable[[], str]) -> None:
        self.workspace = workspace
        self._app = app
        self.table = widgets.HTML(value="")
        self.table.add_class("nk-secrets")
        self.name = widgets.Text(placeholder="NAME", description="Name")
        self.stage = widgets.Dropdown(options=[str(s) for s in Stage], description="Stage")
        self.value = widgets.Password(placeholder="value (never shown again)", description="Value")
        self.set = widgets.Button(description="Set secret", button_style="primary", icon="lock")
        self.picked = widgets.Dropdown(options=[], description="Secret")
        self.delete = widgets.Button(description="Delete…", icon="trash")
        self.status = Status("nk-secrets-status")
        self.warning = widgets.HTML(value="")
        self.warning.add_class("nk-secrets-warning")
        self.ask = Confirm(self.status, "Delete secret", "nk-secret-delete-ask")
        for widget, css in (
            (self.name, "nk-secret-name"),
            (self.stage, "nk-secret-stage"),
            (self.value, "nk-secret-value"),
            (self.set, "nk-secret-set"),
            (self.picked, "nk-secret-picked"),
            (self.delete, "nk-secret-delete"),
        ):
            widget.add_class(css)
        self.set.on_click(self._on_set_click)
        self.delete.on_click(self._on_delete_click)
        note = widgets.HTML(
            "<small>Actions of this application read them as <code>secrets.NAME</code>; "
            "a change is live at the next deploy. Test runs use the dev values.</small>"
        )
        super().__init__(
            [
                widgets.HTML("<b>Secrets</b>"),
                self.table,
                note,
                widgets.HBox([self.name, self.stage]),
                widgets.HBox([self.value, self.set]),
                widgets.HBox([self.picked, self.delete]),
                self.ask,
                self.status,
                self.warning,
            ]
        )
        self.add_class("nk-secrets-panel")

    def refresh(self) -> None:
        """Re-read the application's secrets (names only)."""
        app = self._app()
        try:
            found = self.workspace.secrets(app) if app else []
        except NotebookKitError as exc:
            self.table.value = ""
            self.status.error(exc)
            return
        self.table.value = secrets_html(app, found)
        self.picked.options = [(f"{s.name} ({s.stage})", (s.name, s.stage)) for s in found]

    def _changed(self, change: Callable[[], object]) -> None:
        """Run ``change``; show its not-live warning as a line under the form."""
        self.warning.value = ""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SecretNotLiveWarning)
            change()
        notes = [str(w.message) for w in caught if issubclass(w.category, SecretNotLiveWarning)]
        if notes:
            self.warning.value = f'<span style="color:#9a6700">⚠ {html.escape(notes[0])}</span>'

    def _on_set_click(self, _button: widgets.Button) -> None:
        value, self.value.value = self.value.value, ""  # the value leaves the widget now
        app, name, stage = self._app(), self.name.value.strip(), self.stage.value
        with self.status.working(self.set):
            self._changed(lambda: self.workspace.set_secret(app, name, value, stage=stage))
            self.status.ok(f"Secret {name} set on {stage}")
            self.name.value = ""
            self.refresh()

    def _on_delete_click(self, _button: widgets.Button) -> None:
        if not self.picked.value:
            self.status.error("Pick a secret to delete")
            return
        name, stage = self.picked.value
        app = self._app()

        def delete() -> None:
            self._changed(lambda: self.workspace.delete_secret(app, name, stage))
            self.status.ok(f"Secret {name} deleted on {stage}")
            self.refresh()

        self.ask.ask(f"Delete secret {name} of {app} on {stage}?", delete)
