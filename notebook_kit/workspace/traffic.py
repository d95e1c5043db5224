"""The request log as people read it: which application a request went to, its status
class, and the filters the Logs tab and the notebook offer.

A logged row holds the stage, method, raw path, status, duration and time, the deployment
that answered (None outside the stages or for an application not deployed there) and the
entry's number (``id``). The
application is the path's second segment (``/{stage}/{app}/{resource...}``) when the first
one names a stage; a request outside the stages (``/openapi.json``, a typo) has none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..domain.models import Stage
from ..errors import ValidationError
from ..store.store import Store

__all__ = [
    "STATUS_CLASSES",
    "filter_requests",
    "request_app",
    "request_log",
    "status_class",
    "with_apps",
]

#: The status classes, in the order the charts stack them.
STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx")
_STAGES = frozenset(str(stage) for stage in Stage)


def request_app(stage: str, path: str) -> str:
    """The application a logged request addressed ('' when it addressed none)."""
    if stage not in _STAGES:
        return ""
    parts = path.split("?", 1)[0].split("/")
    return parts[2] if len(parts) > 2 else ""


def status_class(status: int) -> str:
    """'2xx' for 200 to 299 and so on; 1xx answers count with 2xx (none is logged today)."""
    if status >= 500:
        return "5xx"
    if status >= 400:
        return "4xx"
    if status >= 300:
        return "3xx"
    return "2xx"


def with_apps(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Log rows with their ``app`` (after ``stage``) added; ``deployment`` (the one that
    answered, or None), ``consumer`` (the caller's, by name: None without a known key),
    ``id`` (the entry's number), ``recorded`` (whether the request was recorded, so it
    can be replayed) and ``error`` (why the call gave no answer of its own, or how it
    broke its contract: None when neither) come last."""
    return [
        {
            "at": row["at"],
            "stage": row["stage"],
            "app": request_app(row["stage"], row["path"]),
            "method": row["method"],
            "path": row["path"],
            "status": row["status"],
            "duration_ms": row["duration_ms"],
            "deployment": row.get("deployment"),
            "consumer": row.get("consumer"),
            "id": row.get("id"),
            "recorded": row.get("request") is not None,
            "error": row.get("error"),
        }
        for row in rows
    ]


def filter_requests(
    rows: Iterable[Mapping[str, Any]],
    stage: str | None = None,
    app: str | None = None,
    status: str | None = None,
) -> list[Mapping[str, Any]]:
    """The rows (with ``app``) of ``stage``, ``app`` and status class ``status``; None (or
    '') keeps every value. An unknown stage or status class is refused."""
    if stage and stage not in _STAGES:
        raise ValidationError(f"stage must be 'dev' or 'prod', not {stage!r}", field="stage")
    if status and status not in STATUS_CLASSES:
        raise ValidationError(
            f"status class must be one of {', '.join(STATUS_CLASSES)}, not {status!r}",
            field="status",
        )
    return [
        row
        for row in rows
        if (not stage or row["stage"] == stage)
        and (not app or row["app"] == app)
        and (not status or status_class(row["status"]) == status)
    ]


def request_log(store: Store, keep: int, limit: int | None = None) -> list[dict[str, Any]]:
    """The newest ``limit`` log rows (all ``keep`` the log holds when None), oldest first,
    each with its ``app``."""
    return with_apps(store.request_log(keep if limit is None else min(limit, keep)))
