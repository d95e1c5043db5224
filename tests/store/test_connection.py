"""The one SQLite helper: a connection per thread and nestable transactions, shared by
the workspace store and the actions' ``db``."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from notebook_kit.builtins.db import Database
from notebook_kit.errors import BuiltinError, StoreError
from notebook_kit.store.connection import ThreadConnections


def _threads(
    path: Path,
    *,
    error: type[Exception] = StoreError,
    begin_failed: str = "cannot begin",
    pragmas: tuple[str, ...] = (),
) -> ThreadConnections:
    return ThreadConnections(
        path,
        timeout=0.05,
        pragmas=pragmas,
        error=error,
        begin_failed=begin_failed,
        commit_failed="cannot commit",
    )


def test_each_thread_has_its_own_connection(tmp_path: Path) -> None:
    threads = _threads(tmp_path / "a.sqlite3")
    mine = threads.connection()
    assert threads.connection() is mine
    theirs: list[sqlite3.Connection] = []
    worker = threading.Thread(target=lambda: theirs.append(threads.connection()))
    worker.start()
    worker.join()
    assert theirs[0] is not mine
    threads.close()
    assert threads.local.conn is None
    assert threads.connection() is not mine


def test_nested_transactions_join_and_roll_back_together(tmp_path: Path) -> None:
    db = Database(tmp_path / "env.sqlite3")
    db.execute("CREATE TABLE t (x INTEGER)")
    with pytest.raises(RuntimeError), db.transaction() as outer:
        assert outer is db
        with db.transaction() as inner:
            assert inner is db
            db.execute("INSERT INTO t VALUES (1)")
        raise RuntimeError("outer fails after inner finished")
    assert db.query("SELECT COUNT(*) AS n FROM t") == [{"n": 0}]
    with db.transaction(), db.transaction():
        db.execute("INSERT INTO t VALUES (2)")
    assert db.query("SELECT x FROM t") == [{"x": 2}]
    db.close()


def test_a_transaction_that_cannot_begin_raises_the_owners_error(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    threads = _threads(path, error=BuiltinError, begin_failed="db")
    with pytest.raises(BuiltinError, match=r"^db: database is locked"), threads.transaction(None):
        pass
    assert not threads.in_transaction
    other.execute("ROLLBACK")
    other.close()
    threads.close()


def test_a_failed_commit_rolls_back_and_raises_the_owners_error(tmp_path: Path) -> None:
    threads = _threads(tmp_path / "a.sqlite3", pragmas=("foreign_keys=ON",))
    conn = threads.connection()
    conn.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
    conn.execute(
        "CREATE TABLE child (parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)"
    )
    with pytest.raises(StoreError, match=r"^cannot commit: FOREIGN KEY"), threads.transaction(1):
        conn.execute("INSERT INTO child VALUES (7)")  # checked only at COMMIT
    assert not conn.in_transaction
    assert not threads.in_transaction
    assert conn.execute("SELECT COUNT(*) FROM child").fetchone() == (0,)
    threads.close()
