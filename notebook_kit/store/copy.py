"""Copying a whole store into an empty one (``notebook-kit store copy --to URL``).

Every table is copied row for row, ids included, so deployment history, live pointers,
keys, settings, users and the request log arrive as they were. The copy is one
transaction on the target, which also holds its write lock: it all arrives or nothing
does, and a target that already holds anything is refused before a row is written. The
source is read inside its own transaction, so it is one consistent moment of it.
"""

from __future__ import annotations

from ..errors import ConflictError
from .dialect import StoreDB

__all__ = ["COPIED_TABLES", "copy_rows"]

#: Every table a store holds beyond ``meta`` and the schema version, parents first (a
#: foreign key finds its row). A new table group appends its tables here.
COPIED_TABLES: tuple[str, ...] = (
    "applications",
    "definitions",
    "examples",
    "definition_versions",
    "deployments",
    "live",
    "settings",
    "users",
    "user_groups",
    "group_members",
    "password_resets",
    "action_stats",
    "request_log_batches",
    "secret_versions",
    "schedules",
    "schedule_states",
    "schedule_runs",
)
#: Tables whose ``id`` the target must continue after the copied ones.
_NUMBERED = (
    "definition_versions",
    "deployments",
    "request_log_batches",
    "secret_versions",
    "schedule_runs",
)


def copy_rows(source: StoreDB, target: StoreDB) -> dict[str, int]:
    """Copy every row of ``source`` into ``target`` (empty but for its keys); returns the
    rows copied per table. Raises ``ConflictError`` when the target holds anything, with
    nothing written."""
    counts: dict[str, int] = {}
    with source.transaction(None), target.transaction(None):
        held = [t for t in COPIED_TABLES if target.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()]
        if held:
            raise ConflictError(
                f"the target store is not empty (it has {', '.join(held)}): "
                "copy only into a new, empty store"
            )
        for table in (*COPIED_TABLES, "api_keys"):
            rows = source.execute(f"SELECT * FROM {table}").fetchall()
            if table == "api_keys":
                target.write("DELETE FROM api_keys")
            if rows:
                columns = list(rows[0].keys())
                marks = ", ".join("?" for _ in columns)
                target.executemany(
                    f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})",
                    [tuple(row) for row in rows],
                )
            counts[table] = len(rows)
        target.reset_ids(_NUMBERED)
        generation = source.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        target.write(
            "UPDATE meta SET value = ? WHERE key = 'generation'", (str(int(generation[0]) + 1),)
        )
        target.changed()
    return counts
