"""The outbound calls of one action call, timed for tracing: ``http`` requests and ``db``
statements.

An action runs in a sandboxed process (or inline in a worker): that process exports
nothing. While tracing is on (the ``tracing`` setting: ``record(True)`` in each process
that runs action code) every ``http`` and ``db`` call an action makes is noted here,
with its clock readings (``time.perf_counter``: one clock for every process of the
machine) and how it ended; whatever ran the call takes the notes once the action has
answered (``take``) and hands them to the worker, which sends them with the call's log
entry to the supervisor, which makes them child spans of the call's span
(``runtime/process/tracing.py``). Off, nothing is noted: a call pays one check.

``http`` (``HttpClient.request``) notes its requests; ``TimedDatabase`` is what actions
get as ``db``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from time import perf_counter
from typing import Any

__all__ = ["TimedDatabase", "is_recording", "record", "take", "timed"]

#: One note: kind ("http", "db"), name, started, ended (perf_counter), error (None: it
#: answered), attributes.
Note = list[Any]

_notes: list[Note] | None = None  # None: not recording
_KEPT = 256  # notes kept per call at most (a loop of queries would flood the trace)


def record(on: bool) -> None:
    """Note outbound calls from now on (or stop), in this process."""
    global _notes
    if not on:
        _notes = None
    elif _notes is None:
        _notes = []


def is_recording() -> bool:
    return _notes is not None


def take() -> list[Note]:
    """The notes since the last take (empty when none, or not recording), forgotten."""
    global _notes
    if not _notes:
        return []
    taken, _notes = _notes, []
    return taken


@contextlib.contextmanager
def timed(kind: str, name: str, attributes: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Note the call made in the block (its ``attributes`` may be added to inside)."""
    notes = _notes
    started = perf_counter()
    try:
        yield attributes
    except BaseException as exc:
        if notes is not None and len(notes) < _KEPT:
            error = f"{type(exc).__name__}: {exc}".split("\n", 1)[0][:300]
            notes.append([kind, name, started, perf_counter(), error, attributes])
        raise
    if notes is not None and len(notes) < _KEPT:
        notes.append([kind, name, started, perf_counter(), None, attributes])


class TimedDatabase:
    """``db``: the database in force, every statement noted while recording (its verb);
    anything else is the database's own."""

    def __init__(self, database: Any) -> None:
        self._database = database

    def _call(self, operation: str, sql: str, *args: Any) -> Any:
        method = getattr(self._database, operation)
        if _notes is None:
            return method(sql, *args)
        verb = sql.split(None, 1)[0].upper() if sql.strip() else ""
        attributes = {"db.operation.name": verb, "db.query.text": sql[:500]}
        with timed("db", f"db.{operation} {verb}".strip(), attributes):
            return method(sql, *args)

    def query(self, sql: str, params: Any = ()) -> Any:
        return self._call("query", sql, params)

    def execute(self, sql: str, params: Any = ()) -> Any:
        return self._call("execute", sql, params)

    def executemany(self, sql: str, rows: Any) -> Any:
        return self._call("executemany", sql, rows)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[TimedDatabase]:
        with self._database.transaction() as inner:  # its statements, in the transaction
            yield TimedDatabase(inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._database, name)

    def __repr__(self) -> str:
        return repr(self._database)
