"""``DefinitionForm``: create or edit one definition; the core's refusals shown by the field."""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as widgets

from ...domain.models import METHODS, Definition
from ...errors import ActionSyntaxError, ValidationError
from ...workspace.workspace import Workspace
from .constants import ConstantRows
from .feedback import Status
from .reference_panel import ReferencePanel

__all__ = ["FIELDS", "DefinitionForm"]

FIELDS = (
    "app",
    "id",
    "label",
    "method",
    "resource",
    "content_type",
    "timeout",
    "constants",
    "action",
    "functions",
)

_CODE_STYLE = (
    "<style>.nk-code textarea{font-family:var(--jp-code-font-family,monospace);"
    "font-size:var(--jp-code-font-size,13px);line-height:1.4;tab-size:4;}</style>"
)


def _labelled(text: str, widget: widgets.Widget, error: widgets.HTML) -> widgets.VBox:
    label = widgets.HTML(f"<b>{html.escape(text)}</b>")
    return widgets.VBox([widgets.HBox([label, widget]), error])


class DefinitionForm(widgets.VBox):
    """New / Edit form. ``app`` is the application a new definition goes into; ``editing``
    is ``None`` for a new definition, else the definition being edited."""

    def __init__(
        self,
        workspace: Workspace,
        status: Status,
        on_saved: Callable[[Definition], None] | None = None,
    ) -> None:
        self.workspace = workspace
        self.status = status
        self.on_saved = on_saved
        self.app = ""
        self.editing: Definition | None = None
        wide = widgets.Layout(width="32em")
        self.title = widgets.HTML("<h4>New definition</h4>")
        self.id = widgets.Text(placeholder="e.g. get-employee", layout=wide)
        self.label = widgets.Text(placeholder="what it does", layout=wide)
        self.method = widgets.Dropdown(options=METHODS, value="GET")
        self.resource = widgets.Text(placeholder="e.g. employee/{id}", layout=wide)
        self.content_type = widgets.Text(placeholder="e.g. application/json", layout=wide)
        self.requires_auth = widgets.Checkbox(value=True, description="requires authentication")
        # Blank: the action_timeout setting (seconds before the caller gets a 504).
        self.timeout = widgets.Text(
            placeholder="blank = default", layout=widgets.Layout(width="8em")
        )
        self.constants = ConstantRows()
        code = widgets.Layout(width="100%", height="14em")
        self.action = widgets.Textarea(
            placeholder="res.body = {'hello': req.pathParameters.get('name')}", layout=code
        )
        self.functions = widgets.Textarea(
            placeholder="def helper(x):\n    return x", layout=widgets.Layout(width="100%")
        )
        self.save = widgets.Button(description="Save", button_style="primary", icon="save")
        self.errors = {name: widgets.HTML("") for name in FIELDS}
        for name, error in self.errors.items():
            error.add_class("nk-error")
            error.add_class(f"nk-error-{name}")
        for widget, css in (
            (self.id, "nk-field-id"),
            (self.label, "nk-field-label"),
            (self.method, "nk-field-method"),
            (self.resource, "nk-field-resource"),
            (self.content_type, "nk-field-content-type"),
            (self.requires_auth, "nk-field-auth"),
            (self.timeout, "nk-field-timeout"),
            (self.action, "nk-action"),
            (self.functions, "nk-functions"),
            (self.save, "nk-save"),
        ):
            widget.add_class(css)
        for editor in (self.action, self.functions):
            editor.add_class("nk-code")
        self.save.on_click(self._on_save_click)
        super().__init__(
            [
                widgets.HTML(_CODE_STYLE),
                self.title,
                _labelled("API ID", self.id, self.errors["id"]),
                _labelled("Label", self.label, self.errors["label"]),
                _labelled("Method", self.method, self.errors["method"]),
                _labelled("Resource", self.resource, self.errors["resource"]),
                _labelled("Content type", self.content_type, self.errors["content_type"]),
                _labelled("Timeout (s)", self.timeout, self.errors["timeout"]),
                self.requires_auth,
                widgets.HTML("<b>Constants</b> (const.NAME in the action)"),
                self.constants,
                self.errors["constants"],
                widgets.HTML("<b>Action</b> (req, res, const, fn, db, http)"),
                self.action,
                self.errors["action"],
                ReferencePanel(),
                widgets.HTML("<b>User functions</b>"),
                self.functions,
                self.errors["functions"],
                self.save,
            ]
        )
        self.add_class("nk-form")

    # -- filling -----------------------------------------------------------------------

    def new(self) -> None:
        """Empty the form for a new definition in ``app``."""
        self.editing = None
        self.title.value = "<h4>New definition</h4>"
        self.id.value = self.label.value = self.resource.value = ""
        self.content_type.value = self.action.value = self.functions.value = ""
        self.timeout.value = ""
        self.method.value = "GET"
        self.requires_auth.value = True
        self.constants.set_constants(())
        self.clear_errors()

    def load(self, definition: Definition) -> None:
        """Show ``definition`` for editing."""
        self.editing = definition
        self.app = definition.app
        self.title.value = (
            f"<h4>Edit {html.escape(definition.app)} / {html.escape(definition.id)}</h4>"
        )
        self.id.value = definition.id
        self.label.value = definition.label
        self.method.value = definition.method
        self.resource.value = definition.resource
        self.content_type.value = definition.content_type or ""
        self.requires_auth.value = definition.requires_auth
        self.timeout.value = "" if definition.timeout is None else f"{definition.timeout:g}"
        self.constants.set_constants(definition.constants)
        self.action.value = definition.action
        self.functions.value = definition.functions
        self.clear_errors()

    # -- errors ------------------------------------------------------------------------

    def clear_errors(self) -> None:
        for error in self.errors.values():
            error.value = ""

    def show_error(self, exc: ValidationError) -> None:
        """Put the refusal next to its field (``id`` when the error names none)."""
        field = exc.field if exc.field in self.errors else "id"
        message = str(exc)
        if isinstance(exc, ActionSyntaxError) and exc.line is not None and "line" not in message:
            message = f"line {exc.line}: {message}"
        self.errors[field].value = f'<span style="color:#cf222e">{html.escape(message)}</span>'

    # -- saving ------------------------------------------------------------------------

    def _on_save_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.save):
            self.clear_errors()
            try:
                saved = self.submit()
            except ValidationError as exc:
                self.show_error(exc)
                raise
            self.status.ok(f"Saved {saved.app} / {saved.id}")
            if self.on_saved is not None:
                self.on_saved(saved)

    def submit(self) -> Definition:
        """Create or edit the definition from the fields; the core refuses or saves it whole."""
        if not self.app.strip() and self.editing is None:
            raise ValidationError(
                "choose an application, or type a new application ID", field="app"
            )
        fields = {
            "label": self.label.value,
            "method": self.method.value,
            "resource": self.resource.value,
            "action": self.action.value,
            "content_type": self.content_type.value.strip() or None,
            "requires_auth": self.requires_auth.value,
            "timeout": self.timeout.value.strip() or None,  # text: the core validates it
            "functions": self.functions.value,
            "constants": self.constants.constants(),
        }
        if self.editing is None:
            saved = self.workspace.create(self.app.strip(), self.id.value.strip(), **fields)
        else:
            saved = self.workspace.edit(
                self.editing.app, self.editing.id, new_id=self.id.value.strip(), **fields
            )
        self.load(saved)
        return saved
