"""``db``: the SQLite default (stdlib fast path) and any SQLAlchemy URL, on a real PostgreSQL."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.pg import postgres_url  # noqa: F401  (the session fixture, used by name below)

from notebook_kit.builtins.db import Database, open_database
from notebook_kit.builtins.sql_db import SqlDatabase, positional_to_named
from notebook_kit.errors import BuiltinError
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace

_TABLE = "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL)"


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """An empty ``item`` table on each backend."""
    if request.param == "sqlite":
        database: Any = open_database(None, tmp_path / "env.sqlite3")
    else:
        database = open_database(request.getfixturevalue("postgres_url"), tmp_path / "unused")
        database.execute("DROP TABLE IF EXISTS item")
    database.execute(_TABLE)
    yield database
    if request.param == "postgres":
        database.execute("DROP TABLE item")
    database.close()


def test_open_database_picks_stdlib_sqlite_when_unset_or_sqlite_url(tmp_path: Path) -> None:
    assert type(open_database(None, tmp_path / "a.sqlite3")) is Database
    chosen = open_database(f"sqlite:///{tmp_path}/b.sqlite3", tmp_path / "a.sqlite3")
    assert type(chosen) is Database
    assert chosen.path == tmp_path / "b.sqlite3"
    assert type(open_database("postgresql+psycopg://u@127.0.0.1:1/x", tmp_path)) is SqlDatabase


def test_query_returns_dicts_and_execute_counts_rows_on_each_backend(db: Any) -> None:
    assert db.execute("INSERT INTO item (id, name, price) VALUES (?, ?, ?)", [1, "pen", 1.5]) == 1
    db.executemany(
        "INSERT INTO item (id, name, price) VALUES (:id, :name, :price)",
        [{"id": 2, "name": "ink", "price": 3.0}, {"id": 3, "name": "pad", "price": None}],
    )
    assert db.query("SELECT id, name, price FROM item ORDER BY id") == [
        {"id": 1, "name": "pen", "price": 1.5},
        {"id": 2, "name": "ink", "price": 3.0},
        {"id": 3, "name": "pad", "price": None},
    ]
    assert db.execute("UPDATE item SET price = ? WHERE price IS NOT NULL", [9]) == 2
    assert db.query("SELECT name FROM item WHERE id = :id", {"id": 2}) == [{"name": "ink"}]


def test_parameters_are_bound_never_formatted_on_each_backend(db: Any) -> None:
    hostile = "x'); DROP TABLE item; --"
    db.execute("INSERT INTO item (id, name) VALUES (?, ?)", [1, hostile])
    assert db.query("SELECT name FROM item WHERE name = ?", [hostile]) == [{"name": hostile}]


def test_question_mark_inside_literals_is_not_a_parameter_on_each_backend(db: Any) -> None:
    db.execute("INSERT INTO item (id, name) VALUES (?, 'what?')", [1])
    assert db.query("SELECT name FROM item WHERE id = ? AND name = 'what?'", [1]) == [
        {"name": "what?"}
    ]


def test_transaction_rolls_back_everything_on_error_on_each_backend(db: Any) -> None:
    with pytest.raises(RuntimeError), db.transaction():
        db.execute("INSERT INTO item (id, name) VALUES (?, ?)", [1, "a"])
        db.execute("INSERT INTO item (id, name) VALUES (?, ?)", [2, "b"])
        raise RuntimeError("stop")
    assert db.query("SELECT COUNT(*) AS n FROM item") == [{"n": 0}]
    with db.transaction():
        db.execute("INSERT INTO item (id, name) VALUES (?, ?)", [1, "a"])
    assert db.query("SELECT name FROM item") == [{"name": "a"}]


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("SELECT * FROM missing_table", ()),
        ("INSERT INTO item (id, name) VALUES (?, ?)", [1]),
        ("NOT SQL AT ALL", ()),
    ],
)
def test_failures_raise_builtin_error_on_each_backend(db: Any, sql: str, params: Any) -> None:
    with pytest.raises(BuiltinError, match="db"):
        db.query(sql, params)


@pytest.mark.parametrize(
    ("sql", "expected", "count"),
    [
        ("SELECT ?", "SELECT :p1", 1),
        ("a = ? AND b = ?", "a = :p1 AND b = :p2", 2),
        ("x = '?' AND y = ?", "x = '?' AND y = :p1", 1),
        ("x = 'it''s ?' OR y = ?", "x = 'it''s ?' OR y = :p1", 1),
        ('"odd?name" = ?', '"odd?name" = :p1', 1),
        ("y = ? -- really?\n", "y = :p1 -- really?\n", 1),
        ("/* ? */ y = ?", "/* ? */ y = :p1", 1),
        ("no params", "no params", 0),
    ],
)
def test_positional_to_named_skips_literals_and_comments(
    sql: str, expected: str, count: int
) -> None:
    assert positional_to_named(sql) == (expected, count)


def test_bad_database_url_raises_builtin_error(tmp_path: Path) -> None:
    with pytest.raises(BuiltinError, match="database_url"):
        open_database("nosuchdialect://x/y", tmp_path).query("SELECT 1")


def test_deployed_action_reads_postgres_when_database_url_set(
    workspace: Workspace, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("postgres_url")
    seed = SqlDatabase(url)
    seed.execute("DROP TABLE IF EXISTS city")
    seed.execute("CREATE TABLE city (name TEXT PRIMARY KEY, people INTEGER)")
    seed.execute("INSERT INTO city VALUES (:n, :p)", {"n": "Oslo", "p": 709_000})
    workspace.set_setting("database_url", url)
    workspace.create(
        "geo",
        "city",
        label="a city",
        method="GET",
        resource="city/{name}",
        requires_auth=False,
        action=(
            "rows = db.query('SELECT name, people FROM city WHERE name = ?', "
            "[req.pathParameters['name']])\n"
            "res.statusCode = 200 if rows else 404\n"
            "res.body = rows[0] if rows else {'message': 'no such city'}\n"
        ),
    )
    workspace.deploy("geo", "dev")
    with BackgroundServer(workspace) as server:
        found = httpx.get(server.url + "/dev/geo/city/Oslo", timeout=10)
        missing = httpx.get(server.url + "/dev/geo/city/Bergen", timeout=10)
    assert (found.status_code, found.json()) == (200, {"name": "Oslo", "people": 709_000})
    assert missing.status_code == 404
    seed.execute("DROP TABLE city")


def test_changing_database_url_switches_the_actions_db(
    workspace: Workspace, tmp_path: Path
) -> None:
    assert isinstance(workspace.action_env()["db"], Database)
    other = tmp_path / "other.sqlite3"
    workspace.set_setting("database_url", f"sqlite:///{other}")
    db = workspace.action_env()["db"]
    assert isinstance(db, Database)
    assert db.path == other


# -- the size in the WAL: no fstat per query --------------------------------------------


def _closed_file(path: Path) -> None:
    """A WAL-mode file with one row, every connection closed (so its WAL is gone)."""
    seed = sqlite3.connect(path, isolation_level=None)
    seed.execute("PRAGMA journal_mode=WAL")
    seed.execute("PRAGMA user_version = 7")
    seed.execute("CREATE TABLE t (a INTEGER)")
    seed.execute("INSERT INTO t VALUES (1)")
    seed.close()


def test_first_connection_puts_the_size_in_the_wal_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "env.sqlite3"
    _closed_file(path)
    assert not (tmp_path / "env.sqlite3-wal").exists()
    db = Database(path)
    assert db.query("SELECT a FROM t") == [{"a": 1}]
    assert (tmp_path / "env.sqlite3-wal").stat().st_size > 0  # one frame
    assert db.query("PRAGMA user_version") == [{"user_version": 7}]
    assert db.query("PRAGMA busy_timeout") == [{"timeout": 5000}]  # as it was
    db.close()


def test_first_connection_does_not_wait_for_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "env.sqlite3"
    _closed_file(path)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # holds the write lock
    try:
        started = time.monotonic()
        db = Database(path)
        assert db.query("SELECT a FROM t") == [{"a": 1}]
        assert time.monotonic() - started < 2.0  # the busy timeout is 5 s
        assert db.query("PRAGMA busy_timeout") == [{"timeout": 5000}]
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    db.close()


_QUERIES = """
import os, sys
from notebook_kit.builtins.db import Database
db = Database(sys.argv[1])
db.query("SELECT a FROM t")
os.write(1, b"MARK\\n")
for _ in range(50):
    db.query("SELECT a FROM t")
