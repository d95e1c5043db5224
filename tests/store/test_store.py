"""The SQLite store: files, permissions, migrations, WAL, transactions, sharing."""

from __future__ import annotations

import os
import pickle
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from notebook_kit.domain.models import Application, Definition, Stage
from notebook_kit.errors import StoreError
from notebook_kit.store import Store, new_api_key
from notebook_kit.store.schema import MIGRATIONS
from notebook_kit.workspace.workspace import Workspace


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_workspace_created_owner_only(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "deep" / "home")
    assert _mode(ws.home) == 0o700
    assert _mode(ws.home / "workspace.sqlite3") == 0o600


def test_workspace_permissions_tightened_when_directory_exists(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    ws = Workspace(home)
    assert _mode(ws.home) == 0o700
    for sidecar in ("workspace.sqlite3-wal", "workspace.sqlite3-shm"):
        path = ws.home / sidecar
        if path.exists():  # SQLite gives the WAL files the database's mode
            assert _mode(path) & 0o077 == 0


def test_schema_versioned_with_user_version(tmp_path: Path) -> None:
    Store(tmp_path / "s.sqlite3")
    with sqlite3.connect(tmp_path / "s.sqlite3") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"applications", "definitions", "deployments", "live", "api_keys"} <= tables


def test_migrations_resume_from_an_older_version(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO applications VALUES ('kept', 'REST API', 'Kept', 'x', 'x')")
    conn.commit()
    conn.close()
    store = Store(path)
    assert [a.id for a in store.list_applications()] == ["kept"]
    assert store.request_log() == []  # the table of migration 2 exists now
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


def test_reopening_keeps_data_and_keys(tmp_path: Path) -> None:
    first = Store(tmp_path / "s.sqlite3")
    keys = first.api_keys()
    with first.transaction():
        first.put_application(Application("a"))
    first.close()
    second = Store(tmp_path / "s.sqlite3")
    assert second.api_keys() == keys
    assert second.get_application("a") == Application("a")


def test_transaction_rolls_back_everything_on_error(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    with pytest.raises(RuntimeError), store.transaction():
        store.put_application(Application("a"))
        store.insert_definition(Definition("a", "x", "X", "GET", "x"))
        store.bump_generation()
        raise RuntimeError("crash in the middle")
    assert store.list_applications() == []
    assert store.list_definitions() == []
    assert store.generation() == 0


def test_nested_transaction_joins_the_outer_one(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    with pytest.raises(RuntimeError), store.transaction():
        with store.transaction():
            store.put_application(Application("inner"))
        raise RuntimeError("outer fails after inner finished")
    assert store.get_application("inner") is None


def test_write_outside_transaction_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    with pytest.raises(StoreError, match="outside a transaction"):
        store.put_application(Application("a"))


def test_sqlite_errors_wrapped_as_store_errors(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    definition = Definition("a", "x", "X", "GET", "x")
    with pytest.raises(StoreError, match="workspace store error"), store.transaction():
        store.put_application(Application("a"))
        store.insert_definition(definition)
        store.insert_definition(definition)  # primary key violation


def test_store_refused_when_file_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open the workspace store"):
        Store(path)


def test_two_workspaces_on_one_home_see_each_others_changes(tmp_path: Path) -> None:
    one, two = Workspace(tmp_path / "h"), Workspace(tmp_path / "h")
    assert one.keys() == two.keys()
    one.create("a", "x", label="X", method="GET", resource="x", action="res.body = 'x'")
    assert [d.id for d in two.definitions()] == ["x"]
    before = one.store.generation()
    two.deploy("a", "dev")
    assert one.store.generation() > before
    assert [d.id for d in one.live("dev")["a"]] == ["x"]
    key = two.rotate_key("prod")
    assert one.keys()["prod"] == key


def test_generation_bumped_by_live_changes_only(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "h")
    start = ws.store.generation()
    ws.create("a", "x", label="X", method="GET", resource="x")
    assert ws.store.generation() == start  # a saved definition is not live
    ws.deploy("a", "dev")
    after_deploy = ws.store.generation()
    assert after_deploy > start
    ws.undeploy("a", "dev")
    assert ws.store.generation() > after_deploy


@pytest.mark.parametrize("_", range(3))
def test_new_api_key_is_40_alphanumerics(_: int) -> None:
    key = new_api_key()
    assert len(key) == 40 and key.isascii() and key.isalnum()


def test_keys_made_per_stage_when_store_created(tmp_path: Path) -> None:
    keys = Store(tmp_path / "s.sqlite3").api_keys()
    assert set(keys) == set(Stage)
    assert keys[Stage.DEV] != keys[Stage.PROD]


def test_request_log_keeps_the_newest(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    rows = [("t", "dev", "GET", f"/p{i}", 200, 1.0) for i in range(5)]
    store.append_requests(rows, keep=3)
    assert [r["path"] for r in store.request_log()] == ["/p2", "/p3", "/p4"]
    assert [r["path"] for r in store.request_log(limit=2)] == ["/p3", "/p4"]


def test_user_tables_set_only_their_own_columns(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    with store.transaction():
        store.users.insert_user("ann@x.org", "Ann@x.org", "Ann", "ann", None, "{}", "t0")
        store.users.insert_group("staff", "", "t0")
        assert store.users.add_member("staff", "ann@x.org")
        assert not store.users.add_member("staff", "ann@x.org")  # already in it
        with pytest.raises(ValueError, match="columns"):
            store.users.update_user("ann@x.org", {"name = 'x', email_key": "y"})
        store.users.update_user("ann@x.org", {"name": "Anne", "updated_at": "t1"})
    row = store.users.user_row("ann@x.org")
    assert row is not None
    assert (row["name"], row["created_at"], row["updated_at"]) == ("Anne", "t0", "t1")
    assert store.users.groups_of(["ann@x.org"]) == {"ann@x.org": ["staff"]}


def test_request_log_trim_is_an_index_range_whatever_the_log_size(tmp_path: Path) -> None:
    # A flush must cost the same with a full log: no statement of append_requests scans
    # the batches table (the old trim summed entries over every kept batch).
    from notebook_kit.store.request_log import LAST_SQL, TRIM_SQL

    store = Store(tmp_path / "s.sqlite3")
    for n in range(50):
        store.append_requests([(float(n), "dev", "GET", f"/p{n}", 200, 1.0)], 10)
    conn = sqlite3.connect(tmp_path / "s.sqlite3")
    for sql in (TRIM_SQL, LAST_SQL):
        plan = " ".join(
            row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", (0,)[: sql.count("?")])
        )
        assert "SCAN" not in plan and "USING" in plan and "INDEX" in plan, plan
    assert conn.execute("SELECT COUNT(*) FROM request_log_batches").fetchone()[0] == 10
    conn.close()
    assert [r["path"] for r in store.request_log()] == [f"/p{n}" for n in range(40, 50)]


def test_migration_counts_existing_request_log_batches(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path)
    upto = MIGRATIONS.index(next(m for m in MIGRATIONS if "ADD COLUMN upto" in m))
    for migration in MIGRATIONS[:upto]:
        conn.executescript(migration)
    conn.executemany(
        "INSERT INTO request_log_batches (entries, rows) VALUES (?, ?)",
        [
            (2, pickle.dumps((0.0, [(1.0, "dev", "GET", "/a", 200, 1.0)] * 2))),
            (3, pickle.dumps((0.0, [(2.0, "dev", "GET", "/b", 200, 1.0)] * 3))),
        ],
    )
    conn.execute(f"PRAGMA user_version = {upto}")
    conn.commit()
    conn.close()
    store = Store(path)
    check = sqlite3.connect(path)
    assert [r[0] for r in check.execute("SELECT upto FROM request_log_batches ORDER BY id")] == [
        2,
        5,
    ]
    check.close()
    store.append_requests([(3.0, "dev", "GET", "/c", 200, 1.0)], 4)
    assert [r["path"] for r in store.request_log()] == ["/b", "/b", "/b", "/c"]


_COMMITS = """
import os, sys
from notebook_kit.store import Store
store = Store(sys.argv[1])
store.request_log()  # opened, migrated
os.write(1, b"MARK\\n")
if sys.argv[2] == "log":
    for i in range(20):
        store.append_requests([("t", "dev", "GET", f"/p{i}", 200, 1.0)], keep=100)
else:
    for i in range(20):
        with store.transaction():
            store.set_setting("request_log_size", 100 + i)
os.write(1, b"DONE\\n")
"""


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_request_log_commits_do_not_wait_for_the_disk(tmp_path: Path) -> None:
    # A server writes its log ten times a second; an fsync each time cost more CPU than
    # the writes. Other changes still wait for the disk.
    script = tmp_path / "commits.py"
    script.write_text(_COMMITS)

    def syncs(kind: str) -> int:
        run = subprocess.run(
            ["strace", "-f", "-e", "trace=fsync,fdatasync,write", sys.executable, script,
             tmp_path / f"{kind}.sqlite3", kind],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        traced = run.stderr.split("MARK", 1)[1].split("DONE", 1)[0]
        return traced.count("fsync(") + traced.count("fdatasync(")

    assert syncs("log") == 0
    assert syncs("settings") >= 20
