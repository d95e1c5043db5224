"""One SQLite file shared by threads and processes: connections and transactions.

``ThreadConnections`` is the one implementation of both, used by the workspace store
(``StoreConnection`` below, failing with ``StoreError``) and by the actions' ``db``
(``builtins.db.Database``, failing with ``BuiltinError``): a connection per thread, opened
on first use in autocommit mode (a statement outside a transaction is its own), and a
nestable ``transaction()`` in which a change all happens or none of it does.
``BEGIN IMMEDIATE`` takes the write lock up front, so two processes that both read and
then write wait for each other (``timeout``) instead of failing half-way.

``StoreConnection`` is the helper with the store's rules: WAL mode and foreign keys, rows
as ``sqlite3.Row``, every error a ``StoreError``, and no write outside a transaction.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

from ..errors import StoreError
from .dialect import DISK_FULL
from .schema import migrate

__all__ = ["StoreConnection", "ThreadConnections", "is_disk_full"]

_T = TypeVar("_T")

_SQLITE_FULL, _SQLITE_IOERR = 13, 10
_NEARLY_FULL = 64 * 1024  # bytes free below which an I/O error is taken for a full disk


def is_disk_full(exc: BaseException, path: str | Path) -> bool:
    """Whether SQLite's ``exc`` means the disk of the file ``path`` has no room:
    SQLITE_FULL, or an I/O error (a journal or the WAL index could not be made) while
    that disk has (almost) nothing free."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return False
    if code & 0xFF == _SQLITE_FULL:
        return True
    if code & 0xFF != _SQLITE_IOERR or str(path) == ":memory:":
        return False
    try:
        return shutil.disk_usage(Path(path).parent).free < _NEARLY_FULL
    except OSError:
        return False


class _PerThread(threading.local):
    """One thread's connection and how many ``transaction()`` blocks it is inside."""

    conn: sqlite3.Connection | None = None
    depth: int = 0
    level: int | None = None  # the connection's own synchronous level, once read
    lowered: bool = False  # a non-durable transaction set it to NORMAL


