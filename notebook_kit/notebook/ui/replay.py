"""The studio's replay bar (in the Logs tab): a recorded call opened in the Test tab, or
replayed against another version with the two answers diffed.

Calls are recorded when their stage records (``record_requests_dev`` /
``record_requests_prod``). The bar lists the recorded calls of the log, newest first.
**Open in Test** hands the call to the studio (``on_open``), which shows the definition it
reaches in the Test tab with its path parameters, query, headers and body filled in
(``fill_test_panel``). **Replay** runs it on the deployment that answered it and on the
version chosen (saved, dev, prod or a deployment of its application) through the core
(``Workspace.replay``) and shows the diff.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as widgets

from ...errors import ValidationError
from ...workspace.replay import LoggedCall, logged_call
from ...workspace.workspace import Workspace
from .feedback import Status
from .history import wrapping
from .tester import TestPanel

__all__ = ["ReplayBar", "fill_test_panel"]

_LINE_COLOURS = {"+": "#1a7f37", "-": "#cf222e", "@": "#6e7781"}
_FIXED = [("saved", "saved"), ("dev (live)", "dev"), ("prod (live)", "prod")]


def fill_test_panel(tester: TestPanel, call: LoggedCall) -> None:
    """Put a logged call's request into the Test tab (already showing its definition)."""
    for name, value in call.path_parameters.items():
        if name in tester.params:
            tester.params[name].value = value
    tester.query.value = call.query
    tester.headers.value = "\n".join(f"{name}: {value}" for name, value in call.headers.items())
    tester.body.value = call.body
    note = " (its body was cut to record_max_bytes)" if call.truncated else ""
    tester.message.ok(f"Logged call {call.entry_id} loaded{note}: Run saved or Send to dev")


def _diff_html(diff: str) -> str:
    lines = []
    for line in diff.splitlines():
        colour = "#6e7781" if line.startswith(("+++", "---")) else _LINE_COLOURS.get(line[:1])
        style = f' style="color:{colour}"' if colour else ""
        lines.append(f"<span{style}>{html.escape(line)}</span>")
    return f'<pre class="nk-replay-diff" style="font-size:12px">{chr(10).join(lines)}</pre>'


class ReplayBar(widgets.VBox):
    """Recorded calls of the log: open one in the Test tab, or replay it and diff.
    ``on_open(call)`` is set by the studio; without it, Open in Test is hidden."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.on_open: Callable[[LoggedCall], None] | None = None
        self.entry = widgets.Dropdown(
            description="Recorded call",
            options=[],
            style={"description_width": "initial"},
            layout=widgets.Layout(width="auto", max_width="36em"),
        )
        self.against = widgets.Dropdown(
            description="against",
            options=_FIXED,
            style={"description_width": "initial"},
            layout=widgets.Layout(width="auto"),
        )
        auto = widgets.Layout(width="auto")
        self.open_button = widgets.Button(description="Open in Test", icon="flask", layout=auto)
        self.replay_button = widgets.Button(description="Replay", icon="repeat", layout=auto)
        self.status = Status("nk-replay-status")
        self.result = widgets.HTML()
        for widget, css in (
            (self.entry, "nk-replay-entry"),
            (self.against, "nk-replay-against"),
            (self.open_button, "nk-replay-open"),
            (self.replay_button, "nk-replay-run"),
            (self.result, "nk-replay-result"),
        ):
            widget.add_class(css)
        self.open_button.on_click(self._on_open_button_click)
        self.replay_button.on_click(self._on_replay_button_click)
        self.entry.observe(self._on_entry_value, names="value")
        super().__init__(
            [
                wrapping(
                    self.entry, self.open_button, self.against, self.replay_button, self.status
                ),
                self.result,
            ]
        )
        self.add_class("nk-replay")
        self._rows: dict[int, Mapping[str, Any]] = {}
        self.layout.display = "none"  # until a call is recorded

    def show(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Offer the recorded calls among ``rows`` (the log, oldest first)."""
        recorded = [r for r in rows if r.get("recorded")][::-1]
        self._rows = {int(r["id"]): r for r in recorded}
        options = [
            (f"{r['id']} · {r['method']} {r['path']} · {r['status']} · {r['at']}", int(r["id"]))
            for r in recorded
        ]
        if options != [tuple(o) for o in self.entry.options]:
            chosen = self.entry.value
            self.entry.options = options
            if chosen not in self._rows:  # the newest, when the one chosen is gone
                chosen = options[0][1] if options else None
            self.entry.value = chosen
        self.layout.display = None if options else "none"
        self.open_button.layout.display = None if self.on_open is not None else "none"

    def _on_entry_value(self, _change: Mapping[str, object]) -> None:
        """Offer the deployments of the chosen call's application as versions."""
        row = self._rows.get(self.entry.value) if self.entry.value is not None else None
        deployments = []
        if row is not None and row.get("app"):
            deployments = [
                (f"deployment {d.id} ({d.stage}, {d.deployed_at})", str(d.id))
                for d in self.workspace.deployments(row["app"])
            ][::-1]
        chosen = self.against.value
        self.against.options = [*_FIXED, *deployments]
        if chosen in [value for _, value in self.against.options]:
            self.against.value = chosen

    def _chosen(self) -> int:
        if self.entry.value is None:
            raise ValidationError("choose a recorded call first", field="entry")
        return int(self.entry.value)

    def _on_open_button_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.open_button, self.replay_button):
            call = logged_call(self.workspace.store, self._chosen())
            if self.on_open is not None:
                self.on_open(call)  # the Test tab says what was loaded: the latest word

    def _on_replay_button_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.open_button, self.replay_button):
            self.result.value = ""
            result = self.workspace.replay(self._chosen(), self.against.value)
            cut = " (its recorded body was cut)" if result.truncated else ""
            head = (
                f"{result.before_version} answered {result.before.status}, "
                f"{result.after_version} {result.after.status}{cut}"
            )
            if result.same:
                self.status.ok(f"Same answer: {head}")
            else:
                self.status.info(f"The answers differ: {head}")
                self.result.value = _diff_html(result.diff)
