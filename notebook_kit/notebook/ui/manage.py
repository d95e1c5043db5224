"""``ManagePanel``: delete (confirmed), add a CORS preflight, copy to another application,
export as a browser download, import an uploaded export, commit to a git repository.

The studio puts it right under Save, so it is in view without scrolling past the form:
Delete on the first row, the occasional actions (copy, export, import, commit) folded
behind one toggle, each with its status line under its row when shown."""

from __future__ import annotations

import base64
import html
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import ipywidgets as widgets

from ...domain.models import Definition
from ...errors import ValidationError
from ...workspace.workspace import Workspace
from .feedback import Confirm, Status

__all__ = ["ManagePanel", "download_link"]


def download_link(filename: str, document: dict[str, object]) -> str:
    """An HTML link that makes the browser save ``document`` as ``filename`` (no server
    round trip: the file travels inside the link as base64)."""
    data = base64.b64encode((json.dumps(document, indent=2) + "\n").encode()).decode()
    name = html.escape(filename)
    return (
        f'<a class="nk-export-download" download="{name}" '
        f'href="data:application/json;base64,{data}">Download {name}</a>'
    )


def _labelled(name: str, *widgets_: widgets.Widget) -> widgets.HBox:
    """One action's row: its name in a fixed column, then its inputs and button."""
    label = widgets.HTML(f"<b>{html.escape(name)}</b>", layout=widgets.Layout(width="6em"))
    return widgets.HBox(
        [label, *widgets_], layout=widgets.Layout(flex_flow="row wrap", align_items="center")
    )


