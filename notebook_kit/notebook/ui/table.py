"""``DefinitionTable``: an application's definitions with their deployed state per stage."""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as widgets

from ...domain.models import Definition, Stage
from ...errors import NotFoundError
from ...workspace.workspace import Workspace

__all__ = ["DefinitionTable"]

_STATE_COLOURS = {"deployed": "#1a7f37", "changed": "#9a6700", "not deployed": "#6e7781"}


def _colour(state: str) -> str:
    """'live as OLD_ID' (live, but not under this ID) is coloured like 'changed'."""
    return _STATE_COLOURS.get(state, _STATE_COLOURS["changed"])


_CELL = "padding:2px 10px;text-align:left;border-bottom:1px solid #d0d7de"


class DefinitionTable(widgets.VBox):
    """The definitions of ``app`` whose label contains ``search``, as a table, plus a picker
    choosing the one to edit (its options follow the same filter)."""

    def __init__(
        self, workspace: Workspace, on_pick: Callable[[Definition | None], None] | None = None
    ) -> None:
        self.workspace = workspace
        self.on_pick = on_pick
        self.app = ""
        self.search = ""
        self.rows: list[Definition] = []
        self.table = widgets.HTML()
        self.table.add_class("nk-definitions")
        self.picker = widgets.Dropdown(
            options=[("(choose a definition to edit)", None)], value=None, description="Edit"
        )
        self.picker.add_class("nk-definition-picker")
        self.picker.observe(self._on_picker_value, names="value")
        super().__init__([self.table, self.picker])

    def refresh(self, app: str | None = None, search: str | None = None) -> None:
        """Read the definitions again (after a save, a deploy, a new search ...)."""
        if app is not None:
            self.app = app
        if search is not None:
            self.search = search
        try:
            self.rows = self.workspace.definitions(self.app, self.search) if self.app else []
        except NotFoundError:
            self.rows = []  # an application ID typed but not created yet
        self.table.value = self._render()
        chosen = self.picker.value
        options: list[tuple[str, str | None]] = [("(choose a definition to edit)", None)]
        options += [(f"{d.method} {d.resource} · {d.label} ({d.id})", d.id) for d in self.rows]
        callback, self.on_pick = self.on_pick, None  # refreshing is not picking
        try:
            self.picker.options = options
            self.picker.value = chosen if any(d.id == chosen for d in self.rows) else None
        finally:
            self.on_pick = callback

    def _render(self) -> str:
        if not self.app:
            return "<i>Choose an application, or type a new application ID.</i>"
        if not self.rows:
            empty = "no definition matches the search" if self.search else "no definitions yet"
            return f"<i>{html.escape(self.app)}: {empty}.</i>"
        head = "".join(
            f'<th style="{_CELL}">{h}</th>'
            for h in ("Method", "Resource", "Label", "API ID", "Auth", "dev", "prod")
        )
        body = []
        known = self.workspace.listing(self.app)  # states of every row, read once
        state_of = {row["id"]: [row[str(stage)] for stage in Stage] for row in known}
        for d in self.rows:
            states = state_of.get(d.id) or [self.workspace.deployed_state(d, s) for s in Stage]
            cells = [d.method, d.resource, d.label, d.id, "key" if d.requires_auth else "open"]
            tds = "".join(f'<td style="{_CELL}">{html.escape(c)}</td>' for c in cells)
            tds += "".join(
                f'<td class="nk-state-{stage}" style="{_CELL};color:{_colour(s)}">{s}</td>'
                for stage, s in zip(Stage, states, strict=True)
            )
            body.append(f'<tr data-api-id="{html.escape(d.id)}">{tds}</tr>')
        return (
            '<table style="border-collapse:collapse"><thead><tr>'
            + head
            + "</tr></thead><tbody>"
            + "".join(body)
            + "</tbody></table>"
        )

    def select(self, api_id: str | None) -> None:
        """Pick ``api_id`` (it must be shown) without calling back."""
        callback, self.on_pick = self.on_pick, None
        try:
            self.picker.value = api_id
        finally:
            self.on_pick = callback

    def _on_picker_value(self, change: dict[str, object]) -> None:
        if self.on_pick is None:
            return
        api_id = change["new"]
        picked = next((d for d in self.rows if d.id == api_id), None)
        self.on_pick(picked)
