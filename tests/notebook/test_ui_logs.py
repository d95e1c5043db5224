"""The Logs tab from Python: a real workspace, a real server answering real HTTP, and the
panel reading what it logged (filters, table, charts, refreshing while active)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator

import httpx
import pytest
from support.polling import stays, wait_until

from notebook_kit import Workspace
from notebook_kit.notebook.ui.logs import LogsPanel
from notebook_kit.runtime.process.handles import BackgroundServer

EMPLOYEE = "/dev/restapi_sample/employee/E001"


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate()}


@pytest.fixture
def panel(sample_workspace: Workspace) -> Iterator[LogsPanel]:
    logs = LogsPanel(sample_workspace, interval=0.1)
    yield logs
    logs.close()


def _call(server: BackgroundServer, *paths: str, key: str = "") -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        for path in paths:
            client.get(path, headers={"x-api-key": key} if key else {})
    server.sync()


def test_empty_log_says_no_requests_yet_instead_of_empty_axes(panel: LogsPanel) -> None:
    assert panel.status.text == "No requests yet"
    assert panel.empty.layout.display is None and "No requests yet" in panel.empty.value
    assert panel.charts.layout.display == "none"
    assert panel.rate_chart.value == panel.latency_chart.value == ""


def test_request_log_rows_name_their_application(
    running_server: BackgroundServer, sample_workspace: Workspace
) -> None:
    _call(running_server, "/prod/restapi_sample/employee/E001", "/openapi.json")
    rows = sample_workspace.request_log()
    first = rows[0]
    assert (first["stage"], first["app"], first["status"]) == ("prod", "restapi_sample", 403)
    assert rows[1]["app"] == ""
    assert sample_workspace.request_log_frame()["app"].tolist() == ["restapi_sample", ""]


def test_panel_shows_table_and_charts_and_filters(
    running_server: BackgroundServer, panel: LogsPanel, keys: dict[str, str]
) -> None:
    _call(running_server, EMPLOYEE, EMPLOYEE, "/dev/ghost/x", key=keys["dev"])
    _call(running_server, "/prod/restapi_sample/employee/E001")  # no key: 403
    panel.refresh_button.click()
    assert panel.status.text == "4 of 4 logged requests match; the newest 4 are listed"
    assert panel.empty.layout.display == "none" and panel.charts.layout.display is None
    assert "<svg" in panel.rate_chart.value and "<svg" in panel.latency_chart.value
    assert panel.table.value.count("<tr") == 1 + 4  # the head and a row per request
    # a deleted or unknown application still appears in the filter: the log names it
    assert [v for _, v in panel.app.options] == ["", "ghost", "restapi_sample"]

    panel.stage.value = "prod"
    assert panel.table.value.count("<tr") == 2 and "nk-status-4xx" in panel.table.value
    assert 'class="nk-bar nk-bar-4xx"' in panel.rate_chart.value
    assert "nk-bar-2xx" not in panel.rate_chart.value

    panel.stage.value = ""
    panel.status_class.value = "2xx"
    assert panel.table.value.count("<tr") == 1 + 2
    panel.app.value = "ghost"
    assert panel.status.text == "None of the 4 logged requests matches"
    assert panel.empty.layout.display is None and panel.charts.layout.display == "none"

    panel.status_class.value = ""
    assert panel.table.value.count("<tr") == 2 and "/dev/ghost/x" in panel.table.value


def test_load_filters_to_the_studio_application(
    running_server: BackgroundServer, panel: LogsPanel
) -> None:
    _call(running_server, "/dev/ghost/x", "/dev/restapi_sample/nothing")
    panel.load("restapi_sample")
    assert panel.app.value == "restapi_sample"
    assert "/dev/ghost/x" not in panel.table.value and "/dev/restapi_sample/nothing" in (
        panel.table.value
    )
    panel.load("")
    assert panel.app.value == "" and "/dev/ghost/x" in panel.table.value


def test_active_panel_refreshes_itself_and_stops_when_inactive(
    running_server: BackgroundServer, panel: LogsPanel
) -> None:
    panel.set_active(True)
    assert panel.active and "notebook_kit logs refresh" in _threads()
    _call(running_server, EMPLOYEE)
    wait_until(lambda: "1 of 1 logged" in panel.status.text, within=2)
    panel.set_active(False)
    assert not panel.active and "notebook_kit logs refresh" not in _threads()
    _call(running_server, EMPLOYEE)
    drawn = panel.status.text
    assert len(running_server.workspace.request_log()) == 2
    stays(lambda: panel.status.text == drawn, 0.4)  # four intervals: no redraw
    panel.refresh()
    assert panel.status.text.startswith("2 of 2")


def test_close_stops_the_refresh_thread(sample_workspace: Workspace) -> None:
    logs = LogsPanel(sample_workspace, interval=0.05)
    logs.set_active(True)
    logs.set_active(True)  # a second activation starts no second thread
    assert [t.name for t in threading.enumerate()].count("notebook_kit logs refresh") == 1
    logs.close()
    assert "notebook_kit logs refresh" not in _threads()


def test_a_store_that_fails_shows_in_the_status_and_the_refresh_goes_on(
    workspace: Workspace,
) -> None:
    logs = LogsPanel(workspace, interval=0.05)
    logs.set_active(True)
    try:
        wait_until(lambda: logs.status.text == "No requests yet")
        with sqlite3.connect(workspace.home / "workspace.sqlite3") as other:
            other.execute("DROP TABLE request_log_batches")  # another process broke it
        wait_until(lambda: "Could not read the request log" in logs.status.text, within=2)
        assert "nk-status-error" in logs.status._dom_classes
        assert logs.active and "notebook_kit logs refresh" in _threads()
        with sqlite3.connect(workspace.home / "workspace.sqlite3") as other:  # repaired
            other.execute(
                "CREATE TABLE request_log_batches (id INTEGER PRIMARY KEY, entries INTEGER, "
                "rows BLOB, upto INTEGER NOT NULL DEFAULT 0)"
            )
        wait_until(lambda: logs.status.text == "No requests yet", within=2)
        assert "nk-status-error" not in logs.status._dom_classes
    finally:
        logs.close()


def test_a_row_opens_its_whole_entry(
    running_server: BackgroundServer, panel: LogsPanel, keys: dict[str, str]
) -> None:
    _call(running_server, EMPLOYEE, key=keys["dev"])
    _call(running_server, "/prod/restapi_sample/employee/E001")  # no key: 403
    panel.refresh_button.click()
    assert 'data-nk-event="open" data-nk-id="0"' in panel.table.value
    assert panel.details.value == ""
    panel.table.click("open", "0")  # the newest row, as a click in the browser sends
    newest = panel.workspace.request_log()[-1]
    for text in (
        "/prod/restapi_sample/employee/E001",
        "403 Forbidden",
        newest["at"],
        f"{newest['duration_ms']:.3f} ms",
        "restapi_sample",
    ):
        assert text in panel.details.value
    panel.table.click("open", "9")  # no such row: nothing breaks, the entry stays
    assert "403 Forbidden" in panel.details.value
    panel.details.click("close", "")
    assert panel.details.value == ""


def test_the_charts_sit_side_by_side_and_the_table_fits_its_pane(panel: LogsPanel) -> None:
    assert panel.charts.layout.flex_flow in (None, "row")  # no wrapping under each other
    assert all(c.layout.flex == "1 1 0" for c in (panel.rate_chart, panel.latency_chart))
    children = list(panel.children)
    assert children.index(panel.charts) < children.index(panel.table)