class ManagePanel(widgets.VBox):
    """Actions on the current definition and its application, each with its own status
    line beside its button."""

    def __init__(
        self,
        workspace: Workspace,
        on_changed: Callable[[str, str | None], None] | None = None,
    ) -> None:
        """``on_changed(app, api_id)`` is called after a change the studio must show."""
        self.workspace = workspace
        self.on_changed = on_changed
        self.app = ""
        self.definition: Definition | None = None
        auto = widgets.Layout(width="auto")
        self.delete = widgets.Button(description="Delete definition", icon="trash", layout=auto)
        self.delete_status = Status("nk-delete-status")
        self.delete_ask = Confirm(self.delete_status, "Confirm delete", "nk-delete-ask")
        self.preflight = widgets.Button(
            description="Add CORS preflight",
            icon="globe",
            layout=auto,
            tooltip="An OPTIONS definition (no key) so browsers on other origins may call "
            "this resource with x-api-key and a JSON body",
        )
        self.copy_to_app = widgets.Text(placeholder="to application ID", layout=auto)
        self.copy_new_id = widgets.Text(placeholder="new ID (blank: same)", layout=auto)
        self.copy_run = widgets.Button(description="Copy", icon="copy", layout=auto)
        self.copy_status = Status("nk-copy-status")
        self.export = widgets.Button(description="Export application", icon="download", layout=auto)
        self.export_link = widgets.HTML()
        self.export_status = Status("nk-export-status")
        self.upload = widgets.FileUpload(
            accept=".json", multiple=False, description="Choose an export file", layout=auto
        )
        self.import_replace = widgets.Checkbox(
            description="replace an existing application", indent=False, layout=auto
        )
        self.import_status = Status("nk-import-status")
        self.commit_repo = widgets.Text(
            value=str(workspace.home / "repository"), placeholder="repository folder", layout=auto
        )
        self.commit_message = widgets.Text(placeholder="commit message", layout=auto)
        self.commit_run = widgets.Button(description="Commit", icon="code-branch", layout=auto)
        self.commit_status = Status("nk-commit-status")
        for widget, css in (
            (self.delete, "nk-delete"),
            (self.preflight, "nk-preflight"),
            (self.copy_to_app, "nk-copy-to-app"),
            (self.copy_new_id, "nk-copy-new-id"),
            (self.copy_run, "nk-copy-run"),
            (self.export, "nk-export"),
            (self.export_link, "nk-export-link"),
            (self.upload, "nk-import-upload"),
            (self.import_replace, "nk-import-replace"),
            (self.commit_repo, "nk-commit-repo"),
            (self.commit_message, "nk-commit-message"),
            (self.commit_run, "nk-commit-run"),
        ):
            widget.add_class(css)
        self.delete.on_click(self._on_delete_click)
        self.preflight.on_click(self._on_preflight_click)
        self.copy_run.on_click(self._on_copy_run_click)
        self.export.on_click(self._on_export_click)
        self.upload.observe(self._on_upload_value, names="value")
        self.commit_run.on_click(self._on_commit_run_click)
        self.more = widgets.ToggleButton(
            description="Copy, export, import, commit",
            icon="ellipsis-h",
            layout=auto,
            tooltip="Show the actions on the definition and its application",
        )
        self.more.add_class("nk-manage-more")
        self.more.observe(self._on_more_value, names="value")
        self.commit_repo.layout = widgets.Layout(flex="1 1 16em", width="auto")
        wrap = {"flex_flow": "row wrap", "align_items": "center"}
        self.more_box = widgets.VBox(
            [
                _labelled("Copy to", self.copy_to_app, self.copy_new_id, self.copy_run),
                self.copy_status,
                _labelled("Export", self.export, self.export_link),
                self.export_status,
                _labelled("Import", self.upload, self.import_replace),
                self.import_status,
                _labelled("Commit to", self.commit_repo, self.commit_message, self.commit_run),
                self.commit_status,
            ],
            layout=widgets.Layout(display="none", border="1px solid #d0d7de", padding="4px 8px"),
        )
        self.more_box.add_class("nk-manage-more-box")
        super().__init__(
            [
                widgets.HBox(
                    [self.delete, self.preflight, self.more, self.delete_status], layout=wrap
                ),
                self.delete_ask,
                self.more_box,
            ]
        )
        self.add_class("nk-manage")

    @property
    def statuses(self) -> tuple[Status, ...]:
        return (
            self.delete_status,
            self.copy_status,
            self.export_status,
            self.import_status,
            self.commit_status,
        )

    def _on_more_value(self, change: dict[str, object]) -> None:
        self.more_box.layout.display = None if change["new"] else "none"

    def load(self, app: str, definition: Definition | None) -> None:
        self.app = app
        self.definition = definition
        self.delete_ask.close_question()
        self.delete.disabled = definition is None
        self.preflight.disabled = definition is None or definition.method == "OPTIONS"
        self.export_link.value = ""

    def _current(self) -> Definition:
        if self.definition is None:
            raise ValidationError("open a saved definition first")
        return self.definition

    def _changed(self, app: str, api_id: str | None) -> None:
        if self.on_changed is not None:
            self.on_changed(app, api_id)

    # -- delete ------------------------------------------------------------------------

    def _on_delete_click(self, _button: widgets.Button) -> None:
        with self.delete_status.working(self.delete):
            d = self._current()
            self.delete_status.clear()
            self.delete_ask.ask(
                f"Delete {d.app} / {d.id}? What is deployed stays until the next deploy.",
                lambda: self._delete(d),
                f"Confirm delete {d.id}",
            )

    def _delete(self, d: Definition) -> None:
        self.workspace.delete(d.app, d.id)
        self.definition = None
        self._changed(d.app, None)  # first: the studio moves on, then says what happened
        self.delete_status.ok(f"Deleted {d.app} / {d.id} (what is deployed stays until a redeploy)")

    # -- CORS preflight ----------------------------------------------------------------

    def _on_preflight_click(self, _button: widgets.Button) -> None:
        with self.delete_status.working(self.preflight):
            d = self._current()
            made = self.workspace.add_preflight(d.app, d.id)
            self._changed(made.app, d.id)
            self.delete_status.ok(
                f"Added {made.id} (OPTIONS {made.resource}, no key): deploy to make it live; "
                "this definition's answer must still set Access-Control-Allow-Origin"
            )

    # -- copy, export, import, commit --------------------------------------------------

    def _on_copy_run_click(self, _button: widgets.Button) -> None:
        with self.copy_status.working(self.copy_run):
            d = self._current()
            target = self.copy_to_app.value.strip()
            if not target:
                raise ValidationError("give the application to copy into", field="app")
            copied = self.workspace.copy(
                d.app, d.id, target, self.copy_new_id.value.strip() or None
            )
            self._changed(copied.app, copied.id)
            self.copy_status.ok(f"Copied {d.app} / {d.id} to {copied.app} / {copied.id}")

    def _on_export_click(self, _button: widgets.Button) -> None:
        with self.export_status.working(self.export):
            if not self.app:
                raise ValidationError("choose an application first", field="app")
            document = self.workspace.export(self.app)
            self.export_link.value = download_link(f"{self.app}.json", document)
            self.export_status.ok(
                f"Exported {self.app} ({len(document['definitions'])} definitions): "
                "click the link to download it"
            )

    def _on_upload_value(self, change: dict[str, object]) -> None:
        files = change["new"]
        if not files:
            return
        with self.import_status.working():
            upload = files[0]  # type: ignore[index]
            # The core reads and checks export *files*; hand it one, so no rule is repeated.
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / Path(str(upload["name"])).name
                path.write_bytes(bytes(upload["content"]))
                app = self.workspace.import_application(path, replace=self.import_replace.value)
            self._changed(app.id, None)
            self.import_status.ok(f"Imported {app.id} from {upload['name']}")
        self.upload.value = ()

    def _on_commit_run_click(self, _button: widgets.Button) -> None:
        with self.commit_status.working(self.commit_run):
            if not self.app:
                raise ValidationError("choose an application first", field="app")
            repository = self.commit_repo.value.strip()
            sha = self.workspace.commit(self.app, repository, self.commit_message.value)
            self.commit_status.ok(f"Committed {self.app} to {repository} as {sha[:10]}")
