"""Which notebook-kit may read a store: a store newer than the code is served when every
migration the code does not know is additive, refused in one line otherwise; every
migration records the oldest reader. Real SQLite files, schemas of a few tables."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from notebook_kit.errors import StoreError
from notebook_kit.store.dialect import (
    READABLE_FROM,
    UPGRADE_DOC,
    Additive,
    Migration,
    apply_migrations,
    oldest_reader,
)

BASE = "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); CREATE TABLE t (a INT)"


def migrated(path: Path, steps: tuple[Migration, ...]) -> sqlite3.Connection:
    """A store file at ``path`` brought to ``steps`` (user_version counts them)."""
    conn = sqlite3.connect(path, isolation_level=None)
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.execute("BEGIN")
    if apply_migrations(steps, version, conn, conn.execute, str(path)):
        conn.execute(f"PRAGMA user_version = {len(steps)}")
    conn.execute("COMMIT")
    return conn


def readable_from(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (READABLE_FROM,)).fetchone()
    return int(row[0])


@pytest.mark.parametrize(
    ("steps", "oldest"),
    [
        ((BASE,), 1),
        ((BASE, Additive("CREATE TABLE u (b INT)")), 1),
        ((BASE, Additive("CREATE TABLE u (b INT)"), Additive("ALTER TABLE t ADD c INT")), 1),
        ((BASE, "DROP TABLE t", Additive("CREATE TABLE u (b INT)")), 2),
        ((BASE, Additive("CREATE TABLE u (b INT)"), "DROP TABLE t"), 3),
    ],
)
def test_a_migration_records_the_oldest_reader(
    tmp_path: Path, steps: tuple[Migration, ...], oldest: int
) -> None:
    assert oldest_reader(steps, len(steps)) == oldest
    assert readable_from(migrated(tmp_path / "s.sqlite3", steps)) == oldest


def test_an_older_notebook_kit_serves_a_store_migrated_past_it_additively(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    newer = (BASE, Additive("CREATE TABLE u (b INT DEFAULT 0)"))
    migrated(path, newer).close()
    conn = migrated(path, newer[:1])  # the older code opens it: nothing applied, nothing undone
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'u'").fetchone()


def test_an_older_notebook_kit_refuses_a_store_it_cannot_read_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    migrated(path, (BASE, Additive("CREATE TABLE u (b INT)"), "DROP TABLE t")).close()
    with pytest.raises(StoreError) as refused:
        migrated(path, (BASE,))
    message = str(refused.value)
    assert "\n" not in message
    assert message == (
        "its schema version is 3, which needs notebook-kit of schema version 3 or later, and "
        f"this one is 1: upgrade notebook-kit on this node (the steps: {UPGRADE_DOC})"
    )
    assert migrated(path, (BASE, Additive("CREATE TABLE u (b INT)"), "DROP TABLE t"))


def test_a_store_that_records_no_reader_needs_one_that_knows_all_its_migrations(
    tmp_path: Path,
) -> None:
    """Stores migrated before readers were recorded: only a notebook-kit that knows every
    migration they had may open them."""
    path = tmp_path / "s.sqlite3"
    conn = migrated(path, (BASE, Additive("CREATE TABLE u (b INT)")))
    conn.execute("DELETE FROM meta")
    with pytest.raises(StoreError, match="needs notebook-kit of schema version 2 or later"):
        migrated(path, (BASE,))
