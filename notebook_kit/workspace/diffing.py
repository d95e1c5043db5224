"""What a deploy would change: the saved definitions of an application against what a
stage serves now.

A definition is ``added`` (saved, not live), ``removed`` (live, no longer saved) or
``changed`` (both, with different content; timestamps do not count). A definition renamed
since the deploy is one ``changed`` entry whose ``id`` field changed, not a removal plus an
addition: it is paired with the live definition it was (same creation time, else the same
method and resource), as the definitions table's "live as OLD_ID" state does.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from ..domain.models import Definition, Stage
from ..errors import NotFoundError
from .publishing import Publisher, former_self

__all__ = [
    "DefinitionChange",
    "FieldChange",
    "StageDiff",
    "diff_definitions",
    "field_changes",
    "stage_diff",
]

# The fields compared, in the order a person reads a definition.
FIELDS = (
    "id",
    "label",
    "method",
    "resource",
    "content_type",
    "requires_auth",
    "timeout",
    "constants",
    "action",
    "functions",
)
_SOURCE_FIELDS = ("action", "functions")


@dataclass(frozen=True)
class FieldChange:
    """One field that differs: its live and saved values as text, and for the action and
    the user functions a unified diff (live first, saved second)."""

    name: str
    live: str
    saved: str
    unified: str = ""


@dataclass(frozen=True)
class DefinitionChange:
    """One definition that differs between saved and live. ``id`` is the saved ID (the
    live one for a removal); ``live_id`` the ID it is served under, when it is live."""

    id: str
    kind: str  # "added" | "removed" | "changed"
    method: str
    resource: str
    live_id: str | None = None
    fields: tuple[FieldChange, ...] = ()


@dataclass(frozen=True)
class StageDiff:
    """The saved definitions of ``app`` against what ``stage`` serves.

    ``deployment_id`` is the live deployment (None: not deployed, every saved definition
    is then ``added``)."""

    app: str
    stage: Stage
    deployment_id: int | None
    changes: tuple[DefinitionChange, ...]
    unchanged: int

    @property
    def in_sync(self) -> bool:
        """True if a deploy would serve exactly what the stage serves now."""
        return self.deployment_id is not None and not self.changes

    def to_dict(self) -> dict[str, Any]:
        return {
            "app": self.app,
            "stage": str(self.stage),
            "deployment_id": self.deployment_id,
            "in_sync": self.in_sync,
            "unchanged": self.unchanged,
            "changes": [
                {
                    "id": c.id,
                    "kind": c.kind,
                    "method": c.method,
                    "resource": c.resource,
                    "live_id": c.live_id,
                    "fields": [f.__dict__ for f in c.fields],
                }
                for c in self.changes
            ],
        }


def _text(name: str, value: Any) -> str:
    if name == "constants":
        return json.dumps([c.to_dict() for c in value], ensure_ascii=False)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _unified(name: str, live: str, saved: str) -> str:
    lines = difflib.unified_diff(
        live.splitlines(),
        saved.splitlines(),
        fromfile=f"{name} (live)",
        tofile=f"{name} (saved)",
        lineterm="",
    )
    return "\n".join(lines)


def field_changes(live: Definition, saved: Definition) -> tuple[FieldChange, ...]:
    """The fields of ``saved`` that differ from ``live`` (timestamps ignored)."""
    found = []
    for name in FIELDS:
        old, new = _text(name, getattr(live, name)), _text(name, getattr(saved, name))
        if old != new:
            unified = _unified(name, old, new) if name in _SOURCE_FIELDS else ""
            found.append(FieldChange(name, old, new, unified))
    return tuple(found)


def diff_definitions(
    saved: list[Definition], live: list[Definition]
) -> tuple[list[DefinitionChange], int]:
    """The changes from ``live`` to ``saved`` (one application's), and how many are the same.

    Saved definitions come in their saved order, then the removed ones in live order."""
    live_by_id = {d.id: d for d in live}
    saved_ids = {d.id for d in saved}
    orphans = [d for d in live if d.id not in saved_ids]
    changes: list[DefinitionChange] = []
    unchanged = 0
    for d in saved:
        was = live_by_id.get(d.id)
        if was is None:
            was = former_self(d, orphans)
            if was is not None:
                orphans.remove(was)
        if was is None:
            changes.append(DefinitionChange(d.id, "added", d.method, d.resource))
            continue
        fields = field_changes(was, d)
        if fields:
            changes.append(DefinitionChange(d.id, "changed", d.method, d.resource, was.id, fields))
        else:
            unchanged += 1
    changes += [DefinitionChange(o.id, "removed", o.method, o.resource, o.id) for o in orphans]
    return changes, unchanged


def stage_diff(publisher: Publisher, app: str, stage: Stage) -> StageDiff:
    """The saved definitions of ``app`` against what ``stage`` serves now."""
    saved = publisher.store.list_definitions(app)
    try:
        _, live, deployment_id = publisher.live_snapshot(app, stage)
    except NotFoundError:
        live, deployment_id = [], None
    changes, unchanged = diff_definitions(saved, live)
    return StageDiff(app, stage, deployment_id, tuple(changes), unchanged)
