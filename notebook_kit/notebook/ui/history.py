"""The Test tab's history: this session's calls, newest first, each one re-runnable."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import ipywidgets as widgets

from ...domain.models import Definition

__all__ = [
    "TestCall",
    "TestHistory",
    "format_duration",
    "status_class",
    "status_colour",
    "wrapping",
]

VERSION_LABELS = {
    "saved": "ran the saved version",
    "edited": "ran the edited version",
    "dev": "sent to the live dev URL",
}
_STATUS_COLOURS = {"2xx": "#1a7f37", "3xx": "#0969da", "4xx": "#9a6700", "5xx": "#cf222e"}


def status_class(status: int) -> str:
    """``2xx`` ... ``5xx``: the class of an HTTP status (1xx counts as 2xx: not an error)."""
    return f"{min(max(status // 100, 2), 5)}xx"


def status_colour(status: int) -> str:
    return _STATUS_COLOURS[status_class(status)]


def format_duration(ms: float) -> str:
    """Three significant digits in ms (``0.412 ms``, ``12.3 ms``, ``412 ms``), seconds past
    one second: a fast action's own time is a fraction of a millisecond, never "0.0 ms"."""
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    return f"{ms:.3g} ms"


def wrapping(*children: widgets.Widget) -> widgets.HBox:
    """A row that wraps onto the next line when the pane is narrow (1024 px screens)."""
    return widgets.HBox(
        list(children), layout=widgets.Layout(flex_flow="row wrap", align_items="center")
    )


@dataclass(frozen=True)
class TestCall:
    """One call the Test tab made: what was sent (enough to send it again) and the answer.

    ``version``: ``saved`` (the saved definition, in a test run), ``edited`` (the form's draft,
    kept here so a re-run runs that same code) or ``dev`` (the live dev URL over HTTP)."""

    __test__ = False  # not a pytest test class

    version: str
    definition: Definition
    path_parameters: dict[str, str]
    query: str
    headers: dict[str, str]
    body: str
    url: str
    status: int
    duration_ms: float
    at: str = field(default_factory=lambda: datetime.now(UTC).strftime("%H:%M:%SZ"))

    @property
    def method(self) -> str:
        return self.definition.method


class TestHistory(widgets.VBox):
    """Rows of ``TestCall`` (newest first, at most ``limit``), each with a Re-run button
    calling ``on_rerun(call)``."""

    __test__ = False

    def __init__(self, on_rerun: Callable[[TestCall], None], limit: int = 30) -> None:
        self.on_rerun = on_rerun
        self.limit = limit
        self.calls: list[TestCall] = []
        self.heading = widgets.HTML("<b>History</b> <i>(this session's calls)</i>")
        self.rows = widgets.VBox()
        super().__init__([self.heading, self.rows])
        self.add_class("nk-test-history")

    def add(self, call: TestCall) -> None:
        self.calls = [call, *self.calls][: self.limit]
        self.rows.children = tuple(self._row(c) for c in self.calls)

    def _row(self, call: TestCall) -> widgets.HBox:
        colour = status_colour(call.status)
        text = widgets.HTML(
            '<span style="font-family:monospace;overflow-wrap:anywhere">'
            f"{call.at} · {call.version} · "
            f"{html.escape(call.method)} {html.escape(call.url)} · "
            f'<b style="color:{colour}">{call.status}</b> · {format_duration(call.duration_ms)}'
            "</span>"
        )
        rerun = widgets.Button(
            description="Re-run", icon="redo", layout=widgets.Layout(width="auto")
        )
        rerun.add_class("nk-test-history-rerun")
        rerun.on_click(lambda _button: self.on_rerun(call))
        text.layout = widgets.Layout(flex="1 1 0", min_width="0", width="auto")
        rerun.layout.flex = "0 0 auto"
        # One line per call: the button at its start, the text wrapping beside it.
        row = widgets.HBox([rerun, text], layout=widgets.Layout(align_items="center"))
        row.add_class("nk-test-history-row")
        return row
