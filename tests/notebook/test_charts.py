"""The request log as data and as pictures: the app and status class of a logged request,
the filters, the per-minute aggregation (known numbers), and the SVG charts drawn from it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pandas as pd
import pytest

import notebook_kit
from notebook_kit.errors import ValidationError
from notebook_kit.notebook.frames import request_log_frame, request_minutes
from notebook_kit.notebook.ui.charts import (
    CLASS_COLOURS,
    EMPTY_TEXT,
    RequestCharts,
    latency_svg,
    rate_svg,
    request_charts,
)
from notebook_kit.workspace.traffic import (
    filter_requests,
    request_app,
    status_class,
    with_apps,
)

SVG = "{http://www.w3.org/2000/svg}"


def _row(at: str, status: int = 200, ms: float = 10.0, path: str = "/dev/a/x") -> dict[str, Any]:
    stage = path.split("/")[1]
    return {
        "at": at,
        "stage": stage,
        "method": "GET",
        "path": path,
        "status": status,
        "duration_ms": ms,
    }


# Three minutes: 10:00 has four requests (2xx, 2xx, 4xx, 5xx, 10..40 ms), 10:01 none,
# 10:02 one 3xx of 7 ms.
ROWS = with_apps(
    [
        _row("2026-11-23T10:00:01.000Z", 200, 10.0),
        _row("2026-11-23T10:00:15.000Z", 201, 20.0),
        _row("2026-11-23T10:00:30.000Z", 404, 30.0, "/prod/b/y"),
        _row("2026-11-23T10:00:59.999Z", 500, 40.0),
        _row("2026-11-23T10:02:00.000Z", 302, 7.0),
    ]
)


@pytest.mark.parametrize(
    ("stage", "path", "app"),
    [
        ("dev", "/dev/restapi_sample/employee/E001", "restapi_sample"),
        ("prod", "/prod/shop", "shop"),
        ("prod", "/prod/shop/items?x=1", "shop"),
        ("dev", "/dev", ""),
        ("dev", "/dev/", ""),
        ("openapi.json", "/openapi.json", ""),
        ("favicon.ico", "/favicon.ico", ""),
    ],
)
def test_request_app_is_the_segment_after_the_stage(stage: str, path: str, app: str) -> None:
    assert request_app(stage, path) == app


@pytest.mark.parametrize(
    ("status", "kind"),
    [(100, "2xx"), (200, "2xx"), (299, "2xx"), (301, "3xx"), (400, "4xx"), (429, "4xx"),
     (499, "4xx"), (500, "5xx"), (504, "5xx")],
)  # fmt: skip
def test_status_class_of_each_status(status: int, kind: str) -> None:
    assert status_class(status) == kind


def test_filter_requests_by_stage_app_and_status_class() -> None:
    assert len(filter_requests(ROWS)) == 5
    assert [r["status"] for r in filter_requests(ROWS, stage="prod")] == [404]
    assert [r["status"] for r in filter_requests(ROWS, app="a")] == [200, 201, 500, 302]
    assert [r["status"] for r in filter_requests(ROWS, status="2xx")] == [200, 201]
    assert filter_requests(ROWS, stage="dev", app="b") == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"stage": "test"}, "stage must be"), ({"status": "6xx"}, "status class must be")],
)
def test_filter_requests_refuses_unknown_stage_or_class(
    kwargs: dict[str, str], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        filter_requests(ROWS, **kwargs)


def test_request_log_frame_has_types_and_app_column() -> None:
    frame = request_log_frame(ROWS)
    assert list(frame.columns) == [
        "at", "stage", "app", "method", "path", "status", "duration_ms", "deployment",
        "consumer", "id", "error",
    ]  # fmt: skip
    assert str(frame["at"].dtype).startswith("datetime64") and str(frame["at"].dt.tz) == "UTC"
    assert frame["status"].dtype == "int64" and frame["duration_ms"].dtype == "float64"
    assert frame["app"].tolist() == ["a", "a", "b", "a", "a"]
    assert frame["at"][3] == pd.Timestamp("2026-11-23T10:00:59.999Z")
    empty = request_log_frame([])
    assert empty.empty and str(empty["at"].dtype).startswith("datetime64")


def test_request_minutes_counts_classes_and_percentiles() -> None:
    minutes = request_minutes(request_log_frame(ROWS))
    assert [str(t) for t in minutes.index] == [
        "2026-11-23 10:00:00+00:00",
        "2026-11-23 10:01:00+00:00",
        "2026-11-23 10:02:00+00:00",
    ]
    assert minutes[["2xx", "3xx", "4xx", "5xx"]].values.tolist() == [
        [2, 0, 1, 1],
        [0, 0, 0, 0],
        [0, 1, 0, 0],
    ]
    # linear interpolation over 10, 20, 30, 40: p50 = 25, p99 = 30 + 0.97 * 10
    assert minutes["p50_ms"].iloc[0] == pytest.approx(25.0)
    assert minutes["p99_ms"].iloc[0] == pytest.approx(39.7)
    assert minutes["p50_ms"].isna().tolist() == [False, True, False]
    assert minutes["p99_ms"].iloc[2] == pytest.approx(7.0)


def test_request_minutes_keeps_the_last_minutes_and_handles_empty() -> None:
    frame = request_log_frame(ROWS)
    last_two = request_minutes(frame, minutes=2)
    assert [t.minute for t in last_two.index] == [1, 2]
    assert len(request_minutes(frame, minutes=None)) == 3
    empty = request_minutes(request_log_frame([]))
    assert empty.empty and list(empty.columns) == ["2xx", "3xx", "4xx", "5xx", "p50_ms", "p99_ms"]


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # well-formed XML, or this raises


def test_rate_chart_stacks_one_rect_per_class_and_minute() -> None:
    minutes = request_minutes(request_log_frame(ROWS))
    root = _parse(rate_svg(minutes))
    bars = [r for r in root.iter(f"{SVG}rect") if "nk-bar" in r.get("class", "")]
    assert sorted(b.get("class") for b in bars) == [
        "nk-bar nk-bar-2xx", "nk-bar nk-bar-3xx", "nk-bar nk-bar-4xx", "nk-bar nk-bar-5xx"
    ]  # fmt: skip
    heights = {b.get("class", "").split("-")[-1]: float(b.get("height", 0)) for b in bars}
    assert heights["2xx"] == pytest.approx(2 * heights["4xx"], abs=0.11)
    assert {b.get("fill") for b in bars} == set(CLASS_COLOURS.values())
    texts = "".join(root.itertext())
    for label in ("2xx", "3xx", "4xx", "5xx", "requests / minute", "time (UTC)", "10:00"):
        assert label in texts
    # the 2xx bar sits on the baseline, the 4xx on top of it
    two, four = (next(b for b in bars if b.get("class", "").endswith(k)) for k in ("2xx", "4xx"))
    assert float(four.get("y", 0)) + float(four.get("height", 0)) == pytest.approx(
        float(two.get("y", 0)), abs=0.11
    )


def test_latency_chart_draws_points_and_breaks_lines_at_quiet_minutes() -> None:
    minutes = request_minutes(request_log_frame(ROWS))
    root = _parse(latency_svg(minutes))
    points = [c.get("class") for c in root.iter(f"{SVG}circle")]
    assert points.count("nk-point nk-point-p50") == 2  # 10:00 and 10:02, none at 10:01
    assert points.count("nk-point nk-point-p99") == 2
    assert list(root.iter(f"{SVG}polyline")) == []  # no two neighbouring minutes to join
    texts = "".join(root.itertext())
    assert "p50" in texts and "p99" in texts and "milliseconds" in texts
    dense = request_minutes(request_log_frame([*ROWS[:4], _row("2026-11-23T10:01:00Z")]))
    lines = [p.get("class") for p in _parse(latency_svg(dense)).iter(f"{SVG}polyline")]
    assert lines == ["nk-line nk-line-p50", "nk-line nk-line-p99"]


def test_request_charts_display_both_svgs_or_a_friendly_empty_note() -> None:
    charts = notebook_kit.request_charts(request_log_frame(ROWS))
    assert isinstance(charts, RequestCharts) and charts.requests == 5
    shown = charts._repr_html_()
    assert shown.count("<svg") == 2 and "nk-chart-rate" in shown and "nk-chart-latency" in shown
    assert repr(charts) == "<RequestCharts: 5 requests over 3 minutes>"
    empty = request_charts(request_log_frame([]))
    assert empty.rate_svg == empty.latency_svg == ""
    assert "<svg" not in empty._repr_html_() and "No requests yet" in empty._repr_html_()
    assert EMPTY_TEXT.startswith("No requests yet")


def test_single_request_draws_sensible_axes() -> None:
    minutes = request_minutes(request_log_frame([_row("2026-11-23T10:00:00Z", ms=0.3)]))
    root = _parse(latency_svg(minutes))
    assert "0.3" in "".join(root.itertext())  # the axis reaches the one value
    assert repr(request_charts(request_log_frame(ROWS[:1]))) == (
        "<RequestCharts: 1 request over 1 minute>"
    )
    assert len(list(root.iter(f"{SVG}circle"))) == 2
