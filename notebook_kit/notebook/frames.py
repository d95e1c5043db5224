"""pandas views of definitions, deployments, resource counts and the request log.

pandas is imported here only, and this module only when a view is asked for, so the core
and the server start without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..domain.models import Deployment
from ..workspace.traffic import STATUS_CLASSES, status_class

__all__ = [
    "consumers_frame",
    "definitions_frame",
    "deployments_frame",
    "groups_frame",
    "request_log_frame",
    "request_minutes",
    "resources_frame",
    "usage_frame",
    "users_frame",
]

_DEFINITION_COLUMNS = [
    "app",
    "id",
    "label",
    "method",
    "resource",
    "content_type",
    "requires_auth",
    "dev",
    "prod",
    "updated_at",
]


def definitions_frame(listing: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per definition (``Workspace.listing``); ``dev``/``prod`` say 'deployed',
    'changed' or 'not deployed'."""
    return pd.DataFrame(list(listing), columns=_DEFINITION_COLUMNS)


def deployments_frame(deployments: Sequence[Deployment]) -> pd.DataFrame:
    frame = pd.DataFrame(
        [d.to_dict() for d in deployments],
        columns=["id", "app", "stage", "deployed_at", "host", "active", "description"],
    )
    frame["deployed_at"] = pd.to_datetime(frame["deployed_at"], utc=True)
    return frame


def resources_frame(resources: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per (stage, application) plus a '(root)' row; the column sums to the total."""
    rows = []
    for stage, counts in resources.items():
        rows.append({"stage": stage, "app": "(root)", "resources": 1})
        rows.extend(
            {"stage": stage, "app": app, "resources": n} for app, n in counts["apps"].items()
        )
    return pd.DataFrame(rows, columns=["stage", "app", "resources"])


_LOG_COLUMNS = [
    "at",
    "stage",
    "app",
    "method",
    "path",
    "status",
    "duration_ms",
    "deployment",
    "consumer",
    "id",
    "error",
]


def request_log_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per logged request (``Workspace.request_log``): ``at`` a UTC datetime,
    ``status`` an int, ``duration_ms`` a float, ``app`` '' for a path outside the stages,
    ``deployment`` the deployment that answered (``<NA>``: none), ``consumer`` the caller's
    consumer (None: no known key), ``id`` the entry's number (both nullable integers) and
    ``error`` why the call gave no answer of its own or how it broke its contract (None)."""
    frame = pd.DataFrame(list(rows), columns=_LOG_COLUMNS)
    for column in ("deployment", "id"):
        frame[column] = frame[column].astype("Int64")
    frame["at"] = pd.to_datetime(frame["at"], utc=True, format="ISO8601")
    frame["status"] = frame["status"].astype("int64")
    frame["duration_ms"] = frame["duration_ms"].astype("float64")
    return frame


def request_minutes(frame: pd.DataFrame, minutes: int | None = 60) -> pd.DataFrame:
    """The request log (``request_log_frame``) per minute: what the charts draw.

    Indexed by the minute (UTC, ``minute``); columns ``2xx`` ``3xx`` ``4xx`` ``5xx`` (the
    requests answered with that status class) and ``p50_ms`` ``p99_ms`` (the median and
    99th percentile of their durations, linearly interpolated as ``Series.quantile``
    does). Every minute from the first to the newest request is there: a quiet minute
    counts 0 and has no latency (NaN). ``minutes`` keeps only the last so many minutes up
    to the newest request (None: all of them).
    """
    columns = [*STATUS_CLASSES, "p50_ms", "p99_ms"]
    if frame.empty:
        empty = pd.DatetimeIndex([], tz="UTC", name="minute")
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in columns}, index=empty)
    minute = frame["at"].dt.floor("min").rename("minute")
    classes = frame["status"].map(status_class).rename("class")
    counts = pd.crosstab(minute, classes).reindex(columns=list(STATUS_CLASSES), fill_value=0)
    durations = frame["duration_ms"].groupby(minute)
    per_minute = counts.assign(p50_ms=durations.quantile(0.5), p99_ms=durations.quantile(0.99))
    end = per_minute.index.max()
    start = per_minute.index.min()
    if minutes is not None:
        start = max(start, end - pd.Timedelta(minutes=max(minutes, 1) - 1))
    every = pd.date_range(start, end, freq="min", name="minute")
    per_minute = per_minute.reindex(every)
    per_minute[list(STATUS_CLASSES)] = per_minute[list(STATUS_CLASSES)].fillna(0).astype("int64")
    per_minute.columns.name = None
    return per_minute[columns]


def users_frame(users: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per user of the directory; ``groups`` is a list, passwords never appear."""
    frame = pd.DataFrame(
        [
            {k: u[k] for k in ("email", "name", "groups", "hasPassword", "createdAt", "updatedAt")}
            for u in users
        ],
        columns=["email", "name", "groups", "hasPassword", "createdAt", "updatedAt"],
    )
    for column in ("createdAt", "updatedAt"):
        frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame


def groups_frame(groups: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per group with its number of users."""
    frame = pd.DataFrame(list(groups), columns=["name", "description", "userCount", "createdAt"])
    frame["createdAt"] = pd.to_datetime(frame["createdAt"], utc=True)
    return frame


_USAGE_COLUMNS = [
    "consumer",
    "application",
    "stage",
    "calls",
    "4xx",
    "5xx",
    "quota_used",
    "quota_left",
]


def usage_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per consumer, application and stage; quota columns are empty (NA) for a
    consumer without a quota."""
    frame = pd.DataFrame(list(rows), columns=_USAGE_COLUMNS)
    for column in ("consumer", "application", "stage"):  # str even when empty
        frame[column] = frame[column].astype("str")
    for column in ("calls", "4xx", "5xx"):
        frame[column] = frame[column].astype("int64")
    for column in ("quota_used", "quota_left"):
        frame[column] = frame[column].astype("Int64")
    return frame


def consumers_frame(consumers: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per consumer: its scope, limits and keys (by prefix; never a key)."""
    return pd.DataFrame(
        [
            {
                **{k: c[k] for k in ("name", "apps", "stages", "rate", "burst", "quota")},
                "keys": [k["prefix"] for k in c["keys"]],
                "builtin": c["builtin"],
            }
            for c in consumers
        ],
        columns=["name", "apps", "stages", "rate", "burst", "quota", "keys", "builtin"],
    )


_RUN_COLUMNS = [
    "id", "stage", "app", "schedule", "tick", "manual", "node", "status", "claimed_at",
    "started_at", "finished_at", "duration_ms", "error",
]  # fmt: skip


def schedule_runs_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per run of a schedule (``Workspace.schedule_runs``): ``tick`` and the
    claim, start and finish times as UTC datetimes (``NaT``: not yet), ``duration_ms`` a
    float (NaN while open), ``status`` and ``error`` as logged."""
    frame = pd.DataFrame(list(rows), columns=_RUN_COLUMNS)
    for column in ("tick", "claimed_at", "started_at", "finished_at"):
        frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
    frame["duration_ms"] = frame["duration_ms"].astype("float64")
    return frame
