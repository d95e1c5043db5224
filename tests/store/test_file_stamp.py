"""``FileStamp``: the SQLite store's files as a cheap "may have changed" check."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from notebook_kit.store import file_stamp
from notebook_kit.store.file_stamp import FileStamp


def make_store(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE meta (value INTEGER)")
    return conn


def test_a_commit_is_a_change_and_quiet_files_are_not(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(file_stamp, "SETTLE_NS", 0)  # every stamp is trusted at once
    conn = make_store(tmp_path / "s.sqlite3")
    stamp = FileStamp(tmp_path / "s.sqlite3")
    assert stamp.changed()  # the first look knows nothing
    assert not stamp.changed()
    conn.execute("INSERT INTO meta VALUES (1)")  # a commit lands in the WAL
    assert stamp.changed()
    assert not stamp.changed()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # pages move to the database file
    assert stamp.changed()
    assert not stamp.changed()


def test_a_fresh_stamp_is_not_trusted_until_it_settles(tmp_path: Path, monkeypatch) -> None:
    # File times come from a coarse clock: a commit in the same tick as a look may leave
    # the stamp as it was, so a stamp younger than SETTLE_NS reports a change again.
    monkeypatch.setattr(file_stamp, "SETTLE_NS", 300_000_000)
    conn = make_store(tmp_path / "s.sqlite3")
    stamp = FileStamp(tmp_path / "s.sqlite3")
    conn.execute("INSERT INTO meta VALUES (1)")
    assert stamp.changed()
    assert stamp.changed()  # still young: looked at again
    time.sleep(0.35)
    assert stamp.changed()  # settled now, but the last look did not keep it
    assert not stamp.changed()


def test_a_missing_file_is_a_state_of_its_own(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(file_stamp, "SETTLE_NS", 0)
    stamp = FileStamp(tmp_path / "none.sqlite3")
    assert stamp.changed()
    assert not stamp.changed()
    make_store(tmp_path / "none.sqlite3")
    assert stamp.changed()
