"""What the built-ins are given: a small context, never the Workspace or the store.

``BuiltinContext`` holds the workspace directory (file storage, the default environment
database), a way to read the settings and the ``Services`` that only the trusted side
can answer (users, mail, presigned links, OAuth2: see ``services``). In a sandboxed
process the settings are the snapshot it was handed (secrets left out) and the services
are requests over a channel; on the trusted side (the notebook, the CLI) they are the
store's own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .services import Services

__all__ = ["BuiltinContext", "Settings"]

Settings = Callable[[], Mapping[str, Any]]


@dataclass(frozen=True)
class BuiltinContext:
    """The workspace directory, the settings in force (a callable) and the services of
    the trusted side."""

    home: Path
    settings: Settings
    services: Services

    def setting(self, name: str) -> Any:
        return self.settings()[name]
