"""Applications in and out of a workspace: export files written whole, imports checked whole.

An export (or any JSON document the workspace writes) goes to ``NAME.partial`` first and
is renamed over the target, so a reader never sees half a file. An import is validated
(``exchange.from_document``) before anything is written, and replaces an existing
application's definitions only when asked to.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import replace as with_fields
from pathlib import Path
from typing import Any

from ..domain import exchange
from ..domain.models import Application, Definition
from ..errors import ConflictError, ValidationError
from ..store.store import Store

__all__ = ["copy_definition", "export_document", "import_document", "write_json"]


def write_json(path: str | os.PathLike[str], document: Any) -> Path:
    """Write ``document`` as indented JSON to ``path`` (all of it, or nothing)."""
    target = Path(path)
    text = json.dumps(document, indent=2) + "\n"
    partial = target.with_name(target.name + ".partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(target)
    except OSError as exc:
        message = f"cannot write {target}: {exc.strerror}"
        raise ValidationError(message, field="output") from None
    return target


def import_document(
    store: Store, source: str | os.PathLike[str] | Mapping[str, Any], replace: bool
) -> Application:
    """Store the application of an export (a path, or the document as read; checked here)
    if it is valid; see ``Workspace.import_application``."""
    if isinstance(source, Mapping):
        document: Any = dict(source)
    else:
        document = exchange.read_document(os.fspath(source))
    app, definitions = exchange.from_document(document)
    examples = exchange.examples_from_document(document, definitions)
    schedules = exchange.schedules_from_document(document, definitions)
    with store.transaction():
        if store.get_application(app.id):
            if not replace:
                raise ConflictError(
                    f"application {app.id!r} already exists; to overwrite its definitions, "
                    "import with replace=True (CLI: --replace)"
                )
            for old in store.list_definitions(app.id):
                store.delete_definition(app.id, old.id)
            for schedule in store.schedules.list(app.id):
                store.schedules.delete(app.id, schedule.name)
        store.put_application(app)
        for definition in definitions:
            store.insert_definition(definition)
        for example in examples:
            store.examples.put(example)
        for schedule in schedules:
            store.schedules.put(schedule)
    return app


def export_document(store: Store, app: Application) -> dict[str, Any]:
    """The export document of ``app``: its definitions, their examples, its schedules."""
    return exchange.to_document(
        app,
        store.list_definitions(app.id),
        store.examples.list(app.id),
        store.schedules.list(app.id),
    )


def copy_definition(
    store: Store, source: Definition, to_app: str, new_id: str | None = None
) -> Definition:
    """Insert a copy of ``source`` into ``to_app`` (created if missing) as ``new_id``,
    its examples copied along."""
    target_id = new_id or source.id
    with store.transaction():
        if store.get_definition(to_app, target_id):
            raise ConflictError(
                f"application {to_app!r} already has a definition {target_id!r}; choose another ID"
            )
        if not store.get_application(to_app):
            store.put_application(Application(to_app))
        copied = Definition.from_dict(
            {
                **source.to_dict(),
                "app": to_app,
                "id": target_id,
                "created_at": None,
                "updated_at": None,
            }
        )
        store.insert_definition(copied)
        for example in store.examples.list(source.app, source.id):
            store.examples.put(with_fields(example, app=to_app, api_id=target_id))
    return copied
