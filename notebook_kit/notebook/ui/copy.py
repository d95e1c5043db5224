"""A copy-to-clipboard button (anywidget; its few lines of JavaScript ship inline, no CDN)."""

from __future__ import annotations

import anywidget
import traitlets

__all__ = ["CopyButton"]

_ESM = """
function render({ model, el }) {
  const button = document.createElement("button");
  button.className = "jupyter-button widget-button";
  button.textContent = model.get("label");
  button.title = "Copy to the clipboard";
  button.addEventListener("click", async () => {
    const text = model.get("text");
    try {
      await navigator.clipboard.writeText(text);
    } catch (_) {
      const area = document.createElement("textarea");
      area.value = text;
      document.body.appendChild(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = model.get("label"); }, 1200);
  });
  model.on("change:label", () => { button.textContent = model.get("label"); });
  el.appendChild(button);
}
export default { render };
"""


class CopyButton(anywidget.AnyWidget):
    """A button that copies ``text`` to the browser's clipboard."""

    _esm = _ESM
    text = traitlets.Unicode("").tag(sync=True)
    label = traitlets.Unicode("Copy").tag(sync=True)

    def __init__(self, text: str = "", label: str = "Copy") -> None:
        super().__init__(text=text, label=label)
        self.add_class("nk-copy")
