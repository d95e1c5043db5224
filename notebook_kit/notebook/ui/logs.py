"""``LogsPanel``: the request log, filtered by stage, application and status class, with
its two charts side by side above the table; a click on a row opens its whole entry. It
refreshes itself every few seconds while its tab is open."""

from __future__ import annotations

import html
import threading
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets

from ...domain.models import Stage
from ...errors import NotebookKitError
from ...workspace.traffic import STATUS_CLASSES, filter_requests, status_class
from ...workspace.workspace import Workspace
from ..frames import request_log_frame
from .answer import phrase
from .canary import CanarySummary
from .charts import EMPTY_TEXT, request_charts
from .clickable import ClickableHtml
from .diff_view import local_time
from .feedback import Status
from .replay import ReplayBar

__all__ = ["LogsPanel"]

#: How many of the newest matching requests the table lists.
TABLE_ROWS = 100
_ALL = ""


class LogsPanel(widgets.VBox):
    """What the servers answered: a table of the newest requests and the charts.

    ``interval``: seconds between refreshes while active (``set_active(True)``); the
    refresh runs on one daemon thread, stopped by ``set_active(False)`` and ``close()``.
    A refresh redraws only when the log or the filters changed.
    """

    def __init__(self, workspace: Workspace, interval: float = 3.0) -> None:
        self.workspace = workspace
        self.interval = interval
        self.stage = widgets.Dropdown(
            description="Stage",
            style={"description_width": "initial"},  # the label's own width, no padding
            options=[("All stages", _ALL), *((str(s), str(s)) for s in Stage)],
            layout=widgets.Layout(width="auto"),
        )
        self.app = widgets.Dropdown(
            description="Application",
            style={"description_width": "initial"},  # the label's own width, no padding
            options=[("All applications", _ALL)],
            layout=widgets.Layout(width="auto"),
        )
        self.status_class = widgets.Dropdown(
            description="Status",
            style={"description_width": "initial"},  # the label's own width, no padding
            options=[("All statuses", _ALL), *((c, c) for c in STATUS_CLASSES)],
            layout=widgets.Layout(width="auto"),
        )
        self.refresh_button = widgets.Button(
            description="Refresh", icon="refresh", layout=widgets.Layout(width="auto")
        )
        self.status = Status("nk-logs-feedback", view=True)  # says what the panel shows
        self.empty = widgets.HTML(f'<p class="nk-logs-empty">{html.escape(EMPTY_TEXT)}</p>')
        self.rate_chart = widgets.HTML()
        self.latency_chart = widgets.HTML()
        self.table = ClickableHtml()  # a click on a row opens its entry in ``details``
        self.table.on_event("open", self._on_table_open)
        self.details = ClickableHtml()
        self.details.on_event("close", self._on_details_close)
        self._listed: list[Mapping[str, Any]] = []  # the rows the table shows, in order
        for widget, css in (
            (self.stage, "nk-logs-stage"),
            (self.app, "nk-logs-app"),
            (self.status_class, "nk-logs-status"),
            (self.refresh_button, "nk-logs-refresh"),
            (self.rate_chart, "nk-logs-chart-rate"),
            (self.latency_chart, "nk-logs-chart-latency"),
            (self.table, "nk-logs-table"),
            (self.details, "nk-logs-details"),
        ):
            widget.add_class(css)
        for dropdown in (self.stage, self.app, self.status_class):
            dropdown.observe(self._on_filter_value, names="value")
        self.refresh_button.on_click(self._on_refresh_button_click)
        for chart in (self.rate_chart, self.latency_chart):  # side by side, shrinking
            chart.layout = widgets.Layout(flex="1 1 0", min_width="0", max_width="480px")
        self.charts = widgets.HBox(
            [self.rate_chart, self.latency_chart], layout=widgets.Layout(width="100%")
        )
        filters = widgets.HBox(
            [self.stage, self.app, self.status_class, self.refresh_button, self.status],
            layout=widgets.Layout(flex_flow="row wrap", align_items="center"),
        )
        self.canaries = CanarySummary(workspace)  # running canaries side by side (canary.py)
        self.replay = ReplayBar(workspace)  # recorded calls: open in Test, replay (replay.py)
        children = [filters, self.canaries, self.replay, self.empty, self.charts]
        super().__init__([*children, self.details, self.table])
        self.add_class("nk-logs")
        self._lock = threading.RLock()
        self._quiet = False  # set while the panel itself changes the filters
        self._shown: Any = None  # what the view was last drawn from
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.refresh()

    # -- the interface the studio uses ---------------------------------------------------

    def load(self, app: str) -> None:
        """Show the requests to ``app`` (all applications for '')."""
        self._refresh(app)

    def refresh(self) -> None:
        """Re-read the log and redraw what changed."""
        self._refresh(None)

    def _refresh(self, app: str | None) -> None:
        with self._lock:
            rows = self.workspace.request_log()
            self._update_apps(rows, keep=self.app.value if app is None else app)
            self.canaries.show(self.app.value)  # a canary may start or end without traffic
            self.replay.show(rows)
            filters = (self.stage.value, self.app.value, self.status_class.value)
            newest = tuple(rows[-1].values()) if rows else None
            shown = (len(rows), newest, filters)
            if shown != self._shown:
                self._draw(rows, filters)
                self._shown = shown

    def set_active(self, active: bool) -> None:
        """Refresh now and every ``interval`` seconds while ``active``; stop when not."""
        if not active:
            self._stop_thread()
            return
        with self.status.working(self.refresh_button):  # a refusal shows; the timer starts
            self.refresh()
        if self._thread is None:
            self._stop = threading.Event()
            self._thread = threading.Thread(
                target=self._refresh_until_stopped,
                args=(self._stop,),
                name="notebook_kit logs refresh",
                daemon=True,
            )
            self._thread.start()

    @property
    def active(self) -> bool:
        return self._thread is not None

    def close(self) -> None:
        self._stop_thread()
        super().close()

    # -- drawing -------------------------------------------------------------------------

    def _draw(self, rows: list[dict[str, Any]], filters: tuple[str, str, str]) -> None:
        stage, app, status = filters
        matching = filter_requests(rows, stage or None, app or None, status or None)
        charts = request_charts(request_log_frame(matching))
        none = not matching
        self.empty.layout.display = None if none else "none"
        self.charts.layout.display = "none" if none else None
        self.table.layout.display = "none" if none else None
        self.rate_chart.value = charts.rate_svg
        self.latency_chart.value = charts.latency_svg
        self._listed = matching[-TABLE_ROWS:][::-1]
        self.table.value = "" if none else _table(self._listed)
        if not rows:
            self.status.info("No requests yet")
        elif none:
            self.status.info(f"None of the {len(rows)} logged requests matches")
        else:
            shown = min(len(matching), TABLE_ROWS)
            self.status.info(
                f"{len(matching)} of {len(rows)} logged requests match; "
                f"the newest {shown} are listed"
            )

    def _update_apps(self, rows: list[dict[str, Any]], keep: str) -> None:
        """The application filter offers every application and any the log names."""
        apps = {a.id for a in self.workspace.applications()}
        apps.update(row["app"] for row in rows if row["app"])
        if keep:
            apps.add(keep)
        options = [("All applications", _ALL), *((a, a) for a in sorted(apps))]
        self._quiet = True
        try:
            if options != [tuple(o) for o in self.app.options]:
                self.app.options = options
            self.app.value = keep
        finally:
            self._quiet = False

    def open_row(self, index: int) -> None:
        """Show the whole entry of the table's row ``index`` (0: the newest listed)."""
        row = self._listed[index]
        self.details.value = _details(row)

    def _on_table_open(self, element_id: str) -> None:
        with self.status.working():
            if element_id.isdigit() and int(element_id) < len(self._listed):
                self.open_row(int(element_id))

    def _on_details_close(self, _element_id: str) -> None:
        self.details.value = ""

    # -- the refresh thread --------------------------------------------------------------

    def _refresh_until_stopped(self, stop: threading.Event) -> None:
        while not stop.wait(self.interval):
            try:
                self.refresh()
            except NotebookKitError as exc:  # a locked or moved store: say so, keep trying
                self.status.error(f"Could not read the request log: {exc}")
                self._shown = None  # redraw (and replace this line) once it reads again

    def _stop_thread(self) -> None:
        thread, self._thread = self._thread, None
        self._stop.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)

    # -- callbacks -----------------------------------------------------------------------

    def _on_filter_value(self, _change: Mapping[str, object]) -> None:
        if self._quiet:
            return
        with self.status.working(self.refresh_button):
            self.refresh()

    def _on_refresh_button_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.refresh_button):
            self._shown = None  # redraw even if nothing changed
            self.refresh()


