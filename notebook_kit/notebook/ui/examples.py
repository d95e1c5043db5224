"""``ExamplesPanel``: the Test tab's examples — save the current request as one, run them all.

**Save as example** keeps the Test tab's current request (path parameters, query, headers,
body) under a name, with what its answer must hold: the status (the last answer's by
default), JSON fields one ``PATH=VALUE`` a line (as the CLI's ``--json-field``), and a
maximum duration; **Remove** takes a saved one away, after a confirmation. **Run
examples** runs all of the application's examples in the kernel, on the saved definitions
or on what dev or prod serves, and shows a pass/fail table with each difference. The
rules are the core's (``Workspace.add_example``, ``Workspace.check``).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from ...domain.checks import CheckReport
from ...domain.examples import parse_field
from ...domain.models import Definition
from ...errors import ValidationError
from ...workspace.workspace import Workspace
from .feedback import Confirm, Status
from .history import format_duration, wrapping

__all__ = ["ExamplesPanel", "report_html"]

_TARGETS = {"saved": None, "dev": "dev", "prod": "prod"}


def report_html(report: CheckReport) -> str:
    """The results as a table: one row an example, PASS in green, FAIL in red with the
    difference."""
    if not report.results:
        return f"<i>{html.escape(report.summary())}.</i>"
    rows = []
    for r in report.results:
        verdict = "PASS" if r.passed else "FAIL"
        colour = "#1a7f37" if r.passed else "#cf222e"
        took = "" if r.duration_ms is None else format_duration(r.duration_ms)
        rows.append(
            f'<tr class="nk-example-{verdict.lower()}" data-example="{html.escape(r.key)}">'
            f"<td>{html.escape(r.api_id)}</td><td>{html.escape(r.name)}</td>"
            f'<td><b style="color:{colour}">{verdict}</b></td>'
            f"<td>{'' if r.status is None else r.status}</td><td>{took}</td>"
            f"<td>{html.escape(r.difference)}</td></tr>"
        )
    head = "".join(
        f"<th>{h}</th>" for h in ("Definition", "Example", "Result", "Status", "Took", "Difference")
    )
    return f'<table class="nk-examples-results"><tr>{head}</tr>{"".join(rows)}</table>'


class ExamplesPanel(widgets.VBox):
    """Save the Test tab's request as an example of its definition; run the application's
    examples. ``request()`` returns the tab's current request (``add_example``'s
    ``request`` mapping); a refusal shows on the status line beside the button."""

    def __init__(self, workspace: Workspace, request: Callable[[], dict[str, Any]]) -> None:
        self.workspace = workspace
        self.request = request
        self.definition: Definition | None = None
        auto = widgets.Layout(width="auto")
        self.name = widgets.Text(description="Name", placeholder="alice-found")
        self.expected_status = widgets.BoundedIntText(
            value=200, min=100, max=599, description="Status", layout=widgets.Layout(width="12em")
        )
        self.max_ms = widgets.Text(
            description="Max ms", placeholder="any", layout=widgets.Layout(width="14em")
        )
        self.fields = widgets.Textarea(
            description="JSON fields",
            placeholder="name=Alice Martin\nitems.0.age=34",
            layout=widgets.Layout(width="auto", max_width="48em"),
            style={"description_width": "initial"},
        )
        self.save_button = widgets.Button(
            description="Save as example", icon="bookmark", layout=auto
        )
        self.save_status = Status("nk-example-save-status")
        self.target = widgets.Dropdown(
            options=list(_TARGETS), value="saved", description="Run on", layout=auto
        )
        self.run_button = widgets.Button(
            description="Run examples", icon="check", button_style="info", layout=auto
        )
        self.run_status = Status("nk-examples-status")
        self.table = widgets.HTML()
        self.saved = widgets.Dropdown(options=[], description="Saved", layout=auto)
        self.remove_button = widgets.Button(description="Remove", icon="trash", layout=auto)
        self.remove_status = Status("nk-example-remove-status")
        self.remove_ask = Confirm(self.remove_status, "Confirm remove", "nk-example-remove-ask")
        for widget, css in (
            (self.name, "nk-example-name"),
            (self.expected_status, "nk-example-status"),
            (self.max_ms, "nk-example-max-ms"),
            (self.fields, "nk-example-fields"),
            (self.save_button, "nk-example-save"),
            (self.target, "nk-examples-target"),
            (self.run_button, "nk-examples-run"),
            (self.table, "nk-examples-table"),
            (self.saved, "nk-examples-saved"),
            (self.remove_button, "nk-example-remove"),
        ):
            widget.add_class(css)
        self.save_button.on_click(self._on_save_button_click)
        self.run_button.on_click(self._on_run_button_click)
        self.remove_button.on_click(self._on_remove_button_click)
        super().__init__(
            [
                widgets.HTML("<b>Examples</b> <i>(saved requests and what must hold)</i>"),
                wrapping(self.name, self.expected_status, self.max_ms),
                self.fields,
                wrapping(self.save_button, self.save_status),
                wrapping(self.saved, self.remove_button, self.remove_status),
                self.remove_ask,
                wrapping(self.target, self.run_button, self.run_status),
                self.table,
            ]
        )
        self.add_class("nk-examples")

    def load(self, definition: Definition | None) -> None:
        """Save examples of ``definition`` (None: not saved yet) and run its application's."""
        if definition is None or self.definition is None or definition.app != self.definition.app:
            self.table.value = ""
            self.run_status.clear()
        self.definition = definition
        self.save_button.disabled = self.run_button.disabled = definition is None
        self.remove_ask.close_question()
        self._list()

    def _list(self) -> None:
        """The definition's saved examples, to choose one to remove."""
        d = self.definition
        names = [e.name for e in self.workspace.examples(d.app, d.id)] if d else []
        self.saved.options = names
        self.saved.value = names[0] if names else None
        self.remove_button.disabled = not names

    def answered(self, status: int) -> None:
        """The last answer's status becomes the expected one (editable)."""
        if 100 <= status <= 599:
            self.expected_status.value = status

    def expectations(self) -> dict[str, Any]:
        """What the inputs say must hold (``add_example``'s ``expect``)."""
        lines = [line for line in self.fields.value.splitlines() if line.strip()]
        return {
            "status": self.expected_status.value,
            "json": dict(parse_field(line) for line in lines),
            "max_ms": self.max_ms.value.strip() or None,
        }

    def save(self) -> None:
        """Save the current request and expectations under the name given."""
        with self.save_status.working(self.save_button):
            d = self.definition
            if d is None:
                raise ValidationError("save the definition first: an example belongs to one")
            example = self.workspace.add_example(
                d.app,
                d.id,
                self.name.value.strip(),
                request=self.request(),
                expect=self.expectations(),
            )
            self._list()
            self.saved.value = example.name
            self.save_status.ok(
                f"Saved example {example.key}: expects {example.expect.status}"
                f"{f' and {len(example.expect.json)} JSON field(s)' if example.expect.json else ''}"
            )

    def run(self) -> None:
        """Run every example of the application and show the table."""
        with self.run_status.working(self.run_button):
            d = self.definition
            if d is None:
                raise ValidationError("save the definition first: its application's examples run")
            report = self.workspace.check(d.app, _TARGETS[self.target.value])
            self.table.value = report_html(report)
            if report.passed:
                self.run_status.ok(report.summary())
            else:
                self.run_status.error(report.summary())

    def remove(self) -> None:
        """Ask, then remove the example chosen in Saved (Cancel removes nothing)."""
        with self.remove_status.working(self.remove_button):
            d, name = self.definition, self.saved.value
            if d is None or not name:
                raise ValidationError("choose a saved example to remove")
            self.remove_ask.ask(f"Remove example {d.id}/{name}?", lambda: self._remove(d, name))

    def _remove(self, definition: Definition, name: str) -> None:
        self.workspace.remove_example(definition.app, definition.id, name)
        self._list()
        self.remove_status.ok(f"Removed example {definition.id}/{name}")

    def _on_remove_button_click(self, _button: widgets.Button) -> None:
        self.remove()

    def _on_save_button_click(self, _button: widgets.Button) -> None:
        self.save()

    def _on_run_button_click(self, _button: widgets.Button) -> None:
        self.run()
