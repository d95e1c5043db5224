"""How the studio talks back: one status line, busy buttons, and text shown in an Output.

Every callback runs inside ``Status.working(...)``: its buttons are disabled while it runs,
and a ``NotebookKitError`` it raises becomes the status line instead of a traceback.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from contextlib import contextmanager

import ipywidgets as widgets

from ...errors import NotebookKitError

__all__ = ["Status", "output_text", "show_text"]


class Status(widgets.HTML):
    """The studio's one-line status: what just happened, or why it was refused."""

    def __init__(self) -> None:
        super().__init__(value="")
        self.add_class("nk-status")

    @property
    def text(self) -> str:
        """The message shown, without markup (what a test or a screen reader reads)."""
        return html.unescape(self.value.partition(">")[2].rpartition("<")[0])

    def ok(self, message: str) -> None:
        self.remove_class("nk-status-error")
        self.value = f'<span style="color:#1a7f37">{html.escape(message)}</span>'

    def error(self, message: str | BaseException) -> None:
        self.add_class("nk-status-error")
        self.value = f'<span style="color:#cf222e">{html.escape(str(message))}</span>'

    @contextmanager
    def working(self, *buttons: widgets.Button) -> Iterator[None]:
        """Disable ``buttons`` while the block runs; show a domain error instead of raising."""
        states = [b.disabled for b in buttons]
        for button in buttons:
            button.disabled = True
        try:
            yield
        except NotebookKitError as exc:
            self.error(exc)
        finally:
            for button, state in zip(buttons, states, strict=True):
                button.disabled = state


def show_text(output: widgets.Output, text: str) -> None:
    """Replace what ``output`` shows with ``text``, in one update (no flicker).

    Equivalent to ``clear_output(wait=True)`` then ``print``, but it needs no kernel
    message context, so it also works from threads and from tests.
    """
    output.outputs = ({"output_type": "stream", "name": "stdout", "text": text},)


def output_text(output: widgets.Output) -> str:
    """The text ``output`` shows now."""
    return "".join(
        item.get("text", "") or item.get("data", {}).get("text/plain", "")
        for item in output.outputs
    )
