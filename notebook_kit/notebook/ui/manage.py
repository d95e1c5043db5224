"""``ManagePanel``: delete (confirmed), copy to another application, export as a browser
download, import an uploaded export, commit to a git repository."""

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
from .feedback import Status

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


class ManagePanel(widgets.VBox):
    """Actions on the current definition and its application."""

    def __init__(
        self,
        workspace: Workspace,
        status: Status,
        on_changed: Callable[[str, str | None], None] | None = None,
    ) -> None:
        """``on_changed(app, api_id)`` is called after a change the studio must show."""
        self.workspace = workspace
        self.status = status
        self.on_changed = on_changed
        self.app = ""
        self.definition: Definition | None = None
        self.delete = widgets.Button(description="Delete", icon="trash")
        self.delete_confirm = widgets.Button(description="Confirm delete", button_style="danger")
        self.delete_confirm.layout.display = "none"
        self.copy_to_app = widgets.Text(description="To app", placeholder="application ID")
        self.copy_new_id = widgets.Text(description="New ID", placeholder="(same ID)")
        self.copy_run = widgets.Button(description="Copy", icon="copy")
        self.export = widgets.Button(description="Export application", icon="download")
        self.export_link = widgets.HTML()
        self.upload = widgets.FileUpload(accept=".json", multiple=False, description="Import")
        self.import_replace = widgets.Checkbox(description="replace an existing application")
        self.commit_repo = widgets.Text(
            description="Repository", value=str(workspace.home / "repository")
        )
        self.commit_message = widgets.Text(description="Message", placeholder="what changed")
        self.commit_run = widgets.Button(description="Commit", icon="code-branch")
        for widget, css in (
            (self.delete, "nk-delete"),
            (self.delete_confirm, "nk-delete-confirm"),
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
        self.delete_confirm.on_click(self._on_delete_confirm_click)
        self.copy_run.on_click(self._on_copy_run_click)
        self.export.on_click(self._on_export_click)
        self.upload.observe(self._on_upload_value, names="value")
        self.commit_run.on_click(self._on_commit_run_click)
        super().__init__(
            [
                widgets.HTML("<h4>Manage</h4>"),
                widgets.HBox([self.delete, self.delete_confirm]),
                widgets.HBox([self.copy_to_app, self.copy_new_id, self.copy_run]),
                widgets.HBox([self.export, self.export_link]),
                widgets.HBox([self.upload, self.import_replace]),
                widgets.HBox([self.commit_repo, self.commit_message, self.commit_run]),
            ]
        )
        self.add_class("nk-manage")

    def load(self, app: str, definition: Definition | None) -> None:
        self.app = app
        self.definition = definition
        self.delete_confirm.layout.display = "none"
        self.export_link.value = ""

    def _current(self) -> Definition:
        if self.definition is None:
            raise ValidationError("pick a definition first")
        return self.definition

    def _changed(self, app: str, api_id: str | None) -> None:
        if self.on_changed is not None:
            self.on_changed(app, api_id)

    # -- delete ------------------------------------------------------------------------

    def _on_delete_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.delete):
            d = self._current()
            self.delete_confirm.description = f"Confirm delete {d.id}"
            self.delete_confirm.layout.display = None
            self.status.ok(f"Delete {d.app} / {d.id}? Click 'Confirm delete' to do it")

    def _on_delete_confirm_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.delete, self.delete_confirm):
            d = self._current()
            self.workspace.delete(d.app, d.id)
            self.delete_confirm.layout.display = "none"
            self.definition = None
            self.status.ok(f"Deleted {d.app} / {d.id} (what is deployed stays until a redeploy)")
            self._changed(d.app, None)

    # -- copy, export, import, commit --------------------------------------------------

    def _on_copy_run_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.copy_run):
            d = self._current()
            target = self.copy_to_app.value.strip()
            if not target:
                raise ValidationError("give the application to copy into", field="app")
            copied = self.workspace.copy(
                d.app, d.id, target, self.copy_new_id.value.strip() or None
            )
            self.status.ok(f"Copied {d.app} / {d.id} to {copied.app} / {copied.id}")
            self._changed(copied.app, copied.id)

    def _on_export_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.export):
            if not self.app:
                raise ValidationError("choose an application first", field="app")
            document = self.workspace.export(self.app)
            self.export_link.value = download_link(f"{self.app}.json", document)
            self.status.ok(
                f"Exported {self.app} ({len(document['definitions'])} definitions): "
                "click the link to download it"
            )

    def _on_upload_value(self, change: dict[str, object]) -> None:
        files = change["new"]
        if not files:
            return
        with self.status.working():
            upload = files[0]  # type: ignore[index]
            # The core reads and checks export *files*; hand it one, so no rule is repeated.
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / Path(str(upload["name"])).name
                path.write_bytes(bytes(upload["content"]))
                app = self.workspace.import_application(path, replace=self.import_replace.value)
            self.status.ok(f"Imported {app.id} from {upload['name']}")
            self._changed(app.id, None)
        self.upload.value = ()

    def _on_commit_run_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.commit_run):
            if not self.app:
                raise ValidationError("choose an application first", field="app")
            sha = self.workspace.commit(
                self.app, self.commit_repo.value.strip(), self.commit_message.value
            )
            self.status.ok(
                f"Committed {self.app} to {self.commit_repo.value.strip()} as {sha[:10]}"
            )
