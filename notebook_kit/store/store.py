"""The workspace store: the single source of truth, shared by every process and node.

SQLite in the workspace directory by default (WAL mode, so a notebook, the CLI and servers
use it at once: ``connection``, tables in ``schema``), or PostgreSQL shared by many nodes
(``postgres``, tables in ``pg_schema``; ``opening.open_store`` picks one from a URL). The
SQL is written once, in what both speak (``dialect``); the request log's is in
``request_log``, the user directory's in ``users``, the content-addressed deployment
history's in ``snapshots``. Every change runs inside ``transaction()``: all or nothing.
A ``generation`` counter goes up with every change to what is live (deploys, undeploys,
rollbacks, keys, settings); servers poll it, and on PostgreSQL are also told at once.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import string
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..domain.clock import now
from ..domain.models import Application, Definition, Deployment, Stage
from ..errors import StoreError
from .canaries import Canaries, CanaryRow
from .connection import StoreConnection, is_disk_full
from .consumers import ConsumerTables, UsageRow
from .copy import copy_rows
from .dialect import DISK_FULL, StoreDB, mask_url
from .examples import ExampleTables
from .request_log import ActionStats, RequestLog
from .rows import definition_from_row, definition_values, deployment_from_row
from .schedules import ScheduleTables
from .secrets import SecretTables
from .snapshots import Snapshots, decode_ids, version_of
from .users import UserTables

if TYPE_CHECKING:
    from .listener import ChangeListener

__all__ = ["Store", "new_api_key"]

_KEY_ALPHABET = string.ascii_letters + string.digits


def new_api_key() -> str:
    """40 alphanumeric characters from the OS's secure random source."""
    return "".join(secrets.choice(_KEY_ALPHABET) for _ in range(40))


def _create_private_file(path: Path) -> None:
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)


