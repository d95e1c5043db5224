"""``ClickableHtml``: HTML drawn from Python whose marked elements answer a click.

An anywidget showing ``value`` (HTML, like an ipywidgets ``HTML``). An element carrying
``data-nk-event="NAME"`` and ``data-nk-id="ID"`` sends ``{"event": NAME, "id": ID}`` when
clicked (or on Enter when focused); ``on_event(NAME, callback)`` hears it with the ID. The
Deploy tab's history uses it for each row's Rollback button, the Logs tab for its rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

__all__ = ["ClickableHtml"]

_ESM = """
function render({ model, el }) {
  const draw = () => { el.innerHTML = model.get("value"); };
  const fire = (event) => {
    const target = event.target.closest("[data-nk-event]");
    if (!target || !el.contains(target)) return;
    model.send({ event: target.dataset.nkEvent, id: target.dataset.nkId });
  };
  el.addEventListener("click", fire);
  el.addEventListener("keydown", (event) => { if (event.key === "Enter") fire(event); });
  model.on("change:value", draw);
  draw();
  return () => model.off("change:value", draw);
}
export default { render };
"""

_CSS = """
.nk-clickable [data-nk-event] { cursor: pointer; }
.nk-clickable tr[data-nk-event]:hover { background: var(--jp-layout-color2, #eee); }
.nk-clickable button[data-nk-event] { white-space: nowrap; }
"""


class ClickableHtml(anywidget.AnyWidget):
    """``value`` shown as HTML; ``on_event(name, callback)`` hears clicks on its marked
    elements (``callback(id)``, the element's ``data-nk-id`` as text)."""

    _esm = _ESM
    _css = _CSS
    value = traitlets.Unicode("").tag(sync=True)

    def __init__(self, value: str = "") -> None:
        super().__init__(value=value)
        self.add_class("nk-clickable")
        self._handlers: dict[str, list[Callable[[str], Any]]] = {}
        self.on_msg(self._handle_event)

    def on_event(self, name: str, callback: Callable[[str], Any]) -> None:
        self._handlers.setdefault(name, []).append(callback)

    def click(self, name: str, element_id: str) -> None:
        """What a click on the element marked ``name`` / ``element_id`` does."""
        for handler in self._handlers.get(name, []):
            handler(element_id)

    def _handle_event(self, _: Any, content: Any, buffers: list[bytes]) -> None:
        if isinstance(content, dict) and isinstance(content.get("event"), str):
            self.click(content["event"], str(content.get("id", "")))
