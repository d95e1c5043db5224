"""The request charts, drawn as inline SVG: requests per minute stacked by status class,
and latency p50/p99 per minute; and a consumer's calls per day (the Consumers tab).

The Logs tab and ``notebook_kit.request_charts(frame)`` draw with the same functions, from
the per-minute table of ``frames.request_minutes``. No plotting library and no network: the
SVG is text, shown by any notebook or browser. Colours are Okabe and Ito's palette, told
apart with the common colour-vision deficiencies; every bar and point also carries its
numbers as a tooltip (``<title>``).
"""

from __future__ import annotations

import html
import math
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pandas as pd

from ...workspace.traffic import STATUS_CLASSES
from ..frames import request_minutes

__all__ = [
    "CLASS_COLOURS",
    "RequestCharts",
    "latency_svg",
    "rate_svg",
    "request_charts",
    "usage_svg",
]

#: Status class -> colour (Okabe-Ito: bluish green, sky blue, orange, vermillion).
CLASS_COLOURS = {"2xx": "#009E73", "3xx": "#56B4E9", "4xx": "#E69F00", "5xx": "#D55E00"}
_P50, _P99 = "#0072B2", "#D55E00"  # blue solid, vermillion dashed
_DASH = ' stroke-dasharray="5 3"'
EMPTY_TEXT = "No requests yet: call an endpoint and its requests show here."

_WIDTH, _HEIGHT = 400, 240
_MAX_BAR = 36  # a lone minute is a bar, not a wall
_LEFT, _RIGHT, _TOP, _BOTTOM = 58, 12, 42, 42
_PLOT_W, _PLOT_H = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM


def _nice_ceiling(value: float) -> tuple[float, float]:
    """An axis top at or above ``value`` and its tick step (1, 2 or 5 times a power of 10)."""
    if not value > 0:  # also NaN
        return 1.0, 0.25
    raw = value / 4
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return step * math.ceil(value / step - 1e-9), step


def _number(value: float) -> str:
    return f"{value:g}" if value < 10_000 else f"{value:,.0f}"


def _frame(
    title: str,
    y_label: str,
    top: float,
    step: float,
    legend: list[tuple[str, str]],
    css: str,
    x_label: str = "time (UTC), per minute",
) -> list[str]:
    """The SVG's opening, title, y grid and ticks, axis labels and legend."""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{css}" role="img" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" height="{_HEIGHT}" '
        'style="max-width:100%;height:auto" '
        f'font-family="sans-serif" font-size="11" aria-label="{html.escape(title)}">',
        f"<title>{html.escape(title)}</title>",
        f'<text x="{_LEFT}" y="14" font-size="13" font-weight="bold">{html.escape(title)}</text>',
    ]
    ticks = round(top / step)
    for i in range(ticks + 1):
        value = step * i
        y = _TOP + _PLOT_H - _PLOT_H * value / top
        parts.append(
            f'<line x1="{_LEFT}" x2="{_LEFT + _PLOT_W}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="#ddd" stroke-width="1"/>'
            f'<text x="{_LEFT - 5}" y="{y + 4:.1f}" text-anchor="end">{_number(value)}</text>'
        )
    mid = _TOP + _PLOT_H / 2
    parts.append(
        f'<text class="nk-chart-y-label" x="14" y="{mid:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {mid:.1f})">{html.escape(y_label)}</text>'
        f'<text class="nk-chart-x-label" x="{_LEFT + _PLOT_W / 2:.1f}" y="{_HEIGHT - 4}" '
        f'text-anchor="middle">{html.escape(x_label)}</text>'
    )
    x = _WIDTH - _RIGHT
    for name, mark in reversed(legend):  # right-aligned, in reading order
        width = 22 + 7 * len(name)
        x -= width
        parts.append(
            f'<g class="nk-chart-legend">{mark.format(x=x, x2=x + 12)}'
            f'<text x="{x + 16}" y="32">{html.escape(name)}</text></g>'
        )
    return parts


