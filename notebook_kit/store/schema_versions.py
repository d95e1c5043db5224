"""Where a store's schema stands against this notebook-kit's, read without changing it
(``notebook-kit store migrate --check``).

A store counts the migrations it has had (SQLite: ``PRAGMA user_version``; PostgreSQL:
table ``schema_version``) and records in ``meta`` the fewest a notebook-kit must know to
read it (``dialect.READABLE_FROM``). Opening a store migrates it; this module only reads,
so an operator learns before a rolling upgrade whether one is pending and whether the
nodes still on the older version can read the store once it is applied: they can only
when every pending migration is additive (``dialect.Additive``).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import StoreError
from .dialect import READABLE_FROM, Migration, mask_url, oldest_reader, scrub
from .pg_schema import PG_MIGRATIONS
from .schema import MIGRATIONS

__all__ = ["SchemaCheck", "check_schema"]

# How many migrations the first notebook-kit that honours ``readable_from`` knew (16 on
# SQLite, 10 on PostgreSQL): a node that knows fewer predates it and refuses any store
# newer than itself, additive or not. Append-only history, like the migrations.
_FIRST_READER = {"sqlite": 16, "postgres": 10}


@dataclass(frozen=True)
class SchemaCheck:
    """``store``: the migrations the store has had (0: a new store); ``code``: how many
    this notebook-kit knows; ``readable_from``: the fewest a reader of the store must know
    now, ``readable_after`` once this notebook-kit has migrated it."""

    where: str
    store: int
    code: int
    readable_from: int
    readable_after: int

    @property
    def pending(self) -> int:
        """Migrations this notebook-kit would apply."""
        return max(0, self.code - self.store)

    @property
    def readable_here(self) -> bool:
        """Whether this notebook-kit can serve the store (as it is, or once migrated)."""
        return self.code >= self.readable_from

    @property
    def older_refused(self) -> bool:
        """Whether nodes of the store's current version refuse it once migrated (a new
        store, version 0, has none)."""
        return self.pending > 0 and 0 < self.store < self.readable_after


def check_schema(url: str | None, home: Path) -> SchemaCheck:
    """Where the store ``url`` names (None: the workspace's SQLite file) stands; reads only."""
    if not url:
        return _sqlite(home / "workspace.sqlite3")
    return _postgres(url)


def _check(
    where: str, steps: tuple[Migration, ...], store: int, recorded: int | None, dialect: str
) -> SchemaCheck:
    readable = recorded if recorded is not None else store
    if store > len(steps):  # a newer notebook-kit migrated it: this one migrates nothing
        return SchemaCheck(where, store, len(steps), readable, readable)
    after = oldest_reader(steps, len(steps))
    if store < _FIRST_READER[dialect]:  # its nodes refuse any newer store
        after = max(after, store + 1)
    return SchemaCheck(where, store, len(steps), readable, after)


def _sqlite(path: Path) -> SchemaCheck:
    if not path.exists():
        return _check(str(path), MIGRATIONS, 0, None, "sqlite")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            row = None
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
                row = conn.execute(
                    "SELECT value FROM meta WHERE key = ?", (READABLE_FROM,)
                ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the workspace store {path}: {exc}") from exc
    return _check(str(path), MIGRATIONS, int(version), int(row[0]) if row else None, "sqlite")


def _postgres(url: str) -> SchemaCheck:
    import psycopg

    from .postgres import connect

    def one(conn: psycopg.Connection[Any], sql: str, *params: object) -> Any:
        row = conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    try:
        with connect(url) as conn:
            version = recorded = None
            if one(conn, "SELECT to_regclass('schema_version')") is not None:
                version = one(conn, "SELECT MAX(version) FROM schema_version")
            if one(conn, "SELECT to_regclass('meta')") is not None:
                recorded = one(conn, "SELECT value FROM meta WHERE key = %s", READABLE_FROM)
    except psycopg.Error as exc:
        detail = scrub(" ".join(str(exc).split()), url)
        raise StoreError(f"cannot read the store {mask_url(url)}: {detail}") from None
    store = int(version or 0)
    readable = None if recorded is None else int(recorded)
    return _check(mask_url(url), PG_MIGRATIONS, store, readable, "postgres")
