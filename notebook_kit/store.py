"""The workspace store: the single source of truth, shared by every process.

SQLite in the workspace directory (WAL mode, so a notebook, the CLI and servers use it at
once). The SQL is kept to what PostgreSQL also speaks, so a second backend can stand
behind the same methods. Every change runs inside ``transaction()``: it all happens, or
none of it does. A ``generation`` counter goes up with every change to what is live
(deploys, undeploys, rollbacks, keys); servers poll it to know when to reload.
"""

from __future__ import annotations

import json
import os
import pickle
import secrets
import sqlite3
import string
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import StoreError
from .models import Application, Definition, Deployment, Stage, now

__all__ = ["Store", "iso_time", "new_api_key"]

_KEY_ALPHABET = string.ascii_letters + string.digits

# Each entry moves the schema from version i to i+1. Append; never edit a shipped one.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO meta (key, value) VALUES ('generation', '0');
    CREATE TABLE applications (
        id TEXT PRIMARY KEY, type TEXT NOT NULL, label TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
    CREATE TABLE definitions (
        app_id TEXT NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
        api_id TEXT NOT NULL, label TEXT NOT NULL, method TEXT NOT NULL,
        resource TEXT NOT NULL, content_type TEXT, requires_auth INTEGER NOT NULL,
        action TEXT NOT NULL, functions TEXT NOT NULL, constants TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        PRIMARY KEY (app_id, api_id));
    CREATE TABLE deployments (
        id INTEGER PRIMARY KEY AUTOINCREMENT, app_id TEXT NOT NULL, stage TEXT NOT NULL,
        deployed_at TEXT NOT NULL, host TEXT NOT NULL, snapshot TEXT NOT NULL);
    CREATE INDEX deployments_by_app ON deployments (app_id, stage, id);
    CREATE TABLE live (
        stage TEXT NOT NULL, app_id TEXT NOT NULL,
        deployment_id INTEGER NOT NULL REFERENCES deployments (id),
        PRIMARY KEY (stage, app_id));
    CREATE TABLE api_keys (stage TEXT PRIMARY KEY, key TEXT NOT NULL, created_at TEXT NOT NULL);
    CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    """
    CREATE TABLE request_log (
        id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, stage TEXT NOT NULL,
        method TEXT NOT NULL, path TEXT NOT NULL, status INTEGER NOT NULL,
        duration_ms REAL NOT NULL);
    """,
    """
    CREATE TABLE users (
        email_key TEXT PRIMARY KEY, email TEXT NOT NULL, name TEXT NOT NULL,
        name_key TEXT NOT NULL, password_hash TEXT, attributes TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
    CREATE TABLE user_groups (
        name TEXT PRIMARY KEY, description TEXT NOT NULL, created_at TEXT NOT NULL);
    CREATE TABLE group_members (
        group_name TEXT NOT NULL REFERENCES user_groups (name) ON DELETE CASCADE,
        email_key TEXT NOT NULL
            REFERENCES users (email_key) ON DELETE CASCADE ON UPDATE CASCADE,
        PRIMARY KEY (group_name, email_key));
    CREATE INDEX group_members_by_user ON group_members (email_key);
    CREATE TABLE password_resets (
        token_hash TEXT PRIMARY KEY,
        email_key TEXT NOT NULL
            REFERENCES users (email_key) ON DELETE CASCADE ON UPDATE CASCADE,
        expires_at REAL NOT NULL, created_at TEXT NOT NULL);
    """,
    """
    CREATE TABLE action_stats (
        stage TEXT NOT NULL, app_id TEXT NOT NULL, api_id TEXT NOT NULL,
        requests INTEGER NOT NULL, errors INTEGER NOT NULL, last_status INTEGER,
        last_request_at TEXT, last_error TEXT, last_error_at TEXT,
        PRIMARY KEY (stage, app_id, api_id));
    """,
    # The request log is written in batches, one row a flush (the entries pickled: 0.1 µs
    # an entry, against 0.9 for JSON and several for one INSERT each), so a busy server
    # spends well under a microsecond a request on it. rows holds a BLOB (bytea later).
    """
    DROP TABLE request_log;
    CREATE TABLE request_log_batches (
        id INTEGER PRIMARY KEY AUTOINCREMENT, entries INTEGER NOT NULL, rows TEXT NOT NULL);
    """,
)


