"""``DefinitionForm``: create or edit one definition; the core's refusals shown by the field.

The action and the user functions are ``CodeEditor``s: Ctrl/Cmd+S saves, Ctrl/Cmd+Enter
runs the edited version (``on_run``), a compile error marks its line. The form knows when
it differs from the saved definition (``dirty``, the ``nk-unsaved`` marker) and offers
``draft()``: the definition as edited, validated by the core, not saved.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from ...domain.models import METHODS, Definition
from ...errors import ActionSyntaxError, ValidationError
from ...workspace.workspace import Workspace
from .code_editor import CodeEditor
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

_GROW = {"width": "auto", "flex": "1 1 12em", "min_width": "8em"}


def _field(
    text: str, widget: widgets.Widget, error: widgets.HTML, grow: bool = True
) -> widgets.VBox:
    """A field with its label above and its error line below."""
    label = widgets.HTML(f"<b>{html.escape(text)}</b>")
    box = widgets.VBox([label, widget, error])
    if grow:
        box.layout = widgets.Layout(**_GROW)
    return box


def _row(*boxes: widgets.Widget) -> widgets.HBox:
    return widgets.HBox(list(boxes), layout=widgets.Layout(flex_flow="row wrap", width="100%"))


class DefinitionForm(widgets.VBox):
    """New / Edit form. ``app`` is the application a new definition goes into; ``editing``
    is ``None`` for a new definition, else the saved definition being edited."""

    def __init__(
        self,
        workspace: Workspace,
        on_saved: Callable[[Definition], None] | None = None,
        on_run: Callable[[], None] | None = None,
    ) -> None:
        self.workspace = workspace
        self.on_saved = on_saved
        self.on_run = on_run
        self.app = ""
        self.editing: Definition | None = None
        full = widgets.Layout(width="auto")  # fills its field box, margins included
        self.title = widgets.HTML("<h4>New definition</h4>")
        self.id = widgets.Text(placeholder="e.g. get-employee", layout=full)
        self.label = widgets.Text(placeholder="what it does", layout=full)
        self.method = widgets.Dropdown(
            options=METHODS, value="GET", layout=widgets.Layout(width="8em")
        )
        self.resource = widgets.Text(placeholder="e.g. employee/{id}", layout=full)
        self.content_type = widgets.Text(placeholder="e.g. application/json", layout=full)
        self.requires_auth = widgets.Checkbox(
            value=True,
            description="requires an API key",
            indent=False,
            layout=widgets.Layout(width="auto"),
        )
        # Blank: the action_timeout setting (seconds before the caller gets a 504).
        self.timeout = widgets.Text(placeholder="default", layout=widgets.Layout(width="7em"))
        self.constants = ConstantRows(on_change=self._update_marker)
        self.action = CodeEditor(
            placeholder="res.body = {'hello': req.pathParameters.get('name')}", height="16em"
        )
        self.functions = CodeEditor(placeholder="def helper(x):\n    return x", height="8em")
        self.save = widgets.Button(
            description="Save",
            button_style="primary",
            icon="save",
            layout=widgets.Layout(width="auto"),
        )
        self.save_status = Status("nk-save-status")
        self.unsaved = widgets.HTML("")
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
            (self.unsaved, "nk-unsaved"),
        ):
            widget.add_class(css)
        self.save.on_click(self._on_save_click)
        for editor in (self.action, self.functions):
            editor.on_save(self._on_editor_save)
            editor.on_run(self._on_editor_run)
            editor.observe(self._on_source_value, names="value")
        for widget in self._inputs():
            widget.observe(self._on_field_value, names="value")
        self._baseline = self._snapshot()
        self.save_row = widgets.HBox(
            [self.save, self.unsaved, self.save_status],
            layout=widgets.Layout(align_items="center", flex_flow="row wrap"),
        )
        super().__init__(
            [
                self.title,
                self.errors["app"],
                self.save_row,
                _row(
                    _field("API ID", self.id, self.errors["id"]),
                    _field("Label", self.label, self.errors["label"]),
                ),
                _row(
                    _field("Method", self.method, self.errors["method"], grow=False),
                    _field("Resource", self.resource, self.errors["resource"]),
                ),
                _row(
                    _field("Content type", self.content_type, self.errors["content_type"]),
                    _field("Timeout (s)", self.timeout, self.errors["timeout"], grow=False),
                    widgets.VBox([widgets.HTML("<b>Authentication</b>"), self.requires_auth]),
                ),
                widgets.HTML(
                    "<b>Action</b> (req, res, const, fn, db, http) · "
                    "Ctrl/Cmd+S saves · Ctrl/Cmd+Enter runs the edited version"
                ),
                self.action,
                self.errors["action"],
                widgets.HTML("<b>User functions</b>"),
                self.functions,
                self.errors["functions"],
                widgets.HTML("<b>Constants</b> (const.NAME in the action)"),
                self.constants,
                self.errors["constants"],
                ReferencePanel(),
            ],
            layout=widgets.Layout(width="100%"),
        )
        self.add_class("nk-form")

    def place_actions(self, actions: widgets.Widget) -> None:
        """Show ``actions`` (the other buttons on this definition) right under Save, in
        view with it above the long fields."""
        shown: tuple[widgets.Widget, ...] = getattr(self, "children")  # noqa: B009 (a trait)
        children = [c for c in shown if c is not actions]
        at = children.index(self.save_row) + 1
        self.children = (*children[:at], actions, *children[at:])

    def _inputs(self) -> tuple[widgets.Widget, ...]:
        return (
            self.id,
            self.label,
            self.method,
            self.resource,
            self.content_type,
            self.requires_auth,
            self.timeout,
        )

    # -- unsaved edits -----------------------------------------------------------------

    def _snapshot(self) -> tuple[Any, ...]:
        """What the fields hold now, as text (compared to tell unsaved edits)."""
        return (
            *(w.value for w in self._inputs()),
            self.action.value,
            self.functions.value,
            self.constants.texts(),
        )

    @property
    def dirty(self) -> bool:
        """True when the fields differ from the saved definition (or from empty, for new)."""
        return self._snapshot() != self._baseline

    def _update_marker(self) -> None:
        """Show the unsaved marker while the fields differ from the saved definition; an
        edit makes Save's last word ("Saved at ...", a refusal) out of date, so it goes."""
        dirty = self.dirty
        self.unsaved.value = '<span style="color:#9a6700">● unsaved changes</span>' if dirty else ""
        if dirty:
            self.save_status.clear()

    def _mark_clean(self) -> None:
        self._baseline = self._snapshot()
        self._update_marker()

    def _on_field_value(self, _change: dict[str, object]) -> None:
        self._update_marker()

    def _on_source_value(self, change: dict[str, object]) -> None:
        """Keep the marker, and the compile-error mark, in step with what is typed."""
        self._update_marker()
        self.check_sources()

    # -- filling -----------------------------------------------------------------------

    def new(self) -> None:
        """Empty the form for a new definition in ``app``."""
        self.editing = None
        self.title.value = (
            f"<h4>New definition in {html.escape(self.app)}</h4>"
            if self.app
            else "<h4>New definition</h4><i class='nk-form-no-app'>Create an application "
            "first (on the left): a definition belongs to one.</i>"
        )
        self.id.value = self.label.value = self.resource.value = ""
        self.content_type.value = self.action.value = self.functions.value = ""
        self.timeout.value = ""
        self.method.value = "GET"
        self.requires_auth.value = True
        self.constants.set_constants(())
        self.clear_errors()
        self.save_status.clear()
        self._mark_clean()

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
        self._mark_clean()

    # -- errors ------------------------------------------------------------------------

    def clear_errors(self) -> None:
        for error in self.errors.values():
            error.value = ""
        for editor in (self.action, self.functions):
            editor.error_line, editor.error_message = 0, ""

    def show_error(self, exc: ValidationError) -> None:
        """Put the refusal next to its field (``id`` when the error names none); a compile
        error also marks its line in the editor."""
        field = exc.field if exc.field in self.errors else "id"
        message = str(exc)
        if isinstance(exc, ActionSyntaxError):
            self._mark_line(exc)
            if exc.line is not None and "line" not in message:
                message = f"line {exc.line}: {message}"
        self.errors[field].value = f'<span style="color:#cf222e">{html.escape(message)}</span>'

    def _mark_line(self, exc: ActionSyntaxError) -> None:
        editor = self.functions if exc.field == "functions" else self.action
        editor.error_message = str(exc)
        editor.error_line = exc.line or 0

    def check_sources(self) -> bool:
        """Compile the action and functions (the core's check); mark an error's line and
        write its message under the editor (not only in the marker's tooltip)."""
        for editor in (self.action, self.functions):
            editor.error_line, editor.error_message = 0, ""
        for field in ("action", "functions"):
            self.errors[field].value = ""
        try:
            self.workspace.check_sources(self.action.value, self.functions.value)
        except ActionSyntaxError as exc:
            self.show_error(exc)
            return False
        return True

    # -- the edited definition ---------------------------------------------------------

    def _fields(self) -> dict[str, Any]:
        return {
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

    def _target_app(self) -> str:
        app = self.editing.app if self.editing is not None else self.app.strip()
        if not app:
            raise ValidationError("choose or create an application first", field="app")
        return app

    def draft(self) -> Definition:
        """The definition as edited (unsaved), checked by the core; ``ValidationError``
        (shown next to its field) when the form is invalid."""
        self.clear_errors()
        try:
            return self.workspace.draft(self._target_app(), self.id.value.strip(), **self._fields())
        except ValidationError as exc:
            self.show_error(exc)
            raise

    # -- saving ------------------------------------------------------------------------

    def _on_editor_save(self, _editor: CodeEditor) -> None:
        self._on_save_click(self.save)

    def _on_editor_run(self, _editor: CodeEditor) -> None:
        if self.on_run is not None:
            self.on_run()

    def _on_save_click(self, _button: widgets.Button) -> None:
        with self.save_status.working(self.save):
            self.clear_errors()
            try:
                saved = self.submit()
            except ValidationError as exc:
                self.show_error(exc)
                raise
            if self.on_saved is not None:  # first: the studio shows the saved one
                self.on_saved(saved)
            self.save_status.ok(f"Saved {saved.app} / {saved.id} at {saved.updated_at[11:19]} UTC")

    def submit(self) -> Definition:
        """Create or edit the definition from the fields; the core refuses or saves it whole."""
        app, fields = self._target_app(), self._fields()
        if self.editing is None:
            saved = self.workspace.create(app, self.id.value.strip(), **fields)
        else:
            saved = self.workspace.edit(
                app, self.editing.id, new_id=self.id.value.strip(), **fields
            )
        self.load(saved)
        return saved
