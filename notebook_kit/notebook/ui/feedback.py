"""How the studio talks back: status lines next to the buttons, confirmations, busy buttons,
and text shown in an Output.

Every callback runs inside ``Status.working(...)``: its buttons are disabled while it runs,
and a ``NotebookKitError`` it raises becomes that status line instead of a traceback. Each
panel keeps its own ``Status`` beside its buttons, so a result shows where the click was.
``Confirm`` asks before a change that cannot be undone (deploy to prod, delete, rollback):
a question, a "Confirm ..." button sized to its label, and Cancel.

A status line belongs to the latest action, so it never contradicts the page: the studio
joins its status lines to one ``StatusBoard``; a message shown in one clears the others,
and ``StatusBoard.clear()`` empties them all when the context changes (another application
or definition opened, the store changed elsewhere). A line that describes what its panel
shows (``Status(view=True)``, redrawn with the panel) stays out of it.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext

import ipywidgets as widgets

from ...errors import NotebookKitError

__all__ = ["Confirm", "Status", "StatusBoard", "output_text", "show_text"]


class Status(widgets.HTML):
    """The studio's one-line status: what just happened, or why it was refused.

    ``view=True``: the line describes what its panel shows (redrawn with it), not an
    action; a ``StatusBoard`` leaves it alone."""

    def __init__(self, css: str = "", view: bool = False) -> None:
        super().__init__(value="")
        self.view = view
        self.board: StatusBoard | None = None
        self.add_class("nk-status")
        if css:
            self.add_class(css)

    def _show(self, value: str) -> None:
        if self.board is not None:
            self.board.shown(self)
        self.value = value

    @property
    def text(self) -> str:
        """The message shown, without markup (what a test or a screen reader reads)."""
        return html.unescape(self.value.partition(">")[2].rpartition("<")[0])

    def ok(self, message: str) -> None:
        self.remove_class("nk-status-error")
        self._show(f'<span style="color:#1a7f37">{html.escape(message)}</span>')

    def error(self, message: str | BaseException) -> None:
        self.add_class("nk-status-error")
        self._show(f'<span style="color:#cf222e">{html.escape(str(message))}</span>')

    def info(self, message: str) -> None:
        """A neutral note (a question asked, a hint): neither success nor refusal."""
        self.remove_class("nk-status-error")
        self._show(f"<span>{html.escape(message)}</span>")

    def clear(self) -> None:
        self.remove_class("nk-status-error")
        self.value = ""

    @contextmanager
    def working(self, *buttons: widgets.Button) -> Iterator[None]:
        """Disable ``buttons`` while the block runs; show a domain error instead of raising.
        On a board, the block holds the board's lock (the studio's background refresh
        waits) and the board's ``after_action`` runs when it ends."""
        board = self.board
        with board.lock if board is not None else nullcontext():
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
                if board is not None and board.after_action is not None:
                    board.after_action()


class StatusBoard:
    """The status lines of one studio, so that a status belongs to the latest action.

    ``join(root)`` enrols every ``Status`` under ``root`` (but ``view`` ones); showing a
    message in one clears the others; ``clear()`` empties all of them (the context
    changed). ``lock`` is held while an action runs (``Status.working``), and
    ``after_action()``, if set, is called after each one."""

    def __init__(self) -> None:
        self.statuses: list[Status] = []
        self.lock = threading.RLock()
        self.after_action: Callable[[], None] | None = None

    def join(self, root: widgets.Widget) -> None:
        """Enrol the action status lines found in ``root`` and its children."""
        stack = [root]
        while stack:
            widget = stack.pop()
            if isinstance(widget, Status) and not widget.view and widget.board is not self:
                widget.board = self
                self.statuses.append(widget)
            stack.extend(getattr(widget, "children", ()))

    def shown(self, status: Status) -> None:
        """``status`` shows a new message: every other line is out of date."""
        for other in self.statuses:
            if other is not status and other.value:
                other.clear()

    def clear(self) -> None:
        for status in self.statuses:
            if status.value:
                status.clear()


class Confirm(widgets.HBox):
    """A hidden question with "Confirm ..." and Cancel, shown by ``ask``.

    ``ask(question, action)`` shows the question; Confirm runs ``action`` (inside
    ``status.working``, so a refusal lands in ``status``) and hides the bar; Cancel hides
    it and runs nothing. Buttons are sized to their labels: nothing is truncated.
    ``css`` names the bar; its buttons are ``<css>-confirm`` and ``<css>-cancel``.
    """

    def __init__(self, status: Status, confirm_label: str, css: str) -> None:
        self.status = status
        self.question = widgets.HTML(value="")
        self.confirm = widgets.Button(
            description=confirm_label, button_style="danger", layout=widgets.Layout(width="auto")
        )
        self.cancel = widgets.Button(description="Cancel", layout=widgets.Layout(width="auto"))
        self.confirm.add_class(f"{css}-confirm")
        self.cancel.add_class(f"{css}-cancel")
        self._action: Callable[[], None] | None = None
        self.confirm.on_click(self._on_confirm)
        self.cancel.on_click(self._on_cancel)
        super().__init__([self.question, self.confirm, self.cancel])
        self.add_class(css)
        self.add_class("nk-confirm")
        self.layout.display = "none"

    @property
    def asking(self) -> bool:
        return self.layout.display != "none"

    def ask(
        self, question: str, action: Callable[[], None], confirm_label: str | None = None
    ) -> None:
        """Show ``question``; ``action`` runs only if Confirm is clicked."""
        if confirm_label is not None:
            self.confirm.description = confirm_label
        self.question.value = f"<span>{html.escape(question)}</span>"
        self._action = action
        self.layout.display = None

    def close_question(self) -> None:
        """Hide the bar and forget the pending action."""
        self._action = None
        self.layout.display = "none"

    def _on_confirm(self, _button: widgets.Button) -> None:
        action, self._action = self._action, None
        self.layout.display = "none"
        if action is not None:
            with self.status.working(self.confirm):
                action()

    def _on_cancel(self, _button: widgets.Button) -> None:
        self.close_question()
        self.status.info("Cancelled: nothing changed")


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
