"""The form's constants editor: name / type / value rows you can add and remove."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import ipywidgets as widgets

from ...domain.models import CONSTANT_TYPES, Constant

__all__ = ["ConstantRows"]


def _value_text(constant: Constant) -> str:
    """The text a person would type for the constant's value (what ``Constant.parse`` reads)."""
    if constant.type == "Boolean":
        return "true" if constant.value else "false"
    if constant.type == "JSON":
        return json.dumps(constant.value)
    return str(constant.value)


class _ConstantRow(widgets.HBox):
    def __init__(self, rows: ConstantRows, constant: Constant | None = None) -> None:
        self.rows = rows
        self.name = widgets.Text(placeholder="NAME", layout=widgets.Layout(width="12em"))
        self.type = widgets.Dropdown(options=CONSTANT_TYPES, layout=widgets.Layout(width="8em"))
        self.value = widgets.Text(placeholder="value", layout=widgets.Layout(width="24em"))
        self.remove = widgets.Button(description="Remove", layout=widgets.Layout(width="6em"))
        for widget, css in (
            (self.name, "nk-constant-name"),
            (self.type, "nk-constant-type"),
            (self.value, "nk-constant-value"),
            (self.remove, "nk-constant-remove"),
        ):
            widget.add_class(css)
        if constant is not None:
            self.name.value = constant.name
            self.type.value = constant.type
            self.value.value = _value_text(constant)
        self.remove.on_click(self._on_remove_click)
        for widget in (self.name, self.type, self.value):
            widget.observe(self._on_value, names="value")
        super().__init__([self.name, self.type, self.value, self.remove])
        self.add_class("nk-constant-row")

    def _on_remove_click(self, _button: widgets.Button) -> None:
        self.rows.remove_row(self)

    def _on_value(self, _change: dict[str, object]) -> None:
        self.rows.changed()

    def texts(self) -> tuple[str, str, str]:
        return (self.name.value, self.type.value, self.value.value)

    def constant(self) -> Constant:
        return Constant.parse(self.name.value.strip(), self.type.value, self.value.value)


class ConstantRows(widgets.VBox):
    """Rows of constants; ``constants()`` parses them (raising the core's errors).
    ``on_change()`` is called after any row is added, removed or edited."""

    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self.on_change = on_change
        self.rows = widgets.VBox()
        self.rows.add_class("nk-constants")
        self.add = widgets.Button(description="Add constant", icon="plus")
        self.add.add_class("nk-constant-add")
        self.add.on_click(self._on_add_click)
        super().__init__([self.rows, self.add])

    def _on_add_click(self, _button: widgets.Button) -> None:
        self.add_row()

    def changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def add_row(self, constant: Constant | None = None) -> None:
        self.rows.children = (*self.rows.children, _ConstantRow(self, constant))
        self.changed()

    def remove_row(self, row: _ConstantRow) -> None:
        self.rows.children = tuple(r for r in self.rows.children if r is not row)
        self.changed()

    def set_constants(self, constants: Sequence[Constant]) -> None:
        self.rows.children = tuple(_ConstantRow(self, c) for c in constants)
        self.changed()

    def texts(self) -> tuple[tuple[str, str, str], ...]:
        """The rows as typed (what tells an unsaved edit), blank rows left out."""
        return tuple(
            row.texts()
            for row in self.rows.children
            if isinstance(row, _ConstantRow) and (row.name.value.strip() or row.value.value)
        )

    def constants(self) -> list[Constant]:
        """The rows as constants; rows with neither a name nor a value are skipped."""
        return [
            row.constant()
            for row in self.rows.children
            if isinstance(row, _ConstantRow) and (row.name.value.strip() or row.value.value)
        ]