def iso_time(epoch: float) -> str:
    """Seconds since the epoch as the store's ISO 8601 UTC text, to the millisecond."""
    whole = int(epoch)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
    return f"{stamp}.{int((epoch - whole) * 1000):03d}Z"


def new_api_key() -> str:
    """40 alphanumeric characters from the OS's secure random source."""
    return "".join(secrets.choice(_KEY_ALPHABET) for _ in range(40))


def _create_private_file(path: Path) -> None:
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)


def _definition_from_row(row: sqlite3.Row) -> Definition:
    return Definition.from_dict(
        {
            "app": row["app_id"],
            "id": row["api_id"],
            "label": row["label"],
            "method": row["method"],
            "resource": row["resource"],
            "content_type": row["content_type"],
            "requires_auth": bool(row["requires_auth"]),
            "action": row["action"],
            "functions": row["functions"],
            "constants": json.loads(row["constants"]),
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
        }
    )


def _definition_values(d: Definition) -> tuple[Any, ...]:
    constants = json.dumps([c.to_dict() for c in d.constants])
    return (
        d.app,
        d.id,
        d.label,
        d.method,
        d.resource,
        d.content_type,
        int(d.requires_auth),
        d.action,
        d.functions,
        constants,
        d.created_at,
        d.updated_at,
    )


