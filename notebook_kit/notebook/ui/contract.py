"""``ContractPanel``: the studio's Contract tab (docs/contracts.md).

What the open definition declares it accepts and answers: a summary (parameters, body,
responses) above the contract as JSON in an editor. **Infer draft** fills the editor with
a draft from the definition's examples and recorded calls (and what it answers them now),
not saved; **Save contract** saves what the editor holds; **Clear…** asks, with Cancel,
then removes the contract. Every rule comes from the core (``Workspace.edit``,
``Workspace.infer_contract``); a refusal shows next to the buttons and changes nothing.
"""

from __future__ import annotations

import html
import json
from typing import Any

import ipywidgets as widgets

from ...domain.contracts import Contract
from ...domain.models import Definition
from ...errors import ValidationError
from ...workspace.workspace import Workspace
from .code_editor import CodeEditor
from .feedback import Confirm, Status

__all__ = ["ContractPanel", "contract_html"]

_CELL = "padding:2px 10px;text-align:left;border-bottom:1px solid #d0d7de"


def _kind(schema: dict[str, Any] | None) -> str:
    if schema is None:
        return "any"
    kind = schema.get("type", "any")
    text = " | ".join(kind) if isinstance(kind, list) else str(kind)
    properties = schema.get("properties")
    if isinstance(properties, dict) and properties:
        text += " {" + ", ".join(properties) + "}"
    return text


def contract_html(contract: Contract) -> str:
    """What ``contract`` declares, as a person reads it."""
    if contract.is_empty:
        return (
            "<p>Nothing declared: every request reaches the action as it comes. "
            "Infer a draft from the examples and recorded calls, or write one below.</p>"
        )
    parts = []
    if contract.parameters:
        head = "".join(f'<th style="{_CELL}">{h}</th>' for h in ("in", "name", "type", "required"))
        rows = "".join(
            '<tr class="nk-contract-parameter">'
            + "".join(
                f'<td style="{_CELL}">{html.escape(str(v))}</td>'
                for v in (p.location, p.name, _kind(dict(p.schema)), "yes" if p.required else "")
            )
            + "</tr>"
            for p in contract.parameters
        )
        parts.append(f'<table class="nk-contract-parameters"><tr>{head}</tr>{rows}</table>')
    if contract.body is not None:
        body = contract.body
        required = "required" if body.required else "optional"
        schema = None if body.schema is None else dict(body.schema)
        parts.append(
            f'<p class="nk-contract-body">Body: {html.escape(body.media_type)}, {required}, '
            f"{html.escape(_kind(schema))}</p>"
        )
    for spec in contract.responses:
        schema = None if spec.schema is None else dict(spec.schema)
        media = html.escape(spec.media_type or "no body declared")
        parts.append(
            f'<p class="nk-contract-response">Response {spec.status}: {media}, '
            f"{html.escape(_kind(schema))}</p>"
        )
    return "".join(parts)


class ContractPanel(widgets.VBox):
    """The Contract tab (see the module docstring)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.definition: Definition | None = None
        self.summary = widgets.HTML(value="")
        self.summary.add_class("nk-contract-summary")
        self.editor = CodeEditor(language="text", height="18em", placeholder="{}")
        self.editor.add_class("nk-contract-editor")
        self.editor.on_save(lambda _editor: self.save.click())
        self.infer = widgets.Button(description="Infer draft", icon="magic")
        self.save = widgets.Button(description="Save contract", button_style="primary", icon="save")
        self.revert = widgets.Button(description="Revert", icon="undo")
        self.clear = widgets.Button(description="Clear…", icon="trash")
        for widget, css in (
            (self.infer, "nk-contract-infer"),
            (self.save, "nk-contract-save"),
            (self.revert, "nk-contract-revert"),
            (self.clear, "nk-contract-clear"),
        ):
            widget.add_class(css)
        self.status = Status("nk-contract-status")
        self.ask = Confirm(self.status, "Clear contract", "nk-contract-clear-ask")
        self.infer.on_click(self._on_infer_click)
        self.save.on_click(self._on_save_click)
        self.revert.on_click(self._on_revert_click)
        self.clear.on_click(self._on_clear_click)
        note = widgets.HTML(
            "<small>JSON: <code>parameters</code> (query, header, path), <code>body</code> "
            "(media type, JSON Schema), <code>responses</code> per status. A request that "
            "breaks it gets a 422 listing every violation; live stages change at the next "
            "deploy.</small>"
        )
        super().__init__(
            [
                widgets.HTML("<b>Contract</b>"),
                self.summary,
                note,
                self.editor,
                widgets.HBox([self.infer, self.save, self.revert, self.clear]),
                self.ask,
                self.status,
            ]
        )
        self.add_class("nk-contract-panel")
        self.load(None)

    def load(self, definition: Definition | None) -> None:
        """Show ``definition``'s saved contract (None: a definition not saved yet)."""
        self.definition = definition
        saved = definition is not None
        for button in (self.infer, self.save, self.revert, self.clear):
            button.disabled = not saved
        self.editor.read_only = not saved
        if definition is None:
            self.summary.value = "<p>Save the definition first: a contract belongs to it.</p>"
            self.editor.value = ""
            return
        self._show(definition.contract)

    def _show(self, contract: Contract) -> None:
        self.summary.value = contract_html(contract)
        self.editor.value = json.dumps(contract.to_dict(), indent=2) + "\n"

    def _edited(self) -> Contract:
        """The contract the editor holds (refused: not JSON, or not a valid contract)."""
        text = self.editor.value.strip() or "{}"
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValidationError(f"the contract is not JSON: {exc}") from None
        return Contract.from_dict(data)

    def _on_infer_click(self, _button: widgets.Button) -> None:
        definition = self.definition
        if definition is None:
            return
        with self.status.working(self.infer, self.save):
            draft = self.workspace.infer_contract(definition.app, definition.id)
            self.editor.value = json.dumps(draft.to_dict(), indent=2) + "\n"
            self.status.info("A draft from the examples and recorded calls: not saved yet")

    def _on_save_click(self, _button: widgets.Button) -> None:
        definition = self.definition
        if definition is None:
            return
        with self.status.working(self.save):
            contract = self._edited()
            saved = self.workspace.edit(definition.app, definition.id, contract=contract)
            self.definition = saved
            self._show(saved.contract)
            self.status.ok("Contract saved; live stages change at the next deploy")

    def _on_revert_click(self, _button: widgets.Button) -> None:
        definition = self.definition
        if definition is None:
            return
        with self.status.working(self.revert):
            self.definition = self.workspace.get(definition.app, definition.id)
            self._show(self.definition.contract)
            self.status.info("The saved contract")

    def _on_clear_click(self, _button: widgets.Button) -> None:
        definition = self.definition
        if definition is None:
            return

        def clear() -> None:
            saved = self.workspace.edit(definition.app, definition.id, contract={})
            self.definition = saved
            self._show(saved.contract)
            self.status.ok("Contract cleared; live stages change at the next deploy")

        self.ask.ask(f"Clear the contract of {definition.app}/{definition.id}?", clear)
