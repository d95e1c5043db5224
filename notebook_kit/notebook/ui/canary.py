"""The studio's canary widgets: the split and the two sides side by side.

``CanaryPanel`` sits in the Deploy tab: start a canary on prod (percent, an optional
automatic-rollback threshold; confirmed), promote it or roll it back (both confirmed), and
see the split with each side's calls, 5xx share and p50/p99. ``CanarySummary`` sits in
the Logs tab: the same side-by-side table for the canaries running, refreshed with the
log. Every rule and figure comes from the core (``Workspace.deploy(canary=)``,
``promote``, ``rollback``, ``canary``); these only draw and ask.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as widgets

from ...domain.canary import Canary, SideStats
from ...errors import NotFoundError, ValidationError
from ...workspace.workspace import Workspace
from .feedback import Confirm, Status
from .history import wrapping

__all__ = ["CanaryPanel", "CanarySummary", "canary_html"]

_CELL = "padding:2px 10px;text-align:right;border-bottom:1px solid #d0d7de"
_HEAD = ("side", "deployment", "share", "calls", "5xx", "error rate", "p50 ms", "p99 ms")


def _number(value: float | None, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.1f}{suffix}"


def _row(side: str, stats: SideStats | None, deployment: int, share: int) -> str:
    stats = stats or SideStats(deployment)
    cells = (
        side,
        str(deployment),
        f"{share} %",
        str(stats.calls),
        str(stats.errors),
        _number(stats.error_rate, " %"),
        _number(stats.p50_ms),
        _number(stats.p99_ms),
    )
    tds = "".join(f'<td style="{_CELL}">{html.escape(c)}</td>' for c in cells)
    return f'<tr class="nk-canary-{side}" data-deployment-id="{deployment}">{tds}</tr>'


def canary_html(canary: Canary) -> str:
    """The split of one canary and its two sides' figures, side by side."""
    threshold = (
        "no automatic rollback"
        if canary.rollback_above is None
        else f"rolled back automatically above {canary.rollback_above:g} % 5xx "
        f"(after {canary.min_calls} calls)"
    )
    head = "".join(f'<th style="{_CELL}">{h}</th>' for h in _HEAD)
    rows = _row("live", canary.live, canary.live_id, 100 - canary.percent) + _row(
        "canary", canary.canary, canary.canary_id, canary.percent
    )
    return (
        f'<div class="nk-canary-split" data-app="{html.escape(canary.app)}">'
        f"<b>{html.escape(canary.app)}</b>: canary {canary.canary_id} serves "
        f"{canary.percent} % of prod since {html.escape(canary.started_at)}; {threshold}"
        f'<table style="border-collapse:collapse"><thead><tr>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )


class CanaryPanel(widgets.VBox):
    """The Deploy tab's canary controls for one application; ``on_changed()`` runs after
    a canary started or ended (what prod serves changed)."""

    def __init__(self, workspace: Workspace, on_changed: Callable[[], None] | None = None) -> None:
        self.workspace = workspace
        self.on_changed = on_changed
        self.app = ""
        self.percent = widgets.BoundedIntText(
            value=10,
            min=1,
            max=99,
            description="Canary %",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="9em"),
        )
        self.rollback_above = widgets.Text(
            value="",
            placeholder="off",
            description="Auto rollback above % 5xx",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="20em"),
        )
        self.start = widgets.Button(
            description="Deploy canary to prod",
            icon="random",
            button_style="warning",
            layout=widgets.Layout(width="auto"),
        )
        self.promote = widgets.Button(
            description="Promote canary", icon="check", layout=widgets.Layout(width="auto")
        )
        self.drop = widgets.Button(
            description="Roll back canary", icon="undo", layout=widgets.Layout(width="auto")
        )
        self.split = widgets.HTML()
        self.status = Status("nk-canary-status")
        self.ask = Confirm(self.status, "Confirm", "nk-canary-ask")
        for widget, css in (
            (self.percent, "nk-canary-percent"),
            (self.rollback_above, "nk-canary-threshold"),
            (self.start, "nk-canary-start"),
            (self.promote, "nk-canary-promote"),
            (self.drop, "nk-canary-rollback"),
            (self.split, "nk-canary"),
        ):
            widget.add_class(css)
        self.start.on_click(self._on_start_click)
        self.promote.on_click(self._on_promote_click)
        self.drop.on_click(self._on_drop_click)
        super().__init__(
            [
                widgets.HTML("<b>Canary on prod</b>"),
                self.split,
                wrapping(self.percent, self.rollback_above, self.start, self.promote, self.drop),
                self.ask,
                self.status,
            ]
        )
        self.add_class("nk-canary-panel")

    @property
    def buttons(self) -> tuple[widgets.Button, ...]:
        return (self.start, self.promote, self.drop)

    def load(self, app: str) -> None:
        """Show ``app``'s canary (or that none runs)."""
        if app != self.app:
            self.ask.close_question()
            self.status.clear()
        self.app = app
        self.refresh()

    def refresh(self) -> None:
        canary = None
        ended = None
        if self.app:
            try:
                canary = self.workspace.canary(self.app)
            except NotFoundError:  # an application ID typed but not created yet
                canary = None
            ended = self.workspace.canaries.ended(self.app) if canary is None else None
        if canary is not None:
            self.split.value = canary_html(canary)
        elif ended:
            self.split.value = f"<i>No canary runs; the last one was {html.escape(ended)}.</i>"
        else:
            self.split.value = "<i>No canary runs on prod.</i>"
        self.promote.disabled = self.drop.disabled = canary is None

    # -- callbacks -----------------------------------------------------------------------

    def _threshold(self) -> float | None:
        text = self.rollback_above.value.strip()
        if not text:
            return None
        try:
            return float(text)
        except ValueError:
            raise ValidationError(
                f"the rollback threshold must be a number of percent, not {text!r}",
                field="rollback_above",
            ) from None

    def _app(self) -> str:
        if not self.app:
            raise ValidationError("choose an application first", field="app")
        return self.app

    def _changed(self, message: str) -> None:
        self.status.ok(message)
        if self.on_changed is not None:
            self.on_changed()  # the Deploy tab redraws, this panel with it
        else:
            self.refresh()

    def _start(self, percent: int, threshold: float | None) -> None:
        deployment = self.workspace.deploy(
            self._app(), "prod", canary=percent, rollback_above=threshold
        )
        self._changed(f"Deployment {deployment.id} serves {percent} % of prod's calls as a canary")

    def _on_start_click(self, _button: widgets.Button) -> None:
        with self.status.working(*self.buttons):
            app, percent, threshold = self._app(), self.percent.value, self._threshold()
            self.ask.ask(
                f"Serve the saved {app} to {percent} % of prod's callers?",
                lambda: self._start(percent, threshold),
                confirm_label="Confirm canary",
            )

    def _promote(self) -> None:
        deployment = self.workspace.promote(self._app())
        self._changed(f"Promoted: deployment {deployment.id} serves every prod call")

    def _on_promote_click(self, _button: widgets.Button) -> None:
        with self.status.working(*self.buttons):
            app = self._app()
            self.ask.ask(
                f"Serve the canary of {app} to every prod caller?",
                self._promote,
                confirm_label="Confirm promote",
            )

    def _drop(self) -> None:
        deployment = self.workspace.rollback(self._app(), "prod")
        self._changed(f"Canary dropped: deployment {deployment.id} serves every prod call")

    def _on_drop_click(self, _button: widgets.Button) -> None:
        with self.status.working(*self.buttons):
            app = self._app()
            self.ask.ask(
                f"Drop the canary of {app} and keep the live deployment?",
                self._drop,
                confirm_label="Confirm rollback",
            )


class CanarySummary(widgets.HTML):
    """The Logs tab's view of the canaries running: each split side by side (hidden when
    none runs)."""

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace
        self.add_class("nk-logs-canary")
        self.layout.display = "none"

    def show(self, app: str = "") -> None:
        """Draw the canaries of ``app`` ('' for every application)."""
        running = [c for c in self.workspace.canaries.running() if not app or c.app == app]
        self.value = "".join(canary_html(c) for c in running)
        self.layout.display = None if running else "none"