_CELL = "padding:2px 4px;vertical-align:top"
_NOWRAP, _ANYWHERE = ";white-space:nowrap", ";overflow-wrap:anywhere"


def _table(rows: list[Mapping[str, Any]]) -> str:
    """The requests as an HTML table, newest first; status coloured by class. It fits
    its pane (long paths wrap); each row opens its entry when clicked."""
    head = "".join(
        f'<th style="text-align:left;{_CELL}{_ANYWHERE}">{h}</th>'  # a narrow pane may break
        for h in ("time (UTC)", "stage", "app", "method", "path", "status", "ms", "deployment")
    )
    body = []
    for index, row in enumerate(rows):
        kind = status_class(row["status"])
        at = str(row["at"])
        when = f"{at[5:10]} {at[11:19]}"  # month-day and second; the entry has it all
        # Short cells keep to one line; the application and the path wrap anywhere.
        cells = (
            (when, ""),
            (row["stage"], _NOWRAP),
            (row["app"], _ANYWHERE),
            (row["method"], _NOWRAP),
            (row["path"], _ANYWHERE),
        )
        body.append(
            f'<tr data-nk-event="open" data-nk-id="{index}" tabindex="0" '
            'title="Click to see the whole entry">'
            + "".join(f'<td style="{_CELL}{s}">{html.escape(str(c))}</td>' for c, s in cells)
            + f'<td class="nk-status-{kind}" style="{_CELL}{_NOWRAP};font-weight:bold;'
            f'color:{_TEXT_COLOURS[kind]}">{row["status"]}</td>'
            f'<td style="{_CELL}{_NOWRAP};text-align:right">{row["duration_ms"]:.1f}</td>'
            f'<td style="{_CELL}{_NOWRAP}">{row.get("deployment") or ""}</td></tr>'
        )
    return (
        '<div style="max-height:320px;overflow-y:auto;overflow-x:hidden">'
        '<table style="border-collapse:collapse;font-size:12px;width:100%">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _details(row: Mapping[str, Any]) -> str:
    """One logged request, every field of it, with a Close button."""
    status = int(row["status"])
    fields = (
        ("time (UTC)", str(row["at"])),
        ("local time", local_time(str(row["at"]))),
        ("stage", row["stage"]),
        ("application", row["app"] or "(none: no application at this path)"),
        ("method", row["method"]),
        ("path", row["path"]),
        ("status", f"{status} {phrase(status)}".strip()),
        ("duration", f"{row['duration_ms']:.3f} ms"),
        ("deployment", row.get("deployment") or "(none)"),
    )
    items = "".join(
        f'<tr><th style="text-align:left;{_CELL}">{name}</th>'
        f'<td style="{_CELL};overflow-wrap:anywhere">{html.escape(str(value))}</td></tr>'
        for name, value in fields
    )
    return (
        '<div style="border:1px solid #d0d7de;border-radius:4px;padding:4px 8px;margin:4px 0">'
        "<b>Request</b> "
        '<button class="nk-logs-details-close jupyter-button widget-button" '
        'data-nk-event="close" data-nk-id="">Close</button>'
        f'<table style="border-collapse:collapse;font-size:12px">{items}</table></div>'
    )


# Darker shades of the chart colours, readable as text on white.
_TEXT_COLOURS = {"2xx": "#00704f", "3xx": "#1f6f99", "4xx": "#8a5a00", "5xx": "#b34700"}
