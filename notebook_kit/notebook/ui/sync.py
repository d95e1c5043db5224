"""``FrontEndSync``: Save, Run and the other buttons act on what the user sees.

The browser sends a field's new text as a state update of that field's widget; while an
earlier update of the same widget is still being handled, ipywidgets holds the newer one
back until the kernel is idle again. A button's click is a message of another widget and
goes at once, so a key typed just before a click could reach the kernel after the click
(the field showed ``items/{sku}``, Save stored ``items/{sku``).

``guard(widget)`` defers what the browser asks of ``widget`` (a click, an editor's
Ctrl/Cmd+S, a pick in the list) by one round trip. The front end notes, at each click and
action key in the studio, the text of every field typed into since (read from the page).
The kernel asks for it (``ping``), the front end answers (``pong``), the kernel puts a
value it had not received yet into its widget, and only then runs the action: so it acts
on what the page showed when the click came, whatever order ipywidgets' updates arrive in
(they can come after the click). A click made from Python (``button.click()``) runs at
once.

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
// The text an edited element's field shows now: an input's or area's value, or the whole
// text of the code editor it is part of.
function textOf(element) {
  const editor = element.closest(".cm-editor");
  if (editor) return editor.cmView ? editor.cmView.state.doc.toString() : null;
  return "value" in element ? element.value : null;
}

function render({ model, el }) {
  const edited = new Set(); // elements typed into since the last click or action key
  const taken = new Map(); // element -> its text when a click or action key came
  const inStudio = (target) => {
    const studio = el.closest(".nk-studio");
    return studio && target instanceof Node && studio.contains(target) ? studio : null;
  };
  const take = () => {
    for (const element of edited) taken.set(element, textOf(element));
    edited.clear();
  };
  const onInput = (event) => { if (inStudio(event.target)) edited.add(event.target); };
  const onClick = (event) => { if (inStudio(event.target)) take(); };
  const onMessage = (message) => {
    if (!message || message.ping === undefined) return;
    const studio = el.closest(".nk-studio");
    const values = (message.fields || []).map(([selector]) => {
      const node = studio && studio.querySelector(selector);
      let value = null; // not typed into before the click: the kernel's value stands
      for (const [element, text] of taken) if (node && node.contains(element)) value = text;
      return value;
    });
    taken.clear();
    model.send({ pong: message.ping, values });
  };
  const onKey = (event) => {
    const target = event.target;
    if (!inStudio(target)) return;
    const plain = !event.shiftKey && !event.altKey && !event.ctrlKey && !event.metaKey;
    const save = event.key.toLowerCase() === "s" && (event.ctrlKey || event.metaKey);
    if (!save && event.key !== "Enter") return;
    take(); // what the save, run or Enter acts on
    if (!(target instanceof HTMLInputElement) || !target.matches(model.get("save_fields"))) {
      return;
    }
    if (!save && !plain) return;
    event.preventDefault(); // no browser "save page", no notebook save
    event.stopPropagation();
    model.send({ event: "save" });
  };
  model.on("msg:custom", onMessage);
  // On the window, capturing: before the page's own handlers (a button's click, the
  // editor's keys, JupyterLab's shortcuts).
  window.addEventListener("input", onInput, true);
  window.addEventListener("pointerdown", onClick, true);
  window.addEventListener("click", onClick, true);
  window.addEventListener("keydown", onKey, true);
  return () => {
    model.off("msg:custom", onMessage);
    window.removeEventListener("input", onInput, true);
    window.removeEventListener("pointerdown", onClick, true);
    window.removeEventListener("click", onClick, true);
    window.removeEventListener("keydown", onKey, true);
  };
}
export default { render };
"""

Field = tuple[str, str]  # (CSS selector, "text" | "code")


def _fields(root: widgets.Widget) -> dict[Field, widgets.Widget]:
    """The text fields and code editors under ``root`` the page can be asked about: each
    by a CSS class of its own (one no other widget under ``root`` carries)."""
    found: dict[str, list[widgets.Widget]] = {}
    stack = [root]
    while stack:
        widget = stack.pop()
        if isinstance(widget, widgets.Text | widgets.Textarea | CodeEditor):
            for css in widget._dom_classes:
                found.setdefault(css, []).append(widget)
        stack.extend(getattr(widget, "children", ()))
    fields: dict[Field, widgets.Widget] = {}
    for css, owners in found.items():
        if len(owners) != 1 or not css.startswith("nk-") or css == "nk-code-editor":
            continue
        widget = owners[0]
        if isinstance(widget, CodeEditor):
            fields[(f".{css} .cm-editor", "code")] = widget
        else:
            tag = "textarea" if isinstance(widget, widgets.Textarea) else "input"
            fields[(f".{css} {tag}", "text")] = widget
    return fields


class FrontEndSync(anywidget.AnyWidget):
    """Runs browser-made actions on the values the page shows.

    ``save_fields``: a CSS selector of the inputs where Ctrl/Cmd+S and Enter call
    ``on_save()``. Place the widget inside the studio (it shows nothing); ``guard_all``
    says which widgets' fields to read and whose actions to defer."""

    _esm = _ESM
    save_fields = traitlets.Unicode("").tag(sync=True)

    def __init__(self, on_save: Callable[[], None], save_fields: str) -> None:
        super().__init__(save_fields=save_fields)
        self.add_class("nk-sync")
        self.layout.display = "none"
        self.on_save = on_save
        self.root: widgets.Widget | None = None
        self._waiting: dict[int, tuple[list[widgets.Widget], Callable[[], None]]] = {}
        self._pings = 0
        self.on_msg(self._handle_event)

    def after_sync(self, action: Callable[[], None]) -> None:
        """Run ``action`` once the fields hold what the page shows now."""
        fields = _fields(self.root) if self.root is not None else {}
        self._pings += 1
        self._waiting[self._pings] = (list(fields.values()), action)
        self.send({"ping": self._pings, "fields": list(fields)})

    def guard(self, *guarded: widgets.Widget) -> None:
        """Defer the front end's messages to each widget (a click, an editor's save or
        run, a pick) until the fields hold what the page shows."""
        for widget in guarded:
            # ipywidgets hands every custom message from the front end to this method.
            handle = widget._handle_custom_msg

            def deferred(content: Any, buffers: Any, handle: Any = handle) -> None:
                self.after_sync(lambda: handle(content, buffers))

            widget._handle_custom_msg = deferred

    def guard_all(self, root: widgets.Widget) -> None:
        """Read the fields under ``root``, and ``guard`` every widget there whose front-end
        messages start an action: buttons, code editors (save, run), the definition list."""
        self.root = root
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
            waiting = self._waiting.pop(content["pong"], None)
            if waiting is None:  # another view of the studio answered first
                return
            fields, action = waiting
            shown = content.get("values")
            if isinstance(shown, list) and len(shown) == len(fields):
                for widget, value in zip(fields, shown, strict=True):
                    if isinstance(value, str) and widget.value != value:
                        widget.value = value  # the update still on its way, taken now
            action()
        elif content.get("event") == "save":
            self.after_sync(self.on_save)
