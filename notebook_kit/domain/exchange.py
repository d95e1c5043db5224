"""The export document: one self-describing, versioned JSON file per application.

``to_document`` writes it; ``from_document`` reads it back, checking everything before
anything is written, so a bad file is refused whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import FormatError, NotebookKitError, ValidationError
from .actions import check_sources
from .clock import now
from .models import APPLICATION_TYPE, Application, Definition

__all__ = ["FORMAT", "from_document", "read_document", "to_document"]

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
)


def to_document(app: Application, definitions: list[Definition]) -> dict[str, Any]:
    return {
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


def read_document(path: str | Path) -> dict[str, Any]:
    """Load an export file, refusing anything that is not complete JSON."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise FormatError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise FormatError(f"{path} is not a notebook-kit export (not UTF-8 text)") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(
            f"{path} is not a notebook-kit export: invalid JSON at line {exc.lineno} "
            f"column {exc.colno} ({exc.msg}); is the file truncated?"
        ) from None
    return document


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