def _x_axis(labels: list[str]) -> list[str]:
    """The baseline and up to six of ``labels`` (one a slot) under the slots."""
    count = len(labels)
    slot = _PLOT_W / count
    base = _TOP + _PLOT_H
    parts = [f'<line x1="{_LEFT}" x2="{_LEFT + _PLOT_W}" y1="{base}" y2="{base}" stroke="#333"/>']
    every = max(1, math.ceil(count / 6))
    for i in range(0, count, every):
        x = _LEFT + slot * (i + 0.5)
        parts.append(
            f'<text x="{x:.1f}" y="{base + 15}" text-anchor="middle">'
            f"{html.escape(labels[i])}</text>"
        )
    return parts


def rate_svg(per_minute: pd.DataFrame) -> str:
    """Requests per minute, one bar a minute stacked 2xx (bottom) to 5xx; '' if empty."""
    if per_minute.empty:
        return ""
    totals = per_minute[list(STATUS_CLASSES)].sum(axis=1)
    top, step = _nice_ceiling(float(totals.max()))
    legend = [
        (name, '<rect x="{x}" y="22" width="12" height="12" fill="' + colour + '"/>')
        for name, colour in CLASS_COLOURS.items()
    ]
    title, css = "Requests per minute", "nk-chart nk-chart-rate"
    parts = _frame(title, "requests / minute", top, step, legend, css)
    slot = _PLOT_W / len(per_minute)
    width = min(_MAX_BAR, max(1.0, slot * 0.8))
    for i, (minute, row) in enumerate(per_minute.iterrows()):
        x = _LEFT + slot * i + (slot - width) / 2
        y = float(_TOP + _PLOT_H)
        when = minute.strftime("%Y-%m-%d %H:%M UTC")  # type: ignore[union-attr]
        for name in STATUS_CLASSES:
            n = int(row[name])
            if not n:
                continue
            height = _PLOT_H * n / top
            y -= height
            parts.append(
                f'<rect class="nk-bar nk-bar-{name}" x="{x:.1f}" y="{y:.1f}" '
                f'width="{width:.1f}" height="{height:.1f}" fill="{CLASS_COLOURS[name]}">'
                f"<title>{when}: {n} answered {name}</title></rect>"
            )
    parts += _x_axis([m.strftime("%H:%M") for m in per_minute.index])
    parts.append("</svg>")
    return "".join(parts)


def latency_svg(per_minute: pd.DataFrame) -> str:
    """p50 and p99 latency per minute as two lines (gaps where a minute had no request)."""
    if per_minute.empty:
        return ""
    top, step = _nice_ceiling(float(per_minute["p99_ms"].max()))
    legend = [
        (
            name,
            f'<line x1="{{x}}" x2="{{x2}}" y1="28" y2="28" stroke="{colour}" '
            f'stroke-width="2"{dash}/>',
        )
        for name, colour, dash in (("p50", _P50, ""), ("p99", _P99, _DASH))
    ]
    title, css = "Latency per minute (p50, p99)", "nk-chart nk-chart-latency"
    parts = _frame(title, "milliseconds", top, step, legend, css)
    slot = _PLOT_W / len(per_minute)
    for column, colour, dash in (("p50_ms", _P50, ""), ("p99_ms", _P99, _DASH)):
        runs: list[list[str]] = [[]]
        for i, (minute, value) in enumerate(per_minute[column].items()):
            if pd.isna(value):
                runs.append([])
                continue
            x = _LEFT + slot * (i + 0.5)
            y = _TOP + _PLOT_H - _PLOT_H * float(value) / top
            runs[-1].append(f"{x:.1f},{y:.1f}")
            when = minute.strftime("%H:%M UTC")  # type: ignore[union-attr]
            parts.append(
                f'<circle class="nk-point nk-point-{column[:3]}" cx="{x:.1f}" cy="{y:.1f}" '
                f'r="2.5" fill="{colour}"><title>{when}: {column[:3]} '
                f"{float(value):.1f} ms</title></circle>"
            )
        parts += [
            f'<polyline class="nk-line nk-line-{column[:3]}" points="{" ".join(run)}" '
            f'fill="none" stroke="{colour}" stroke-width="2"{dash}/>'
            for run in runs
            if len(run) > 1
        ]
    parts += _x_axis([m.strftime("%H:%M") for m in per_minute.index])
    parts.append("</svg>")
    return "".join(parts)


