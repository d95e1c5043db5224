"""The reference of what an action can use, built from the code's own docstrings.

The studio's editor help shows it, and a test holds every built-in to having a docstring,
so the help cannot fall behind the code.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from ..domain.messages import ActionRequest, ActionResponse
from .artifacts import ArtifactFunctions
from .db import Database
from .functions import ActionsFunctions, Functions
from .http import HttpClient
from .oauth2 import OAuth2Client

__all__ = ["Entry", "action_reference"]

# (how an action reaches it, the class that implements it)
_NAMESPACES: tuple[tuple[str, type], ...] = (
    ("fn", Functions),
    ("fn.notebook_kit.oauth2", OAuth2Client),
    ("fn.notebook_kit.artifacts", ArtifactFunctions),
    ("fn.notebook_kit.actions", ActionsFunctions),
    ("db", Database),
    ("http", HttpClient),
)
_NOT_FOR_ACTIONS = {"close", "engine"}


@dataclass(frozen=True)
class Entry:
    """One name an action can use: ``fn.getFile(path)`` and what its docstring says."""

    name: str
    signature: str
    doc: str

    @property
    def summary(self) -> str:
        """The docstring's first paragraph, on one line."""
        return " ".join(self.doc.split("\n\n", 1)[0].split())


def _signature(function: object) -> str:
    """``(path, options=None)``: the call as an action writes it (no self, no types)."""
    signature = inspect.signature(function)  # type: ignore[arg-type]
    parameters = [
        p.replace(annotation=inspect.Parameter.empty)
        for p in signature.parameters.values()
        if p.name != "self"
    ]
    plain = signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty)
    return str(plain)


def action_reference() -> list[Entry]:
    """``req``, ``res`` and every public function of ``fn``, ``db`` and ``http``."""
    entries = [
        Entry("req", "", inspect.getdoc(ActionRequest) or ""),
        Entry("res", "", inspect.getdoc(ActionResponse) or ""),
    ]
    for prefix, namespace in _NAMESPACES:
        for name, member in sorted(vars(namespace).items()):
            if name.startswith("_") or name in _NOT_FOR_ACTIONS or not inspect.isfunction(member):
                continue
            entries.append(
                Entry(f"{prefix}.{name}", _signature(member), inspect.getdoc(member) or "")
            )
    return entries
