"""``fn``: the built-in functions an action calls as ``fn.<name>(...)``.

Each built-in is a method of ``Functions`` named as the spec names it. A function that
fails raises ``BuiltinError`` with a message saying why; an action that does not catch it
gets the runtime's 500 answer.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from .errors import BuiltinError

__all__ = ["Functions"]


class Functions:
    """The ``fn`` namespace. One instance per worker, shared by every action."""

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
