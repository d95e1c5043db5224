"""``fn``: the built-in functions an action calls as ``fn.<name>(...)``.

Each built-in is a method of ``Functions`` named as the spec names it. A function that
fails raises ``BuiltinError`` with a message saying why; an action that does not catch it
gets the runtime's 500 answer.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

from .errors import BuiltinError
from .oauth2 import OAuth2Client

if TYPE_CHECKING:
    from .workspace import Workspace

__all__ = ["Functions", "VendorFunctions"]


class VendorFunctions:
    """``fn.notebook_kit``: the built-ins the spec files under ``<vendor>``."""

    def __init__(self, functions: Functions) -> None:
        workspace = functions._workspace
        self.oauth2 = OAuth2Client(workspace.settings if workspace is not None else dict)

    def __repr__(self) -> str:
        names = sorted(n for n in vars(self) if not n.startswith("_"))
        return f"<fn.notebook_kit: {', '.join(names)}>"


class Functions:
    """The ``fn`` namespace. One instance per worker, shared by every action.

    ``workspace`` gives the built-ins that need one (users, mail, files, settings) their
    workspace; without it they raise BuiltinError.
    """

    def __init__(self, workspace: Workspace | None = None) -> None:
        self._workspace = workspace
        self.notebook_kit = VendorFunctions(self)

    def _need_workspace(self, name: str) -> Workspace:
        if self._workspace is None:
            raise BuiltinError(f"{name} needs a workspace (fn was built without one)")
        return self._workspace

    def csvToObject(self, csv_text: str) -> list[dict[str, Any]]:
        """Parse CSV text into a list of dicts; the header row gives the keys.

        Quoted fields, embedded newlines and a leading byte-order mark are handled. A row
        shorter than the header gets ``None`` for the missing fields.
        """
        if isinstance(csv_text, bytes):
            csv_text = csv_text.decode("utf-8-sig")
        if not isinstance(csv_text, str):
            raise BuiltinError(f"csvToObject needs CSV text, not {type(csv_text).__name__}")
        try:
            reader = csv.DictReader(io.StringIO(csv_text.removeprefix("\ufeff"), newline=""))
            return [dict(row) for row in reader]
        except csv.Error as exc:
            raise BuiltinError(f"csvToObject: the CSV is malformed ({exc})") from None

    def __repr__(self) -> str:
        names = sorted(n for n in dir(self) if not n.startswith("_"))
        return f"<fn: {', '.join(names)}>"
