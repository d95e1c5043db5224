"""Saving definitions: the rules a create or an edit must pass before it is written.

The action and the user functions must compile; an ID is unique in its application; a
new definition's application is created when missing. Each change is one transaction:
refused whole, or written whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..domain.actions import check_sources
from ..domain.contracts import Contract
from ..domain.cors import check_origin, preflight_for, same_resource
from ..domain.models import Application, Constant, Definition
from ..errors import ConflictError, NotFoundError
from ..store.store import Store
from .applications import find_application

__all__ = [
    "add_preflight",
    "change_definition",
    "check_sources",
    "delete_definition",
    "draft_definition",
    "edit_changes",
    "find_definition",
    "insert_definition",
    "list_definitions",
]


def find_definition(store: Store, app: str, api_id: str) -> Definition:
    """The saved definition ``api_id`` of ``app``; NotFoundError when there is none."""
    found = store.get_definition(app, api_id)
    if found is None:
        raise NotFoundError(f"no definition {api_id!r} in application {app!r}")
    return found


def delete_definition(store: Store, app: str, api_id: str) -> None:
    """Remove a saved definition; what is live keeps it until the next deploy."""
    with store.transaction():
        find_definition(store, app, api_id)
        store.delete_definition(app, api_id)


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


def list_definitions(
    store: Store, app: str | None, label: str | None, search: str | None = None
) -> list[Definition]:
    """Saved definitions, of ``app`` if given (which must exist), whose label contains
    ``label`` and whose label, API ID or path contains ``search`` (``Definition.matches``),
    both case-insensitive, if given."""
    if app is not None:
        find_application(store, app)
    found = store.list_definitions(app)
    if label:
        needle = label.casefold()
        found = [d for d in found if needle in d.label.casefold()]
    return [d for d in found if d.matches(search)] if search else found


def edit_changes(
    new_id: str | None,
    label: str | None,
    method: str | None,
    resource: str | None,
    action: str | None,
    requires_auth: bool | None,
    functions: str | None,
    constants: Iterable[Constant] | None,
    content_type: str | None,
    timeout: float | None,
    contract: Any = None,
    *,
    unset: Any,
) -> dict[str, Any]:
    """The fields an edit changes (``Workspace.edit``'s keywords): each one given (not
    None), and ``content_type`` and ``timeout`` unless ``unset`` (None clears those two).
    ``contract``: a ``Contract`` or its dict (``{}`` clears it)."""
    given = {
        "id": new_id,
        "label": label,
        "method": method,
        "resource": resource,
        "action": action,
        "requires_auth": requires_auth,
        "functions": functions,
        "constants": None if constants is None else tuple(constants),
        "contract": None if contract is None else Contract.from_dict(contract),
    }
    changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if content_type is not unset:
        changes["content_type"] = content_type
    if timeout is not unset:
        changes["timeout"] = timeout
    return changes


def add_preflight(store: Store, app: str, api_id: str, origin: str = "*") -> Definition:
    """Save the CORS preflight (OPTIONS, no key) of ``api_id``'s resource: it lets a
    browser on ``origin`` send ``x-api-key`` and a JSON body to every method there.
    Refused when the resource already answers OPTIONS (edit that one instead)."""
    origin = check_origin(origin)
    with store.transaction():
        definition = find_definition(store, app, api_id)
        siblings = store.list_definitions(app)
        for other in siblings:
            if other.method == "OPTIONS" and same_resource(other, definition):
                raise ConflictError(
                    f"resource {definition.resource!r} already answers OPTIONS with "
                    f"{other.id!r}: edit that definition to allow content-type"
                )
        return insert_definition(store, preflight_for(definition, siblings, origin))