class ThreadConnections:
    """A connection per thread to the SQLite file ``path``, and nestable transactions.

    ``pragmas`` run on each new connection (``"journal_mode=WAL"``, ...), then
    ``after_open(connection)``. When a transaction cannot begin or commit, ``error`` is raised with
    ``begin_failed`` or ``commit_failed`` and SQLite's message; errors of the statements
    themselves are the owner's to wrap. ``local.conn`` is this thread's connection or
    None: a hot path may read it directly (one attribute access) and call
    ``connection()`` only when None.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        timeout: float,
        pragmas: Sequence[str] = (),
        row_factory: Any = None,
        check_same_thread: bool = True,
        after_open: Callable[[sqlite3.Connection], None] | None = None,
        error: Callable[[str], Exception],
        begin_failed: str,
        commit_failed: str,
        disk_full: str = DISK_FULL,
    ) -> None:
        self.path = Path(path)
        self.local = _PerThread()
        self._timeout = timeout
        self._pragmas = tuple(pragmas)
        self._row_factory = row_factory
        self._check_same_thread = check_same_thread
        self._after_open = after_open
        self._error = error
        self._begin_failed = begin_failed
        self._commit_failed = commit_failed
        self._disk_full = disk_full

    def failure(self, exc: sqlite3.Error, what: str) -> Exception:
        """``exc`` as this owner's error: ``disk_full`` alone when the disk has no room
        (the one thing to say, and to do: free space), else ``what: SQLite's message``."""
        if is_disk_full(exc, self.path):
            return self._error(self._disk_full)
        return self._error(f"{what}: {exc}")

    def connection(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use (sqlite3 errors unwrapped)."""
        return self.local.conn or self._open()

    def _open(self) -> sqlite3.Connection:
        if str(self.path) != ":memory:":  # a new file is owner-only (its -wal, -shm too)
            with contextlib.suppress(OSError):
                os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
        conn = sqlite3.connect(
            self.path,
            isolation_level=None,
            timeout=self._timeout,
            check_same_thread=self._check_same_thread,
        )
        try:
            if self._row_factory is not None:
                conn.row_factory = self._row_factory
            for pragma in self._pragmas:
                conn.execute(f"PRAGMA {pragma}")
            if self._after_open is not None:
                self._after_open(conn)
        except BaseException:
            conn.close()
            raise
        self.local.conn = conn
        self.local.depth = 0
        self.local.level = None
        return conn

    @property
    def in_transaction(self) -> bool:
        """Whether this thread is inside ``transaction()``."""
        return self.local.depth > 0

    def transaction(self, value: _T, *, durable: bool = True) -> _Transaction[_T]:
        """One atomic change on this thread's connection; ``with`` gives ``value``.

        Nested uses join the outer transaction: only the outermost commits, and an
        exception out of any of them rolls all of it back (once it reaches the outermost).
        ``durable=False``: the commit does not wait for the disk (``synchronous=NORMAL``
        for it; in WAL mode the file stays consistent, and the change survives a crash of
        the process, but not always a power cut).
        """
        return _Transaction(self, value, durable)

    def begin(self, durable: bool = True) -> bool:
        """Enter a ``transaction()`` on this thread: True when this one began it (the
        outermost), False when it joined one already open (and its durability)."""
        local = self.local
        if local.depth:
            local.depth += 1
            return False
        conn = local.conn or self._open()
        try:
            if not durable:  # SQLite changes it only outside a transaction
                if local.level is None:
                    local.level = conn.execute("PRAGMA synchronous").fetchone()[0]
                conn.execute("PRAGMA synchronous = NORMAL")
                local.lowered = True
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                self._restore(conn)
            raise self.failure(exc, self._begin_failed) from exc
        local.depth = 1
        return True

    def _restore(self, conn: sqlite3.Connection) -> None:
        """Put back the synchronous level a non-durable transaction lowered."""
        local = self.local
        if local.lowered:
            local.lowered = False
            conn.execute(f"PRAGMA synchronous = {int(local.level or 0)}")

    def end(self, began: bool, *, failed: bool) -> None:
        """Leave what ``begin()`` entered: the outermost commits, or rolls back when
        ``failed`` (an exception left the block)."""
        local = self.local
        if not began:  # a nested one: the outermost ends the transaction
            local.depth -= 1
            return
        local.depth = 0
        conn = local.conn
        if conn is None:
            return
        try:
            if failed:
                # SQLite may have rolled back already (a full disk, an I/O error): the
                # error in flight is the one to see, not "no transaction is active"
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                return
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                raise self.failure(exc, self._commit_failed) from exc
        finally:
            with contextlib.suppress(sqlite3.Error):
                self._restore(conn)

    def close(self) -> None:
        """Close this thread's connection; other threads keep theirs."""
        local = self.local
        if local.conn is not None:
            local.conn.close()
            local.conn = None
            local.depth = 0


class _Transaction(Generic[_T]):
    """``ThreadConnections.transaction()``. A class rather than a ``@contextmanager``
    generator: actions run ``db.transaction()`` while answering requests, and entering and
    leaving this costs about half as much."""

    __slots__ = ("_began", "_durable", "_threads", "_value")

    def __init__(self, threads: ThreadConnections, value: _T, durable: bool = True) -> None:
        self._threads = threads
        self._value = value
        self._durable = durable
        self._began = False

    def __enter__(self) -> _T:
        self._began = self._threads.begin(self._durable)
        return self._value

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self._threads.end(self._began, failed=kind is not None)


class StoreConnection(ThreadConnections):
    """The workspace store's connections: WAL mode and foreign keys, rows as
    ``sqlite3.Row``, every error a ``StoreError``, no write outside a transaction.

    One is shared by the store's table groups (``Store``, ``RequestLog``, ``UserTables``),
    so a change to any of them joins the same ``transaction()``.
    """

    url: str | None = None  # not a PostgreSQL store

    def __init__(self, path: str | Path) -> None:
        super().__init__(
            path,
            timeout=10.0,
            pragmas=("journal_mode=WAL", "foreign_keys=ON", "busy_timeout=10000"),
            row_factory=sqlite3.Row,
            check_same_thread=False,
            error=StoreError,
            begin_failed="the workspace store is busy or broken",
            commit_failed="could not save the change",
        )

    def _open(self) -> sqlite3.Connection:
        # Its own code object: in a server, the store guard lets only this open the store.
        return super()._open()

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        """Run one statement: a read, or a change inside ``transaction()``."""
        try:
            return (self.local.conn or self._open()).execute(sql, params)
        except sqlite3.Error as exc:
            raise self.failure(exc, "workspace store error") from exc

    @contextlib.contextmanager
    def consistent_read(self) -> Iterator[None]:
        """Reads that all see one committed state (a deferred read transaction: in WAL
        mode it holds no lock writers wait for; PostgreSQL needs REPEATABLE READ for the
        same). Inside ``transaction()`` it just joins."""
        if self.local.depth:
            yield
            return
        conn = self.connection()
        try:
            conn.execute("BEGIN")
        except sqlite3.Error as exc:
            raise self.failure(exc, "workspace store error") from exc
        try:
            yield
        finally:
            conn.execute("COMMIT")

    def write(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        """Run one change; refused outside ``transaction()``."""
        if not self.local.depth:
            raise StoreError("internal error: a write outside a transaction")
        return self.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> None:
        """Run one change per parameter row; inside ``transaction()`` only."""
        if not self.local.depth:
            raise StoreError("internal error: a write outside a transaction")
        try:
            (self.local.conn or self._open()).executemany(sql, rows)
        except sqlite3.Error as exc:
            raise self.failure(exc, "workspace store error") from exc

    def migrate(self) -> None:
        """Apply the migrations the file has not had (inside ``transaction()``)."""
        migrate(self.local.conn or self._open(), str(self.path))

    def changed(self) -> None:
        """Nothing to tell: SQLite's readers poll the generation."""

    def reset_ids(self, tables: tuple[str, ...]) -> None:
        """Nothing to do: AUTOINCREMENT follows ids inserted explicitly."""
