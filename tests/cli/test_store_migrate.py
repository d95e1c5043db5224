"""``notebook-kit store migrate [--check]`` and the upgrade steps of
docs/guide/production.md (Upgrading): back up with ``pg_dump``, check, migrate, roll the
nodes. The store of the previous release is made the way it was: this release's
migrations but the last (real SQLite files, the real PostgreSQL, the real pg_dump and
pg_restore); a node of an older release meeting a newer store is one that knows fewer
migrations than the store needs."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import httpx
from support.pg import PostgresServer
from support.processes import run_cli

from notebook_kit.runtime.process.handles import ServerProcess
from notebook_kit.store.dialect import READABLE_FROM, UPGRADE_DOC, apply_migrations
from notebook_kit.store.pg_schema import PG_MIGRATIONS
from notebook_kit.store.postgres import PgConnection
from notebook_kit.store.schema import MIGRATIONS

OLD_SQLITE, OLD_PG = len(MIGRATIONS) - 1, len(PG_MIGRATIONS) - 1


def sqlite_of_the_previous_release(home: Path) -> Path:
    home.mkdir()
    path = home / "workspace.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    apply_migrations(MIGRATIONS[:-1], 0, conn, conn.execute, str(path))
    conn.execute(f"DELETE FROM meta WHERE key = '{READABLE_FROM}'")  # not recorded then
    conn.execute(f"PRAGMA user_version = {OLD_SQLITE}")
    conn.execute("COMMIT")
    conn.close()
    return path


def postgres_of_the_previous_release(url: str) -> None:
    db = PgConnection(url)
    with db.transaction(None):
        db.write("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        apply_migrations(PG_MIGRATIONS[:-1], 0, db, db.write, "the previous release's")
        db.write(f"DELETE FROM meta WHERE key = '{READABLE_FROM}'")
        db.write("INSERT INTO schema_version (version) VALUES (?)", (OLD_PG,))
    db.close()


def test_check_announces_a_migration_older_nodes_cannot_read_then_migrate_applies_it(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    sqlite_of_the_previous_release(home)
    check = run_cli("store", "migrate", "--check", home=home)
    assert check.returncode == 4, check
    assert check.stdout.splitlines() == [
        f"store: {home / 'workspace.sqlite3'}",
        f"store schema version: {OLD_SQLITE}",
        f"this notebook-kit's schema version: {OLD_SQLITE + 1}",
        f"pending: 1 migration(s), {OLD_SQLITE} -> {OLD_SQLITE + 1}",
        f"after it, nodes of schema version {OLD_SQLITE} or older cannot read the store and "
        f"refuse to start: back up, migrate, then upgrade every node ({UPGRADE_DOC})",
    ]
    again = run_cli("store", "migrate", "--check", home=home)
    assert again.returncode == 4  # --check changed nothing
    done = run_cli("store", "migrate", home=home, check=True)
    path = home / "workspace.sqlite3"
    assert done.stdout.splitlines()[-1] == (
        f"migrated {path} from schema version {OLD_SQLITE} to {OLD_SQLITE + 1}"
    )
    after = run_cli("store", "migrate", "--check", home=home)
    assert (after.returncode, after.stdout.splitlines()[-1]) == (0, "nothing to migrate")


def test_a_node_older_than_the_store_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    """What an older node meets after the upgrade: a store that needs a newer reader."""
    home = tmp_path / "home"
    run_cli("--create", "list", home=home, check=True)
    path = home / "workspace.sqlite3"
    newer = len(MIGRATIONS) + 1
    with sqlite3.connect(path, isolation_level=None) as conn:  # as a newer release leaves it
        conn.execute(f"PRAGMA user_version = {newer}")
        conn.execute(f"UPDATE meta SET value = '{newer}' WHERE key = '{READABLE_FROM}'")
    check = run_cli("store", "migrate", "--check", home=home)
    assert check.returncode == 5
    assert f"needs notebook-kit of schema version {newer} or later" in check.stdout
    served = run_cli("serve", "--port", "0", home=home)
    assert served.returncode == 1
    assert "Traceback" not in served.stderr
    (line,) = served.stderr.strip().splitlines()
    assert line == (
        f"notebook-kit: cannot open the workspace store {path}: its schema version is {newer}, "
        f"which needs notebook-kit of schema version {newer} or later, and this one is "
        f"{len(MIGRATIONS)}: upgrade notebook-kit on this node (the steps: {UPGRADE_DOC})"
    )


def test_the_documented_upgrade_backs_up_migrates_and_serves_on_postgresql(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    """pg_dump, ``store migrate --check``, ``store migrate``, a node of the new release
    serving; the backup restores into a fresh database as the store was before."""
    url = postgres_server.create_database()
    postgres_of_the_previous_release(url)
    home, env = tmp_path / "node", {"NOTEBOOK_KIT_STORE": url}
    home.mkdir()
    backup = tmp_path / "store.dump"
    subprocess.run(["pg_dump", "--format=custom", f"--file={backup}", url], check=True)
    check = run_cli("store", "migrate", "--check", home=home, env=env)
    assert check.returncode == 4, check
    assert f"store schema version: {OLD_PG}" in check.stdout
    assert "secret" not in check.stdout
    run_cli("store", "migrate", home=home, env=env, check=True)
    assert run_cli("store", "migrate", "--check", home=home, env=env).returncode == 0
    run_cli("sample", home=home, env=env, check=True)
    key = run_cli("keys", home=home, env=env, check=True).stdout.split()[1]
    node = ServerProcess(home, store=url).start()
    try:
        answer = httpx.get(
            f"{node.url}/dev/restapi_sample/calculator", headers={"x-api-key": key}, timeout=10
        )
        assert answer.status_code in (405, 200)  # the route is served (GET is not its method)
        calc = httpx.post(
            f"{node.url}/dev/restapi_sample/calculator",
            content=b'{"arg1": 1, "arg2": 2, "operation": "plus"}',
            headers={"x-api-key": key},
            timeout=10,
        )
        assert (calc.status_code, calc.text) == (200, "3")
    finally:
        node.stop()
    restored = postgres_server.create_database()
    subprocess.run(["pg_restore", "--no-owner", f"--dbname={restored}", str(backup)], check=True)
    back = run_cli("store", "migrate", "--check", home=home, env={"NOTEBOOK_KIT_STORE": restored})
    assert back.returncode == 4  # the backup is the store before the migration
    assert f"store schema version: {OLD_PG}" in back.stdout
    # a node of an older release than the migrated store refuses it, in one line, at once
    newer = len(PG_MIGRATIONS) + 1
    db = PgConnection(url)
    with db.transaction(None):
        db.write("UPDATE schema_version SET version = ?", (newer,))
        db.write("UPDATE meta SET value = ? WHERE key = ?", (str(newer), READABLE_FROM))
    db.close()
    served = run_cli("serve", "--port", "0", home=home, env=env)
    assert (served.returncode, "Traceback" in served.stderr) == (1, False)
    (line,) = served.stderr.strip().splitlines()
    assert f"its schema version is {newer}, which needs notebook-kit of schema version" in line
    assert UPGRADE_DOC in line


def test_check_on_a_new_store_says_its_tables_are_made_on_first_use(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    check = run_cli("store", "migrate", "--check", home=home)
    assert check.returncode == 3  # pending, and no node of an older version to refuse it
    assert (
        check.stdout.splitlines()[-1] == "a new store: its tables are made when it is first opened"
    )
    assert not (home / "workspace.sqlite3").exists()  # --check made nothing
