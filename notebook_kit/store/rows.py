"""Rows to models and back: the one place a table's columns meet a model's fields."""

from __future__ import annotations

import json
from typing import Any

from ..domain.models import Definition, Deployment, Stage

__all__ = ["definition_from_row", "definition_values", "deployment_from_row"]


def definition_from_row(row: Any) -> Definition:
    return Definition.from_dict(
        {
            "app": row["app_id"],
            "id": row["api_id"],
            "label": row["label"],
            "method": row["method"],
            "resource": row["resource"],
            "content_type": row["content_type"],
            "requires_auth": bool(row["requires_auth"]),
            "action": row["action"],
            "functions": row["functions"],
            "constants": json.loads(row["constants"]),
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
            "timeout": row["timeout"],
            "contract": json.loads(row["contract"]) if row["contract"] else None,
        }
    )


def definition_values(d: Definition) -> tuple[Any, ...]:
    constants = json.dumps([c.to_dict() for c in d.constants])
    return (
        d.app,
        d.id,
        d.label,
        d.method,
        d.resource,
        d.content_type,
        int(d.requires_auth),
        d.action,
        d.functions,
        constants,
        d.created_at,
        d.updated_at,
        d.timeout,
        None if d.contract.is_empty else json.dumps(d.contract.to_dict()),
    )


def deployment_from_row(row: Any) -> Deployment:
    """A ``deployments`` row joined with ``live`` (its ``active`` column)."""
    return Deployment(
        row["id"],
        row["app_id"],
        Stage(row["stage"]),
        row["deployed_at"],
        row["host"],
        bool(row["active"]),
        bool(row["forced"]),
        json.loads(row["checks"]) if row["checks"] else None,
        description=row["description"],
    )
