"""pandas views of definitions, deployments and resource counts.

pandas is imported here only, and this module only when a view is asked for, so the core
and the server start without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..domain.models import Deployment

__all__ = [
    "definitions_frame",
    "deployments_frame",
    "groups_frame",
    "request_log_frame",
    "resources_frame",
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
        columns=["id", "app", "stage", "deployed_at", "host", "active"],
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


def request_log_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(
        list(rows), columns=["at", "stage", "method", "path", "status", "duration_ms"]
    )
    frame["at"] = pd.to_datetime(frame["at"], utc=True)
    return frame


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
