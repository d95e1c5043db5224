"""What a built-in failed at during one call, kept for the call's log entry.

An action may catch a built-in's error and answer on its own: the sample's employee
lookup catches a failed ``db.query`` and answers 500 ``System error.``, byte for byte as
written. The caller learns nothing more, as the action wants, but the operator must: so
the built-in notes its failure here before raising, and whatever ran the call (the
worker's inline path, an action process) takes the note once the action has answered
and puts it in the call's request-log entry. An action that does not catch the error
raises it, and its log entry (and a dev answer) names it anyway.

One note per call, the first failure (the cause; later ones tend to follow from it),
per thread: a call runs on one thread from start to end.
"""

from __future__ import annotations

import threading

from ..domain.answers import CAUGHT_ERROR
from ..errors import BuiltinError

__all__ = ["failed", "take_failure"]


class _Noted(threading.local):
    text: str | None = None


_noted = _Noted()


def failed(text: str) -> BuiltinError:
    """``text`` as the error to raise, noted for this call's log entry unless an earlier
    failure of the same call is noted already. Only its first line is kept (a
    PostgreSQL message goes on with the statement and a caret)."""
    if _noted.text is None:
        _noted.text = text.split("\n", 1)[0].strip()
    return BuiltinError(text)


def take_failure() -> str | None:
    """The failure noted since the last take (None: none), as a log entry's error, and
    forgotten."""
    text = _noted.text
    if text is None:
        return None
    _noted.text = None
    return f"{CAUGHT_ERROR} BuiltinError: {text}"
