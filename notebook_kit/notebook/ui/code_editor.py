"""A code editor widget: CodeMirror 6 in an anywidget, for action and function source.

The front end (``js/code-editor/``) is bundled with esbuild when the package is built and
ships as ``static/code_editor.js``: it works offline and on Binder, with no CDN.

    editor = CodeEditor(value="def f():\\n    return 1\\n")
    editor.on_save(lambda widget: store(widget.value))  # Ctrl/Cmd+S in the editor
    editor.on_run(lambda widget: check(widget.value))   # Ctrl/Cmd+Enter
    editor.error_line, editor.error_message = 2, "invalid syntax"  # 0 clears it

The browser sends ``value`` about 150 ms after typing stops; a save or run event carries
the text with it, so a callback sees the text the user saw.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets
from ipywidgets import CallbackDispatcher

__all__ = ["BUNDLE", "CodeEditor", "EditorBundleMissingError"]

BUNDLE = Path(__file__).parent / "static" / "code_editor.js"


class EditorBundleMissingError(FileNotFoundError):
    """The JavaScript bundle was not built (a source checkout without a build step)."""


def _bundle() -> Path:
    if not BUNDLE.is_file():
        raise EditorBundleMissingError(
            f"the CodeEditor's JavaScript bundle is missing ({BUNDLE}). Build it with "
            "`python -m notebook_kit.notebook.ui.build_editor` (needs Node.js 18+ and npm), "
            "or reinstall notebook-kit (`pip install .` or `pip install -e .`), which builds it."
        )
    return BUNDLE


class CodeEditor(anywidget.AnyWidget):
    """A CodeMirror 6 editor: Python highlighting, line numbers, Tab indents, undo/redo.

    ``error_line`` (1-based, 0 for none) is marked in the gutter with ``error_message`` as
    its tooltip and highlighted. ``language`` is ``"python"``; any other value gives plain
    text. The root element has the CSS class ``nk-code-editor``.
    """

    _esm = _bundle()

    value = traitlets.Unicode("").tag(sync=True)
    language = traitlets.Unicode("python").tag(sync=True)
    error_line = traitlets.Int(0, min=0).tag(sync=True)
    error_message = traitlets.Unicode("").tag(sync=True)
    read_only = traitlets.Bool(False).tag(sync=True)
    height = traitlets.Unicode("18em").tag(sync=True)
    placeholder = traitlets.Unicode("").tag(sync=True)

    def __init__(self, value: str = "", **kwargs: Any) -> None:
        super().__init__(value=value, **kwargs)
        self._save_handlers = CallbackDispatcher()
        self._run_handlers = CallbackDispatcher()
        self.on_msg(self._handle_event)

    def on_save(self, callback: Callable[[CodeEditor], Any], remove: bool = False) -> None:
        """Call ``callback(editor)`` on Ctrl/Cmd+S (or stop calling it, with ``remove``)."""
        self._save_handlers.register_callback(callback, remove=remove)

    def on_run(self, callback: Callable[[CodeEditor], Any], remove: bool = False) -> None:
        """Call ``callback(editor)`` on Ctrl/Cmd+Enter (or stop calling it, with ``remove``)."""
        self._run_handlers.register_callback(callback, remove=remove)

    def _handle_event(self, _: Any, content: Any, buffers: list[bytes]) -> None:
        """Dispatch the front end's ``{"event": "save" | "run", "value": text}`` messages.

        The message carries the editor's text: ipywidgets may hold back the ``value`` update
        sent just before it (while an earlier update awaits the kernel) but never a custom
        message, so the text is taken from here before the handlers run. Others are ignored.
        """
        if not isinstance(content, dict):
            return
        event = content.get("event")
        if event in ("save", "run") and isinstance(content.get("value"), str):
            self.value = content["value"]
        if event == "save":
            self._save_handlers(self)
        elif event == "run":
            self._run_handlers(self)
