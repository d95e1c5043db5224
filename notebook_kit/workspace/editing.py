"""Saving definitions: the rules a create or an edit must pass before it is written.

The action and the user functions must compile; an ID is unique in its application; a
new definition's application is created when missing. Each change is one transaction:
refused whole, or written whole.
"""

from __future__ import annotations

from typing import Any

from ..domain.actions import check_sources
from ..domain.models import Application, Definition
from ..errors import ConflictError, NotFoundError
from ..store.store import Store

__all__ = ["change_definition", "check_sources", "draft_definition", "insert_definition"]


def draft_definition(app: str, api_id: str, fields: dict[str, Any]) -> Definition:
    """The definition ``fields`` describe, checked as a save would check it (its fields and
    that its sources compile) but written nowhere: what the studio's "Run edited" runs."""
    definition = Definition(app, api_id, **fields)
    check_sources(definition.action, definition.functions)
    return definition


def insert_definition(store: Store, definition: Definition) -> Definition:
    """Save a new definition (and its application, if new)."""
    check_sources(definition.action, definition.functions)
    app, api_id = definition.app, definition.id
    with store.transaction():
        if store.get_definition(app, api_id):
            raise ConflictError(f"application {app!r} already has a definition {api_id!r}")
        if not store.get_application(app):
            store.put_application(Application(app))
        store.insert_definition(definition)
    return definition


def change_definition(store: Store, app: str, api_id: str, changes: dict[str, Any]) -> Definition:
    """Apply ``changes`` (field -> value; ``id`` renames) to a saved definition."""
    with store.transaction():
        current = store.get_definition(app, api_id)
        if current is None:
            raise NotFoundError(f"no definition {api_id!r} in application {app!r}")
        updated = current.with_changes(**changes)
        check_sources(updated.action, updated.functions)
        if updated.id != api_id and store.get_definition(app, updated.id):
            raise ConflictError(f"application {app!r} already has a definition {updated.id!r}")
        store.replace_definition(api_id, updated)
    return updated
