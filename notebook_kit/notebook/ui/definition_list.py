"""``DefinitionList``: the sidebar's clickable list of an application's definitions.

An anywidget with a few lines of inline JavaScript (no CDN, no bundle): one row per
definition (method, resource, label, state per stage), the open one highlighted. A click
does not select by itself: it sends ``{"event": "pick", "id": ...}`` and the studio decides
(it may first ask whether to discard unsaved edits), then sets ``selected``. Picking the
row already open sends the event too, so it reloads that definition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anywidget
import traitlets

from ...domain.models import Definition, Stage

__all__ = ["DefinitionList", "list_rows"]

_ESM = """
function render({ model, el }) {
  const draw = () => {
    el.replaceChildren();
    const rows = model.get("rows");
    if (!rows.length) {
      const empty = document.createElement("div");
      empty.className = "nk-definitions-empty";
      empty.textContent = model.get("empty_text");
      el.appendChild(empty);
      return;
    }
    for (const row of rows) {
      const item = document.createElement("div");
      item.className = "nk-definition-row";
      if (row.id === model.get("selected")) item.classList.add("nk-selected");
      item.dataset.apiId = row.id;
      item.tabIndex = 0;
      item.title = row.id;
      const head = document.createElement("div");
      head.className = "nk-definition-head";
      const method = document.createElement("span");
      method.className = "nk-method nk-method-" + row.method.toLowerCase();
      method.textContent = row.method;
      const resource = document.createElement("span");
      resource.className = "nk-definition-resource";
      resource.textContent = "/" + row.resource;
      head.append(method, resource);
      const label = document.createElement("div");
      label.className = "nk-definition-label";
      label.textContent = row.label;
      const states = document.createElement("div");
      states.className = "nk-definition-states";
      for (const [stage, state] of row.states) {
        const badge = document.createElement("span");
        badge.className = "nk-state nk-state-" + stage + " nk-state-" + state.split(" ")[0];
        badge.textContent = stage + ": " + state;
        states.appendChild(badge);
      }
      item.append(head, label, states);
      const pick = () => model.send({ event: "pick", id: row.id });
      item.addEventListener("click", pick);
      item.addEventListener("keydown", (e) => { if (e.key === "Enter") pick(); });
      el.appendChild(item);
    }
  };
  model.on("change:rows", draw);
  model.on("change:selected", draw);
  model.on("change:empty_text", draw);
  draw();
  return () => {
    model.off("change:rows", draw);
    model.off("change:selected", draw);
    model.off("change:empty_text", draw);
  };
}
export default { render };
"""

_CSS = """
.nk-definitions { display: flex; flex-direction: column; gap: 2px; min-width: 0; }
.nk-definitions .nk-definition-row { padding: 4px 6px; cursor: pointer;
  border: 1px solid var(--jp-border-color2, #e0e0e0); border-radius: 3px;
  background: var(--jp-layout-color0, #fff); }
.nk-definitions .nk-definition-row:hover { background: var(--jp-layout-color2, #eee); }
.nk-definitions .nk-definition-row.nk-selected {
  border-color: var(--jp-brand-color1, #1976d2); background: var(--jp-brand-color4, #e3f2fd); }
.nk-definitions .nk-definition-head {
  display: flex; gap: 6px; align-items: baseline; flex-wrap: wrap; }
.nk-definitions .nk-method { font-size: 11px; font-weight: bold; padding: 0 4px;
  border-radius: 2px; color: #fff; background: #6e7781; }
.nk-definitions .nk-method-get { background: #0969da; }
.nk-definitions .nk-method-post { background: #1a7f37; }
.nk-definitions .nk-method-put { background: #9a6700; }
.nk-definitions .nk-method-delete { background: #cf222e; }
.nk-definitions .nk-definition-resource {
  font-family: var(--jp-code-font-family, monospace); overflow-wrap: anywhere; }
.nk-definitions .nk-definition-label {
  color: var(--jp-ui-font-color1, #333); overflow-wrap: anywhere; }
.nk-definitions .nk-definition-states {
  display: flex; gap: 6px; font-size: 11px; flex-wrap: wrap; }
.nk-definitions .nk-state-deployed { color: #1a7f37; }
.nk-definitions .nk-state-changed, .nk-definitions .nk-state-live { color: #9a6700; }
.nk-definitions .nk-state-not { color: #6e7781; }
.nk-definitions .nk-definitions-empty { font-style: italic; color: #6e7781; }
"""


def list_rows(definitions: Sequence[Definition], states: dict[str, list[str]]) -> list[dict]:
    """The rows the list draws: ``states`` maps an API ID to its state per stage."""
    return [
        {
            "id": d.id,
            "method": d.method,
            "resource": d.resource,
            "label": d.label,
            "states": [
                [str(stage), state]
                for stage, state in zip(Stage, states.get(d.id, []), strict=False)
            ],
        }
        for d in definitions
    ]


class DefinitionList(anywidget.AnyWidget):
    """Rows to click; ``on_pick(callback)`` is called with the clicked API ID."""

    _esm = _ESM
    _css = _CSS
    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    empty_text = traitlets.Unicode("no definitions yet").tag(sync=True)

    def __init__(self) -> None:
        super().__init__()
        self.add_class("nk-definitions")
        self._pick_handlers: list[Callable[[str], Any]] = []
        self.on_msg(self._handle_event)

    @property
    def ids(self) -> list[str]:
        return [row["id"] for row in self.rows]

    def on_pick(self, callback: Callable[[str], Any]) -> None:
        self._pick_handlers.append(callback)

    def pick(self, api_id: str) -> None:
        """What a click on the row of ``api_id`` does (tests call it from Python)."""
        for handler in self._pick_handlers:
            handler(api_id)

    def _handle_event(self, _: Any, content: Any, buffers: list[bytes]) -> None:
        if isinstance(content, dict) and content.get("event") == "pick":
            api_id = content.get("id")
            if isinstance(api_id, str) and api_id in self.ids:
                self.pick(api_id)