class Store:
    """All reads and writes of one workspace database.

    Table groups of their own: ``users`` (the user directory's tables) and the request log
    (``RequestLog``, whose methods the store offers as its own). They share one
    ``StoreConnection``, so a ``transaction()`` spans all of them.
    """

    def __init__(self, path: str | Path | None = None, *, db: StoreDB | None = None) -> None:
        """The SQLite store at ``path``, or the store behind ``db`` (``open_store`` makes
        the PostgreSQL one)."""
        if db is None:
            if path is None:
                raise TypeError("Store needs a path or a db")
            db = StoreConnection(path)
        self._db = db
        self.path: Path | None = db.path
        self.users = UserTables(db)
        self._log = RequestLog(db)
        self.snapshots = Snapshots(db)
        self.canaries = Canaries(db)
        self.secrets = SecretTables(db)
        self.consumers = ConsumerTables(db)
        self.schedules = ScheduleTables(db)
        self.examples = ExampleTables(db, self._count_change)
        where = self.path if self.path is not None else mask_url(db.url or "")
        try:
            if self.path is not None and not self.path.exists():
                _create_private_file(self.path)
            self._migrate()
        except (sqlite3.Error, StoreError) as exc:
            if str(exc) == DISK_FULL or (self.path is not None and is_disk_full(exc, self.path)):
                raise StoreError(DISK_FULL) from exc  # the one thing to say, and to do
            raise StoreError(f"cannot open the workspace store {where}: {exc}") from exc

    def __repr__(self) -> str:
        return f"Store({self.location!r})"

    @property
    def location(self) -> str:
        """Where the store lives, fit to print: the SQLite file, or the URL (password masked)."""
        return str(self.path) if self.path is not None else mask_url(self._db.url or "")

    @property
    def url(self) -> str | None:
        """The PostgreSQL URL, password included (for starting a server process), or
        None for the SQLite file."""
        return self._db.url

    def _migrate(self) -> None:
        with self._db.transaction(self):
            self._db.migrate()
            for stage in Stage:
                self._db.write(
                    "INSERT INTO api_keys (stage, key, created_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (stage) DO NOTHING",
                    (str(stage), new_api_key(), now()),
                )

    def listener(self) -> ChangeListener | None:
        """Something to block on until a change commits (PostgreSQL's LISTEN), or None
        where readers can only poll (SQLite). Each caller gets its own connection."""
        if self._db.url is None:
            return None
        from .listener import ChangeListener

        return ChangeListener(self._db.url)

    def copy_into(self, target: Store) -> dict[str, int]:
        """Copy everything into ``target``, which must be empty (``copy.copy_rows``)."""
        return copy_rows(self._db, target._db)

    def transaction(self, *, durable: bool = True) -> AbstractContextManager[Store]:
        """One atomic change: all of it happens, or none. Nested uses join the outer one.
        ``durable=False``: the commit does not wait for the disk (for counters a crash of
        the machine may lose the last of; the store stays consistent)."""
        return self._db.transaction(self, durable=durable)

    def close(self) -> None:
        """Close this thread's connection (it reopens on next use)."""
        self._db.close()

    # -- change counter ----------------------------------------------------------------

    def generation(self) -> int:
        """A number that changes whenever what is live (or a key) changes."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0])

    def bump_generation(self) -> None:
        """Count a change to what is live; PostgreSQL also notifies listening nodes (at
        commit), SQLite's readers see it at their next poll."""
        self._db.write(
            "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) "
            "WHERE key = 'generation'"
        )
        self._db.changed()

    def change_stamp(self) -> str:
        """Text that differs whenever applications, definitions, deployments, what is live,
        keys or settings change: cheap enough to poll every second. Two counters: the
        generation (every change to what is live, keys, settings) and the count of saved
        changes, which this store's own application and definition writes keep (maxima of
        timestamps miss two changes in one millisecond)."""
        rows = self._db.execute(
            "SELECT key, value FROM meta WHERE key IN ('generation', 'changes') ORDER BY key"
        ).fetchall()
        return "/".join(f"{r[0]}={r[1]}" for r in rows)

    def _count_change(self) -> None:
        """One more saved change of an application or a definition (``change_stamp``)."""
        self._db.write(
            "INSERT INTO meta (key, value) VALUES ('changes', '1') ON CONFLICT (key) "
            "DO UPDATE SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)"
        )

    def get_application(self, app_id: str) -> Application | None:
        row = self._db.execute(
            "SELECT id, type, label FROM applications WHERE id = ?", (app_id,)
        ).fetchone()
        return Application(row["id"], row["label"], row["type"]) if row else None

    def list_applications(self) -> list[Application]:
        rows = self._db.execute("SELECT id, type, label FROM applications ORDER BY id")
        return [Application(r["id"], r["label"], r["type"]) for r in rows]

    def put_application(self, app: Application) -> None:
        stamp = now()
        self._db.write(
            "INSERT INTO applications (id, type, label, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET label = excluded.label, "
            "updated_at = excluded.updated_at",
            (app.id, app.type, app.label, stamp, stamp),
        )
        self._count_change()

    def delete_application(self, app_id: str) -> None:
        self._db.write("DELETE FROM live WHERE app_id = ?", (app_id,))
        self._db.write("DELETE FROM applications WHERE id = ?", (app_id,))
        self._count_change()

    # -- definitions -------------------------------------------------------------------

    def get_definition(self, app_id: str, api_id: str) -> Definition | None:
        row = self._db.execute(
            "SELECT * FROM definitions WHERE app_id = ? AND api_id = ?", (app_id, api_id)
        ).fetchone()
        return definition_from_row(row) if row else None

    def list_definitions(
        self, app_id: str | None = None, reuse: dict[tuple[Any, ...], Definition] | None = None
    ) -> list[Definition]:
        """Saved definitions in route order. With ``reuse``, a row read before (same
        values) gives the same ``Definition`` object back, and new ones are added to it:
        reading again to see what changed then costs the query, not the validation."""
        sql = "SELECT * FROM definitions"
        params: tuple[str, ...] = ()
        if app_id is not None:
            sql, params = sql + " WHERE app_id = ?", (app_id,)
        rows = self._db.execute(sql + " ORDER BY app_id, resource, method, api_id", params)
        if reuse is None:
            return [definition_from_row(r) for r in rows]
        found = []
        for row in rows:
            key = tuple(row)
            definition = reuse.get(key)
            if definition is None:
                definition = reuse[key] = definition_from_row(row)
            found.append(definition)
        return found

    def insert_definition(self, d: Definition) -> None:
        self._db.write(
            "INSERT INTO definitions (app_id, api_id, label, method, resource, "
            "content_type, requires_auth, action, functions, constants, created_at, "
            "updated_at, timeout, contract) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            definition_values(d),
        )
        self._count_change()

    def replace_definition(self, old_api_id: str, d: Definition) -> None:
        """Save ``d`` over ``old_api_id``; a rename takes the definition's examples and
        schedules along."""
        self._db.write(
            "DELETE FROM definitions WHERE app_id = ? AND api_id = ?", (d.app, old_api_id)
        )
        self.insert_definition(d)
        if old_api_id != d.id:
            self.examples.move(d.app, old_api_id, d.id)
            self.schedules.rename_definition(d.app, old_api_id, d.id)

    def delete_definition(self, app_id: str, api_id: str) -> None:
        """Delete a definition and its examples."""
        self._db.write("DELETE FROM definitions WHERE app_id = ? AND api_id = ?", (app_id, api_id))
        self.examples.forget(app_id, api_id)
        self._count_change()

    # -- deployments -------------------------------------------------------------------

    def add_deployment(
        self,
        app_id: str,
        stage: Stage,
        host: str,
        snapshot: dict[str, Any],
        versions: Sequence[tuple[str, str]] | None = None,
        description: str = "",
    ) -> int:
        """Record a deployment of ``snapshot`` (its definitions stored content-addressed;
        ``versions``: their (hash, canonical text) pairs, when the caller has them)."""
        if versions is None:
            versions = [version_of(d) for d in snapshot["definitions"]]
        return self.snapshots.add(app_id, stage, host, snapshot, versions, description)

    def prune_deployments(self, app_id: str, stage: Stage, keep: int) -> int:
        """Keep the newest ``keep`` deployments of ``app_id`` on ``stage`` and the live one
        (``Snapshots.prune``); how many were deleted."""
        return self.snapshots.prune(app_id, stage, keep)

    def set_live(self, stage: Stage, app_id: str, deployment_id: int | None) -> None:
        self._db.write("DELETE FROM live WHERE stage = ? AND app_id = ?", (str(stage), app_id))
        if deployment_id is not None:
            self._db.write(
                "INSERT INTO live (stage, app_id, deployment_id) VALUES (?, ?, ?)",
                (str(stage), app_id, deployment_id),
            )

    def live_deployment_id(self, stage: Stage, app_id: str) -> int | None:
        row = self._db.execute(
            "SELECT deployment_id FROM live WHERE stage = ? AND app_id = ?", (str(stage), app_id)
        ).fetchone()
        return int(row[0]) if row else None

    def list_deployments(self, app_id: str | None = None) -> list[Deployment]:
        sql = (
            "SELECT d.id, d.app_id, d.stage, d.deployed_at, d.host, d.forced, d.checks, "
            "d.description, "
            "l.deployment_id IS NOT NULL AS active FROM deployments d "
            "LEFT JOIN live l ON l.deployment_id = d.id"
        )
        params: tuple[str, ...] = ()
        if app_id is not None:
            sql, params = sql + " WHERE d.app_id = ?", (app_id,)
        rows = self._db.execute(sql + " ORDER BY d.id", params)
        return [deployment_from_row(r) for r in rows]

    def deployment_record(self, deployment_id: int) -> Deployment | None:
        """One deployment's record, without its snapshot."""
        row = self._db.execute(
            "SELECT d.id, d.app_id, d.stage, d.deployed_at, d.host, d.forced, d.checks, "
            "d.description, "
            "l.deployment_id IS NOT NULL AS active FROM deployments d "
            "LEFT JOIN live l ON l.deployment_id = d.id WHERE d.id = ?",
            (deployment_id,),
        ).fetchone()
        return None if row is None else deployment_from_row(row)

    def get_deployment(self, deployment_id: int) -> tuple[Deployment, dict[str, Any]] | None:
        row = self._db.execute(
            "SELECT d.id, d.app_id, d.stage, d.deployed_at, d.host, d.snapshot, d.versions, "
            "d.forced, d.checks, "
            "d.description, "
            "l.deployment_id IS NOT NULL AS active FROM deployments d "
            "LEFT JOIN live l ON l.deployment_id = d.id WHERE d.id = ?",
            (deployment_id,),
        ).fetchone()
        if row is None:
            return None
        head = json.loads(row["snapshot"])
        snapshot = self.snapshots.snapshot(head, decode_ids(row["versions"]))
        return deployment_from_row(row), snapshot

    def live_pointers(self) -> list[tuple[Stage, str, int]]:
        """Every (stage, app, deployment id) served now: one small read."""
        rows = self._db.execute(
            "SELECT stage, app_id, deployment_id FROM live ORDER BY stage, app_id"
        )
        return [(Stage(r[0]), r[1], int(r[2])) for r in rows]

    def live_view(
        self,
    ) -> tuple[int, list[tuple[Stage, str, int]], dict[Stage, str], list[CanaryRow]]:
        """The generation, ``live_pointers()``, ``api_keys()`` and the running canaries,
        read as of one moment, so a server's state labelled with a generation holds
        exactly that generation's."""
        with self._db.consistent_read():
            generation, pointers, keys = self.generation(), self.live_pointers(), self.api_keys()
            return generation, pointers, keys, self.canaries.running()

    def live_snapshots(self) -> list[tuple[Stage, str, int, dict[str, Any]]]:
        """Every (stage, app, deployment id, snapshot) that is served now."""
        rows = self._db.execute(
            "SELECT l.stage, l.app_id, l.deployment_id, d.snapshot, d.versions FROM live l "
            "JOIN deployments d ON d.id = l.deployment_id ORDER BY l.stage, l.app_id"
        ).fetchall()
        ids = {r[2]: decode_ids(r[4]) for r in rows}
        bodies = self.snapshots.bodies([i for version_ids in ids.values() for i in version_ids])
        return [
            (
                Stage(r[0]),
                r[1],
                int(r[2]),
                {**json.loads(r[3]), "definitions": [bodies[i] for i in ids[r[2]]]},
            )
            for r in rows
        ]

    # -- keys and settings -------------------------------------------------------------

    def api_keys(self) -> dict[Stage, str]:
        rows = self._db.execute("SELECT stage, key FROM api_keys ORDER BY stage")
        return {Stage(r[0]): r[1] for r in rows}

    def set_api_key(self, stage: Stage, key: str) -> None:
        self._db.write(
            "UPDATE api_keys SET key = ?, created_at = ? WHERE stage = ?", (key, now(), str(stage))
        )

    def stored_settings(self) -> dict[str, str]:
        return {r[0]: r[1] for r in self._db.execute("SELECT name, value FROM settings")}

    def set_setting(self, name: str, value: str | None) -> None:
        self._db.write("DELETE FROM settings WHERE name = ?", (name,))
        if value is not None:
            self._db.write("INSERT INTO settings (name, value) VALUES (?, ?)", (name, value))

    # -- the request log ---------------------------------------------------------------

    def append_requests(
        self,
        rows: Sequence[tuple[Any, ...]],
        keep: int,
        stats: Iterable[ActionStats] = (),
        at_offset: float = 0.0,
    ) -> None:
        """Add request-log rows and per-action counters (``RequestLog.append_requests``)."""
        self._log.append_requests(rows, keep, stats, at_offset)

    def append_batch(
        self,
        batch: bytes,
        count: int,
        keep: int,
        stats: Iterable[ActionStats] = (),
        usage: Iterable[UsageRow] = (),
        used: dict[str, str] | None = None,
    ) -> None:
        """Add a server's batch of log entries (``RequestLog.append_batch``), with what it
        adds to the consumers' usage and when their keys (by digest) were last used."""
        with self._db.transaction(self, durable=False):
            self._log.append_batch(batch, count, keep, stats)
            self.consumers.add_usage(usage)
            if used:
                self.consumers.touch(used)

    def request_log(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The newest ``limit`` logged requests (all that are kept if None), oldest first."""
        return self._log.request_log(limit)

    def request_log_entry(self, entry_id: int) -> dict[str, Any] | None:
        """The kept log entry numbered ``entry_id``, its recorded request included."""
        return self._log.request_log_entry(entry_id)

    def outcomes_since(self, after: int) -> list[tuple[int, float, int | None]]:
        """(status, ms, deployment) of the log entries numbered above ``after``."""
        return self._log.outcomes_since(after)

    def action_stats(self) -> dict[tuple[str, str, str], dict[str, Any]]:
        """Per (stage, app, api_id): requests, errors, last status / request / error."""
        return self._log.action_stats()
