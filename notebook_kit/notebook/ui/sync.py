"""``FrontEndSync``: Save, Run and the other buttons act on what the user sees.

The browser sends a field's new text as a state update of that field's widget; while an
earlier update of the same widget is still being handled, ipywidgets holds the newer one
back until the kernel is idle again. A button's click is a message of another widget and
goes at once, so a key typed just before a click could reach the kernel after the click
(the field showed ``items/{sku}``, Save stored ``items/{sku``).

``guard(widget)`` defers what the browser asks of ``widget`` (a click, an editor's
Ctrl/Cmd+S) by one round trip: the kernel sends a ping to this widget's front end, which
answers once every update held back before the click has been sent (the kernel's idle
reply that releases them arrives before the ping), so the action runs after them. A click
made from Python (``button.click()``) runs at once, as before.

The same front end makes Ctrl/Cmd+S and Enter in the form's one-line fields save (what
Ctrl/Cmd+S does in the code editor): it sends ``{"event": "save"}``, handled after the
same round trip.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anywidget
import ipywidgets as widgets
import traitlets

from .code_editor import CodeEditor
from .definition_list import DefinitionList

__all__ = ["SAVE_FIELDS", "FrontEndSync"]

#: The form's one-line fields where Enter and Ctrl/Cmd+S save.
SAVE_FIELDS = ", ".join(
    f".nk-form .nk-field-{name} input"
    for name in ("id", "label", "resource", "content-type", "timeout")
)

_ESM = """
function initialize({ model }) {
  // Answered once per front end (a model, not a view): every update queued before the
  // ping has been sent by then.
  const onMessage = (message) => {
    if (message && message.ping !== undefined) model.send({ pong: message.ping });
  };
  model.on("msg:custom", onMessage);
  return () => model.off("msg:custom", onMessage);
}

function render({ model, el }) {
  const onKey = (event) => {
    const target = event.target;
    if (!(target instanceof HTMLInputElement)) return;
    const studio = el.closest(".nk-studio");
    if (!studio || !studio.contains(target) || !target.matches(model.get("save_fields"))) {
      return;
    }
    const plain = !event.shiftKey && !event.altKey && !event.ctrlKey && !event.metaKey;
    const save = event.key.toLowerCase() === "s" && (event.ctrlKey || event.metaKey);
    if (!save && !(event.key === "Enter" && plain)) return;
    event.preventDefault(); // no browser "save page", no notebook save
    event.stopPropagation();
    model.send({ event: "save" });
  };
  window.addEventListener("keydown", onKey, true); // before JupyterLab's shortcuts
  return () => window.removeEventListener("keydown", onKey, true);
}
export default { initialize, render };
"""


class FrontEndSync(anywidget.AnyWidget):
    """Runs browser-made actions after the field updates sent before them.

    ``save_fields``: a CSS selector of the inputs where Ctrl/Cmd+S and Enter call
    ``on_save()``. Place the widget inside the studio (it shows nothing)."""

    _esm = _ESM
    save_fields = traitlets.Unicode("").tag(sync=True)

    def __init__(self, on_save: Callable[[], None], save_fields: str) -> None:
        super().__init__(save_fields=save_fields)
        self.add_class("nk-sync")
        self.layout.display = "none"
        self.on_save = on_save
        self._waiting: dict[int, Callable[[], None]] = {}
        self._pings = 0
        self.on_msg(self._handle_event)

    def after_sync(self, action: Callable[[], None]) -> None:
        """Run ``action`` once the front end has sent every update it queued before now."""
        self._pings += 1
        self._waiting[self._pings] = action
        self.send({"ping": self._pings})

    def guard(self, *guarded: widgets.Widget) -> None:
        """Defer the front end's messages to each widget (a click, an editor's save or
        run) until the updates sent before them have arrived."""
        for widget in guarded:
            # ipywidgets hands every custom message from the front end to this method.
            handle = widget._handle_custom_msg

            def deferred(content: Any, buffers: Any, handle: Any = handle) -> None:
                self.after_sync(lambda: handle(content, buffers))

            widget._handle_custom_msg = deferred

    def guard_all(self, root: widgets.Widget) -> None:
        """``guard`` every widget under ``root`` whose front-end messages start an action:
        the buttons, the code editors (save, run) and the definition list (pick)."""
        stack = [root]
        while stack:
            widget = stack.pop()
            if isinstance(widget, widgets.Button | CodeEditor | DefinitionList):
                self.guard(widget)
            stack.extend(getattr(widget, "children", ()))

    def _handle_event(self, _widget: Any, content: Any, buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if "pong" in content:
            action = self._waiting.pop(content["pong"], None)
            if action is not None:
                action()
        elif content.get("event") == "save":
            self.after_sync(self.on_save)