os.write(1, b"DONE\\n")
"""


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_queries_make_no_fstat_each(tmp_path: Path) -> None:
    # The point of the frame: SQLite stops asking the kernel for the file's size per read.
    path = tmp_path / "env.sqlite3"
    _closed_file(path)
    script = tmp_path / "queries.py"
    script.write_text(_QUERIES)
    run = subprocess.run(
        ["strace", "-f", "-e", "trace=fstat,newfstatat,write", sys.executable, script, path],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert run.returncode == 0, run.stderr
    traced = run.stderr.split("MARK", 1)[1].split("DONE", 1)[0]
    assert traced.count("fstat") < 5, traced  # 50 queries; was one fstat each


def test_an_environment_database_of_the_old_layout_moves_into_its_folder(tmp_path: Path) -> None:
    """Workspaces made before the sandbox kept ``environment.sqlite3`` beside the store;
    opening one moves it (its rows) into ``environment/``, where
    actions may write, and an action reads it there."""
    home = tmp_path / "workspace"
    Workspace(home)  # a workspace, then its environment database put back where it was
    (home / "environment" / "environment.sqlite3").unlink(missing_ok=True)
    old = sqlite3.connect(home / "environment.sqlite3", isolation_level=None)
    old.execute("PRAGMA journal_mode=WAL")
    old.execute("CREATE TABLE kept (a TEXT)")
    old.execute("INSERT INTO kept VALUES ('from before')")
    old.close()
    ws = Workspace(home)
    assert not (home / "environment.sqlite3").exists()
    assert not (home / "environment.sqlite3-wal").exists()
    assert (home / "environment" / "environment.sqlite3").exists()
    ws.create("env", "read", label="read", method="GET", resource="read",
              action="res.body = db.query('SELECT a FROM kept')")  # fmt: skip
    assert ws.invoke("env", "read").json() == [{"a": "from before"}]
    Workspace(home)  # again: nothing to move, nothing lost
    assert ws.invoke("env", "read").json() == [{"a": "from before"}]