class Store:
    """All reads and writes of one workspace database."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        try:
            if not self.path.exists():
                _create_private_file(self.path)
            self._migrate()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the workspace store {self.path}: {exc}") from exc

    # -- connections and transactions -------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path, isolation_level=None, timeout=10.0, check_same_thread=False
            )
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=10000")
            self._local.conn = conn
            self._local.depth = 0
        return conn

    @contextmanager
    def transaction(self) -> Iterator[Store]:
        """One atomic change. Nested uses join the outer transaction."""
        conn = self._conn()
        if self._local.depth:
            self._local.depth += 1
            try:
                yield self
            finally:
                self._local.depth -= 1
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"the workspace store is busy or broken: {exc}") from exc
        self._local.depth = 1
        try:
            yield self
        except BaseException:
            self._local.depth = 0
            conn.execute("ROLLBACK")
            raise
        self._local.depth = 0
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK")
            raise StoreError(f"could not save the change: {exc}") from exc

    def _execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        try:
            return self._conn().execute(sql, params)
        except sqlite3.Error as exc:
            raise StoreError(f"workspace store error: {exc}") from exc

    def _write(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        if not getattr(self._local, "depth", 0):
            raise StoreError("internal error: a write outside a transaction")
        return self._execute(sql, params)

    def _migrate(self) -> None:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for number in range(version, len(MIGRATIONS)):
                for statement in MIGRATIONS[number].split(";"):
                    if statement.strip():
                        conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
            for stage in Stage:
                conn.execute(
                    "INSERT OR IGNORE INTO api_keys (stage, key, created_at) VALUES (?, ?, ?)",
                    (str(stage), new_api_key(), now()),
                )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- change counter ----------------------------------------------------------------

    def generation(self) -> int:
        """A number that changes whenever what is live (or a key) changes."""
        row = self._execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0])

    def bump_generation(self) -> None:
        self._write(
            "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) "
            "WHERE key = 'generation'"
        )

    # -- applications ------------------------------------------------------------------

    def get_application(self, app_id: str) -> Application | None:
        row = self._execute(
            "SELECT id, type, label FROM applications WHERE id = ?", (app_id,)
        ).fetchone()
        return Application(row["id"], row["label"], row["type"]) if row else None

    def list_applications(self) -> list[Application]:
        rows = self._execute("SELECT id, type, label FROM applications ORDER BY id")
        return [Application(r["id"], r["label"], r["type"]) for r in rows]

    def put_application(self, app: Application) -> None:
        stamp = now()
        self._write(
            "INSERT INTO applications (id, type, label, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET label = excluded.label, "
            "updated_at = excluded.updated_at",
            (app.id, app.type, app.label, stamp, stamp),
        )

    def delete_application(self, app_id: str) -> None:
        self._write("DELETE FROM live WHERE app_id = ?", (app_id,))
        self._write("DELETE FROM applications WHERE id = ?", (app_id,))

    # -- definitions -------------------------------------------------------------------

    def get_definition(self, app_id: str, api_id: str) -> Definition | None:
        row = self._execute(
            "SELECT * FROM definitions WHERE app_id = ? AND api_id = ?", (app_id, api_id)
        ).fetchone()
        return _definition_from_row(row) if row else None

    def list_definitions(self, app_id: str | None = None) -> list[Definition]:
        sql = "SELECT * FROM definitions"
        params: tuple[str, ...] = ()
        if app_id is not None:
            sql, params = sql + " WHERE app_id = ?", (app_id,)
        rows = self._execute(sql + " ORDER BY app_id, resource, method, api_id", params)
        return [_definition_from_row(r) for r in rows]

    def insert_definition(self, d: Definition) -> None:
        self._write(
            "INSERT INTO definitions (app_id, api_id, label, method, resource, "
            "content_type, requires_auth, action, functions, constants, created_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            _definition_values(d),
        )

    def replace_definition(self, old_api_id: str, d: Definition) -> None:
        self.delete_definition(d.app, old_api_id)
        self.insert_definition(d)

    def delete_definition(self, app_id: str, api_id: str) -> None:
        self._write("DELETE FROM definitions WHERE app_id = ? AND api_id = ?", (app_id, api_id))

    # -- deployments -------------------------------------------------------------------

    def add_deployment(self, app_id: str, stage: Stage, host: str, snapshot: dict[str, Any]) -> int:
        cursor = self._write(
            "INSERT INTO deployments (app_id, stage, deployed_at, host, snapshot) "
            "VALUES (?, ?, ?, ?, ?)",
            (app_id, str(stage), now(), host, json.dumps(snapshot)),
        )
        return int(cursor.lastrowid)  # type: ignore[arg-type]

    def set_live(self, stage: Stage, app_id: str, deployment_id: int | None) -> None:
        self._write("DELETE FROM live WHERE stage = ? AND app_id = ?", (str(stage), app_id))
        if deployment_id is not None:
            self._write(
                "INSERT INTO live (stage, app_id, deployment_id) VALUES (?, ?, ?)",
                (str(stage), app_id, deployment_id),
            )

    def live_deployment_id(self, stage: Stage, app_id: str) -> int | None:
        row = self._execute(
            "SELECT deployment_id FROM live WHERE stage = ? AND app_id = ?", (str(stage), app_id)
        ).fetchone()
        return int(row[0]) if row else None

    def list_deployments(self, app_id: str | None = None) -> list[Deployment]:
        sql = (
            "SELECT d.id, d.app_id, d.stage, d.deployed_at, d.host, "
            "l.deployment_id IS NOT NULL AS active FROM deployments d "
            "LEFT JOIN live l ON l.deployment_id = d.id"
        )
        params: tuple[str, ...] = ()
        if app_id is not None:
            sql, params = sql + " WHERE d.app_id = ?", (app_id,)
        rows = self._execute(sql + " ORDER BY d.id", params)
        return [
            Deployment(
                r["id"],
                r["app_id"],
                Stage(r["stage"]),
                r["deployed_at"],
                r["host"],
                bool(r["active"]),
            )
            for r in rows
        ]

    def get_deployment(self, deployment_id: int) -> tuple[Deployment, dict[str, Any]] | None:
        row = self._execute(
            "SELECT d.*, l.deployment_id IS NOT NULL AS active FROM deployments d "
            "LEFT JOIN live l ON l.deployment_id = d.id WHERE d.id = ?",
            (deployment_id,),
        ).fetchone()
        if row is None:
            return None
        deployment = Deployment(
            row["id"],
            row["app_id"],
            Stage(row["stage"]),
            row["deployed_at"],
            row["host"],
            bool(row["active"]),
        )
        return deployment, json.loads(row["snapshot"])

    def live_snapshots(self) -> list[tuple[Stage, str, int, dict[str, Any]]]:
        """Every (stage, app, deployment id, snapshot) that is served now."""
        rows = self._execute(
            "SELECT l.stage, l.app_id, l.deployment_id, d.snapshot FROM live l "
            "JOIN deployments d ON d.id = l.deployment_id ORDER BY l.stage, l.app_id"
        )
        return [(Stage(r[0]), r[1], int(r[2]), json.loads(r[3])) for r in rows]

    # -- keys and settings -------------------------------------------------------------

    def api_keys(self) -> dict[Stage, str]:
        rows = self._execute("SELECT stage, key FROM api_keys ORDER BY stage")
        return {Stage(r[0]): r[1] for r in rows}

    def set_api_key(self, stage: Stage, key: str) -> None:
        self._write(
            "UPDATE api_keys SET key = ?, created_at = ? WHERE stage = ?", (key, now(), str(stage))
        )

    def stored_settings(self) -> dict[str, str]:
        return {r[0]: r[1] for r in self._execute("SELECT name, value FROM settings")}

    def set_setting(self, name: str, value: str | None) -> None:
        self._write("DELETE FROM settings WHERE name = ?", (name,))
        if value is not None:
            self._write("INSERT INTO settings (name, value) VALUES (?, ?)", (name, value))

    # -- request log -------------------------------------------------------------------

    def append_requests(
        self,
        rows: list[tuple[str, str, str, str, int, float]],
        keep: int,
        stats: Iterable[tuple[str, str, str, int, int, int, str, str | None, str | None]] = (),
        at_offset: float = 0.0,
    ) -> None:
        """Add request-log rows (at, stage, method, path, status, ms); keep the newest ``keep``.

        ``at`` is seconds since the epoch (or ISO text); with ``at_offset``, it is a clock
        reading that the offset turns into epoch seconds when the log is read (so a busy
        server need not touch every row).

        ``stats`` adds to the per-action counters: (stage, app, api_id, requests, errors,
        last status, last request at, last error or None, last error at or None).
        """
        with self.transaction():
            self._conn().executemany(
                "INSERT INTO action_stats (stage, app_id, api_id, requests, errors, "
                "last_status, last_request_at, last_error, last_error_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (stage, app_id, api_id) DO UPDATE SET "
                "requests = action_stats.requests + excluded.requests, "
                "errors = action_stats.errors + excluded.errors, "
                "last_status = excluded.last_status, "
                "last_request_at = excluded.last_request_at, "
                "last_error = COALESCE(excluded.last_error, action_stats.last_error), "
                "last_error_at = COALESCE(excluded.last_error_at, action_stats.last_error_at)",
                stats,
            )
            rows = rows[-keep:] if keep > 0 else []
            self._write(
                "INSERT INTO request_log_batches (entries, rows) VALUES (?, ?)",
                (len(rows), pickle.dumps((at_offset, rows), protocol=5)),
            )
            # Drop the batches that hold only entries older than the newest ``keep``.
            self._write(
                "DELETE FROM request_log_batches WHERE id < (SELECT COALESCE(MAX(id), 0) FROM "
                "(SELECT id, SUM(entries) OVER (ORDER BY id DESC) AS newer "
                "FROM request_log_batches) AS counted WHERE newer >= ?)",
                (keep,),
            )

    def request_log(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The newest ``limit`` logged requests (all that are kept if None), oldest first."""
        entries: list[list[Any]] = []
        batches = self._execute("SELECT rows FROM request_log_batches ORDER BY id DESC")
        for (blob,) in batches:
            offset, rows = pickle.loads(blob)  # written by this module only
            if offset:
                rows = [(offset + row[0], *row[1:]) for row in rows]
            entries[:0] = rows
            if limit is not None and len(entries) >= limit:
                break
        if limit is not None:
            entries = entries[-limit:] if limit > 0 else []
        columns = ("at", "stage", "method", "path", "status", "duration_ms")
        rows = [dict(zip(columns, entry, strict=True)) for entry in entries]
        for row in rows:
            if isinstance(row["at"], float):
                row["at"] = iso_time(row["at"])
        return rows

    def action_stats(self) -> dict[tuple[str, str, str], dict[str, Any]]:
        """Per (stage, app, api_id): requests, errors, last status / request / error."""
        rows = self._execute("SELECT * FROM action_stats")
        return {
            (r["stage"], r["app_id"], r["api_id"]): {
                "requests": r["requests"],
                "errors": r["errors"],
                "lastStatus": r["last_status"],
                "lastRequestAt": r["last_request_at"],
                "lastError": r["last_error"],
                "lastErrorAt": r["last_error_at"],
            }
            for r in rows
        }
