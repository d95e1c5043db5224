"""A node's metrics, counted from the request log's own batches, in Prometheus's text format.

Every call a worker answers reaches the supervisor as an entry of a log batch
(``log_writer``); ``Metrics.count`` reads the same batch the log stores, so after a run
of traffic (and the workers' last flush, ``FLUSH_SECONDS``) the counts equal the log's
rows exactly, summed over every worker of the node, replaced ones included. A batch the
log refuses as malformed is not counted either.

Series (``render``; the text exposition format 0.0.4):

* ``notebook_kit_requests_total`` and the histogram ``notebook_kit_request_duration_seconds``
  by ``stage``, ``application``, ``definition`` (the ID of the definition whose action
  ran; empty when none ran: a 404, a 403, a 429), ``method`` and ``status`` (``2xx``...);
  ``application`` is the path's when its action did not run and it is live on the stage,
  else empty. Past ``metrics_max_series`` label sets, new ones are counted under
  ``other`` (stage, application, definition and method; the status class is kept);
* ``notebook_kit_action_timeouts_total`` by stage, application, definition;
* ``notebook_kit_rate_limited_total`` (429s) by stage;
* gauges and counters the supervisor hands ``render`` (the reload generation and its
  age, the request-log backlog, readiness).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ...domain.answers import TIMEOUT_ERROR

__all__ = ["BUCKETS", "OTHER", "Metrics", "Sample"]

#: Upper bounds (seconds) of the latency histogram's buckets (+Inf follows): Prometheus
#: clients' defaults with 1 and 2.5 ms below (most calls answer in a few ms) and 30 s
#: above (the default action time limit is 29 s).
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
OTHER = "other"
_CLASSES = {1: "1xx", 2: "2xx", 3: "3xx", 4: "4xx", 5: "5xx"}
_REQUEST_LABELS = ("stage", "application", "definition", "method", "status")

#: (name, type, help, [(labels, value)]): what ``render`` writes besides the requests.
Sample = tuple[str, str, str, list[tuple[dict[str, str], float]]]


class _Series:
    __slots__ = ("buckets", "count", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.buckets = [0] * (len(BUCKETS) + 1)


class Metrics:
    """Request counters and latency histograms of one node (see the module docstring).
    ``max_series()`` is the setting in force; ``applications()`` the (stage, application)
    pairs live now."""

    def __init__(
        self,
        max_series: Callable[[], int],
        applications: Callable[[], frozenset[tuple[str, str]]],
    ) -> None:
        self._max_series = max_series
        self._applications = applications
        self._series: dict[tuple[str, str, str, str, str], _Series] = {}
        self.timeouts: Counter[tuple[str, str, str]] = Counter()
        self.rate_limited: Counter[str] = Counter()
        self.counted = 0

    def count(self, entries: Sequence[tuple[Any, ...]]) -> int:
        """Count a batch's entries (``decode_batch``'s: a batch the log refuses as
        malformed is not decoded, so not counted); returns how many."""
        groups: dict[tuple[Any, ...], list[float]] = {}
        for entry in entries:  # one pass; the labels are worked out once a group
            found = groups.get(entry[2:7])
            if found is None:
                found = groups[entry[2:7]] = []
            found.append(entry[1] - entry[0])
        series, limit, live = self._series, self._max_series(), self._applications()
        for (stage, (method, path), status, ran, error), durations in groups.items():
            if ran is not None:
                app, definition = ran[1], ran[2]
                if error is not None and error.startswith(TIMEOUT_ERROR):
                    self.timeouts[ran] += len(durations)
            else:
                definition = ""
                app = path.split("/", 3)[2] if path.count("/") >= 2 else ""
                if (stage, app) not in live:
                    app = ""
            if status == 429:
                self.rate_limited[stage] += len(durations)
            labels = (stage, app, definition, method, _CLASSES.get(status // 100, "other"))
            one = series.get(labels)
            if one is None:
                if len(series) >= limit:
                    labels = (OTHER, OTHER, OTHER, OTHER, labels[4])
                    one = series.get(labels)
                if one is None:
                    one = series[labels] = _Series()
            one.count += len(durations)
            one.total += sum(durations)
            buckets = one.buckets
            for took in durations:
                buckets[bisect_left(BUCKETS, took)] += 1
        self.counted += len(entries)
        return len(entries)

    def render(self, extra: Iterable[Sample] = ()) -> str:
        """Everything, in the Prometheus text exposition format (version 0.0.4)."""
        lines: list[str] = []
        _family(lines, "notebook_kit_requests_total", "counter", "Calls answered.")
        ordered = sorted(self._series.items())
        for labels, found in ordered:
            lines.append(f"notebook_kit_requests_total{_labels(labels)} {found.count}")
        name = "notebook_kit_request_duration_seconds"
        _family(lines, name, "histogram", "Time from a call's first byte read to its answer.")
        for labels, found in ordered:
            text = _labels(labels)[1:-1]
            running = 0
            for bound, hits in zip((*BUCKETS, math.inf), found.buckets, strict=True):
                running += hits
                lines.append(f'{name}_bucket{{{text},le="{_bound(bound)}"}} {running}')
            lines.append(f"{name}_sum{{{text}}} {_number(found.total)}")
            lines.append(f"{name}_count{{{text}}} {found.count}")
        timeouts: list[tuple[dict[str, str], float]] = [
            (dict(zip(("stage", "application", "definition"), k, strict=True)), v)
            for k, v in sorted(self.timeouts.items())
        ]
        rate_limited = [({"stage": k}, float(v)) for k, v in sorted(self.rate_limited.items())]
        samples: list[Sample] = [
            ("notebook_kit_action_timeouts_total", "counter", "Calls whose action ran past "
             "its time limit (504).", timeouts),
            ("notebook_kit_rate_limited_total", "counter", "Calls refused by a rate limit "
             "or quota (429).", rate_limited),
            *extra,
        ]  # fmt: skip
        for metric, kind, help_text, values in samples:
            _family(lines, metric, kind, help_text)
            for labels_of, value in values:
                text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels_of.items())
                lines.append(f"{metric}{{{text}}} {_number(value)}" if text else
                             f"{metric} {_number(value)}")  # fmt: skip
        return "\n".join(lines) + "\n"


def _family(lines: list[str], name: str, kind: str, help_text: str) -> None:
    lines.append(f"# HELP {name} {help_text}")
    lines.append(f"# TYPE {name} {kind}")


def _labels(values: tuple[str, ...]) -> str:
    pairs = zip(_REQUEST_LABELS, values, strict=True)
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _bound(value: float) -> str:
    return "+Inf" if value == math.inf else repr(float(value))  # as Prometheus's clients write it


def _number(value: float) -> str:
    if value == math.inf:
        return "+Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))
