"""The workspace's own tests (``test_workspace``) again, on a PostgreSQL store.

Every test of that module that is about the store's content, not about the workspace
directory, runs here with ``workspace`` on a fresh PostgreSQL store; ``dump`` reads
every table of that store instead of the SQLite file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import test_workspace as base
from test_workspace import *  # noqa: F403  (the tests, collected again here)

from notebook_kit.store.copy import COPIED_TABLES
from notebook_kit.workspace.workspace import Workspace

# About the workspace directory and its SQLite file, not the store's content.
del test_workspace_home_from_environment  # noqa: F821
del test_workspace_refused_when_home_is_a_file  # noqa: F821


@pytest.fixture
def workspace(home: Path, fresh_database: str) -> Workspace:
    """An empty workspace whose store is a fresh PostgreSQL database."""
    return Workspace(home, store=fresh_database)


def _dump(ws: Workspace) -> list[str]:
    """Every row of every table of the store, in a stable order."""
    assert ws.store.url, "these tests run on PostgreSQL"
    rows = []
    for table in (*COPIED_TABLES, "api_keys", "meta"):
        found = ws.store._db.execute(f"SELECT * FROM {table}").fetchall()
        rows += sorted(f"{table} {tuple(row)!r}" for row in found)
    return rows


@pytest.fixture(autouse=True)
def _dump_the_postgres_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "dump", _dump)
