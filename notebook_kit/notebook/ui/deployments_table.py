"""``DeploymentsTable``: the Deploy tab's history of each stage, one Rollback button per row.

An anywidget showing ``value`` (the HTML of ``diff_view.deployments_html``: a table per
stage, newest first, the live row marked, a ``button.nk-row-rollback`` on every other
row). A click on a row's button sends ``{"event": "rollback", "id": N}``; the Deploy tab
asks before it serves that deployment again (``on_rollback``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

__all__ = ["DeploymentsTable"]

_ESM = """
function render({ model, el }) {
  const draw = () => { el.innerHTML = model.get("value"); };
  el.addEventListener("click", (event) => {
    const button = event.target.closest("button.nk-row-rollback");
    if (button) model.send({ event: "rollback", id: Number(button.dataset.deploymentId) });
  });
  model.on("change:value", draw);
  draw();
  return () => model.off("change:value", draw);
}
export default { render };
"""

_CSS = """
.nk-deployments table { border-collapse: collapse; max-width: 100%; }
.nk-deployments td, .nk-deployments th { padding: 2px 8px; text-align: left;
  border-bottom: 1px solid #d0d7de; vertical-align: top; }
.nk-deployments .nk-deployment-description { overflow-wrap: anywhere; }
.nk-deployments button.nk-row-rollback { white-space: nowrap; }
"""


class DeploymentsTable(anywidget.AnyWidget):
    """The deployments as HTML; ``on_rollback(callback)`` hears a row's Rollback click."""

    _esm = _ESM
    _css = _CSS
    value = traitlets.Unicode("").tag(sync=True)

    def __init__(self) -> None:
        super().__init__()
        self.add_class("nk-deployments")
        self._handlers: list[Callable[[int], Any]] = []
        self.on_msg(self._handle_event)

    def on_rollback(self, callback: Callable[[int], Any]) -> None:
        self._handlers.append(callback)

    def pick_rollback(self, deployment_id: int) -> None:
        """What a click on the Rollback button of row ``deployment_id`` does."""
        for handler in self._handlers:
            handler(deployment_id)

    def _handle_event(self, _: Any, content: Any, buffers: list[bytes]) -> None:
        if isinstance(content, dict) and content.get("event") == "rollback":
            deployment_id = content.get("id")
            if isinstance(deployment_id, int):
                self.pick_rollback(deployment_id)
