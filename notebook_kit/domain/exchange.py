"""The export document: one self-describing, versioned JSON file per application.

``to_document`` writes it; ``from_document`` reads it back, checking everything before
anything is written, so a bad file is refused whole. Examples travel in an optional
top-level ``examples`` list (``examples_from_document`` reads it): a file without one,
as every older export is, holds none, and older versions ignore the list. Schedules
travel the same way, in ``schedules`` (``schedules_from_document``); a deployment's
snapshot holds its schedules there too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import FormatError, NotebookKitError, ValidationError
from .actions import check_sources
from .clock import now
from .examples import Example
from .models import APPLICATION_TYPE, Application, Definition
from .schedules import Schedule, check_targets

__all__ = [
    "FORMAT",
    "examples_from_document",
    "from_document",
    "read_document",
    "schedules_from_document",
    "to_document",
]

FORMAT = "notebook-kit/1"
_DEFINITION_FIELDS = (
    "id",
    "label",
    "method",
    "resource",
    "content_type",
    "requires_auth",
    "action",
    "functions",
    "constants",
    "timeout",  # written only when set: files without it (and older files) import as None
    "contract",  # written only when declared (Definition.to_dict): older files hold none
)


def to_document(
    app: Application,
    definitions: list[Definition],
    examples: Sequence[Example] = (),
    schedules: Sequence[Schedule] = (),
) -> dict[str, Any]:
    """The export of ``app``; its ``examples`` and ``schedules`` are written only when it
    has some."""
    document = {
        "format": FORMAT,
        "exported_at": now(),
        "application": app.to_dict(),
        "definitions": [
            {
                k: v
                for k, v in d.to_dict().items()
                if k in _DEFINITION_FIELDS and (v is not None or k != "timeout")
            }
            for d in definitions
        ],
    }
    if examples:
        document["examples"] = [
            {k: v for k, v in e.to_dict().items() if k != "app"} for e in examples
        ]
    if schedules:
        document["schedules"] = [
            {k: v for k, v in s.to_dict().items() if k != "app"} for s in schedules
        ]
    return document


def read_document(path: str | Path) -> Any:
    """Load an export file, refusing anything that is not complete JSON (whose shape
    ``from_document`` checks)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise FormatError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise FormatError(f"{path} is not a notebook-kit export (not UTF-8 text)") from None
    try:
        return json.loads(text)
    except RecursionError:  # a file nested thousands of levels deep
        raise FormatError(
            f"{path} is not a notebook-kit export: its JSON is nested too deeply to read"
        ) from None
    except json.JSONDecodeError as exc:
        raise FormatError(
            f"{path} is not a notebook-kit export: invalid JSON at line {exc.lineno} "
            f"column {exc.colno} ({exc.msg}); is the file truncated?"
        ) from None


def from_document(document: Any) -> tuple[Application, list[Definition]]:
    """Validate a whole export document and return what it holds."""
    if not isinstance(document, dict) or "format" not in document:
        raise FormatError("not a notebook-kit export: the 'format' field is missing")
    if document["format"] != FORMAT:
        raise FormatError(
            f"unsupported export format {document['format']!r}; this version reads {FORMAT!r}"
        )
    app_data = document.get("application")
    if not isinstance(app_data, dict) or "id" not in app_data:
        raise FormatError("the export has no 'application' with an 'id'")
    app_type = app_data.get("type")
    if app_type != APPLICATION_TYPE:
        raise FormatError(
            f"only applications of type {APPLICATION_TYPE!r} can be imported; "
            f"this file holds type {app_type!r}"
        )
    items = document.get("definitions")
    if not isinstance(items, list):
        raise FormatError("the export has no 'definitions' list")
    try:
        app = Application.from_dict(app_data)
        definitions = []
        for number, item in enumerate(items, start=1):
            if not isinstance(item, dict):
                raise FormatError(f"definition {number} is not an object")
            missing = [k for k in ("id", "label", "method", "resource") if k not in item]
            if missing:
                raise FormatError(f"definition {number} lacks {', '.join(missing)}")
            definition = Definition.from_dict({**item, "app": app.id})
            check_sources(definition.action, definition.functions)
            definitions.append(definition)
    except FormatError:
        raise
    except NotebookKitError as exc:
        raise FormatError(f"the export holds an invalid definition: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise FormatError(f"the export is malformed: {type(exc).__name__}: {exc}") from None
    ids = [d.id for d in definitions]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValidationError(f"the export holds definition {repeated[0]!r} twice")
    return app, definitions


def examples_from_document(document: Any, definitions: list[Definition]) -> list[Example]:
    """Validate the examples of an export that ``from_document`` accepted (none when it
    has no ``examples`` list): each names one of its ``definitions`` and gives exactly
    that definition's path parameters."""
    items = document.get("examples", [])
    if not isinstance(items, list):
        raise FormatError("the export's 'examples' is not a list")
    app = document["application"]["id"]
    parameters = {d.id: d.path_parameters for d in definitions}
    examples: list[Example] = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise FormatError(f"example {number} is not an object")
        try:
            example = Example.from_dict({**item, "app": app})
        except NotebookKitError as exc:
            raise FormatError(f"the export holds an invalid example {number}: {exc}") from None
        if example.api_id not in parameters:
            raise FormatError(
                f"example {example.key} is of definition {example.api_id!r}, "
                "which the export does not hold"
            )
        try:
            example.check_parameters(parameters[example.api_id])
        except NotebookKitError as exc:
            raise FormatError(f"the export holds an invalid example: {exc}") from None
        if any(e.key == example.key for e in examples):
            raise FormatError(f"the export holds example {example.key} twice")
        examples.append(example)
    return examples


def schedules_from_document(document: Any, definitions: list[Definition]) -> list[Schedule]:
    """Validate the schedules of an export that ``from_document`` accepted (none when it
    has no ``schedules`` list): each runs one of its ``definitions``, one without path
    parameters."""
    items = document.get("schedules", [])
    if not isinstance(items, list):
        raise FormatError("the export's 'schedules' is not a list")
    app = document["application"]["id"]
    schedules: list[Schedule] = []
    for number, item in enumerate(items, start=1):
        try:
            schedule = Schedule.from_dict({**item, "app": app} if isinstance(item, dict) else item)
        except NotebookKitError as exc:
            raise FormatError(f"the export holds an invalid schedule {number}: {exc}") from None
        if any(s.name == schedule.name for s in schedules):
            raise FormatError(f"the export holds schedule {schedule.name!r} twice")
        schedules.append(schedule)
    try:
        check_targets(schedules, definitions)
    except NotebookKitError as exc:
        raise FormatError(f"the export holds an invalid schedule: {exc}") from None
    return schedules