def usage_svg(days: list[dict[str, Any]], today: str | None = None, span: int = 30) -> str:
    """A consumer's calls per UTC day (``Consumers.daily``), stacked answered (2xx/3xx),
    4xx and 5xx: the ``span`` days up to ``today`` (ISO date; default: today, UTC), days
    without a call drawn empty; '' if there is no call in them."""
    last = date.fromisoformat(today) if today else datetime.now(UTC).date()
    shown = [(last - timedelta(days=span - 1 - i)).isoformat() for i in range(span)]
    by_day = {str(d["day"]): d for d in days}
    rows = [by_day.get(day, {"calls": 0, "4xx": 0, "5xx": 0}) for day in shown]
    if not any(int(r["calls"]) for r in rows):
        return ""
    top, step = _nice_ceiling(float(max(int(r["calls"]) for r in rows)))
    colours = {"2xx/3xx": CLASS_COLOURS["2xx"], "4xx": CLASS_COLOURS["4xx"]}
    colours["5xx"] = CLASS_COLOURS["5xx"]
    legend = [
        (name, '<rect x="{x}" y="22" width="12" height="12" fill="' + colour + '"/>')
        for name, colour in colours.items()
    ]
    title, css = "Calls per day", "nk-chart nk-chart-usage"
    parts = _frame(title, "calls / day", top, step, legend, css, x_label="day (UTC)")
    slot = _PLOT_W / span
    width = min(_MAX_BAR, max(1.0, slot * 0.8))
    for i, (day, row) in enumerate(zip(shown, rows, strict=True)):
        x = _LEFT + slot * i + (slot - width) / 2
        y = float(_TOP + _PLOT_H)
        client, server = int(row["4xx"]), int(row["5xx"])
        counts = {"2xx/3xx": int(row["calls"]) - client - server, "4xx": client, "5xx": server}
        for name, n in counts.items():
            if n <= 0:
                continue
            height = _PLOT_H * n / top
            y -= height
            parts.append(
                f'<rect class="nk-bar nk-bar-{name[:3]}" x="{x:.1f}" y="{y:.1f}" '
                f'width="{width:.1f}" height="{height:.1f}" fill="{colours[name]}">'
                f"<title>{day}: {n} answered {name}</title></rect>"
            )
    parts += _x_axis([day[5:] for day in shown])  # MM-DD
    parts.append("</svg>")
    return "".join(parts)


class RequestCharts:
    """Both charts of a request log; a notebook displays them (``_repr_html_``).

    ``minutes`` is the per-minute table they are drawn from (``frames.request_minutes``);
    ``rate_svg`` and ``latency_svg`` the two SVG documents ('' when there is no request).
    """

    def __init__(self, minutes: pd.DataFrame) -> None:
        self.minutes = minutes
        self.rate_svg = rate_svg(minutes)
        self.latency_svg = latency_svg(minutes)

    @property
    def requests(self) -> int:
        return int(self.minutes[list(STATUS_CLASSES)].to_numpy().sum())

    def __repr__(self) -> str:
        n, minutes = self.requests, len(self.minutes)
        return (
            f"<RequestCharts: {n} request{'s' if n != 1 else ''} over {minutes} "
            f"minute{'s' if minutes != 1 else ''}>"
        )

    def _repr_html_(self) -> str:
        if not self.requests:
            return f'<p class="nk-logs-empty">{html.escape(EMPTY_TEXT)}</p>'
        return (
            '<div style="display:flex;flex-wrap:wrap;gap:12px">'
            f"<div>{self.rate_svg}</div><div>{self.latency_svg}</div></div>"
        )


def request_charts(frame: pd.DataFrame, minutes: int | None = 60) -> RequestCharts:
    """The Logs tab's charts for a request-log frame, to show in a notebook::

        import notebook_kit as nk
        nk.request_charts(ws.request_log_frame())

    ``minutes``: the last so many minutes up to the newest request (None: all). Filter the
    frame first to chart one stage or application (``frame[frame.stage == "prod"]``).
    """
    return RequestCharts(request_minutes(frame, minutes))
