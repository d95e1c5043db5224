"""The examples table, and what a deployment's check of them found.

Table ``examples`` holds one row per example (key: application, definition, name), its
request and expectations as JSON. An example follows its definition: deleting the
definition deletes its examples, renaming it renames theirs (``Store`` calls
``forget``/``move`` from its definition writes), deleting the application deletes them
(a foreign key). Two columns of ``deployments`` keep each deploy's check: ``forced`` and
``checks`` (the report's JSON).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

from ..domain.clock import now
from ..domain.examples import Example
from .dialect import StoreDB

__all__ = ["ExampleTables"]


def _example_from_row(row: Any) -> Example:
    return Example.from_dict(
        {
            "app": row["app_id"],
            "api_id": row["api_id"],
            "name": row["name"],
            "request": json.loads(row["request"]),
            "expect": json.loads(row["expect"]),
        }
    )


class ExampleTables:
    """Reads and writes of examples; ``count_change`` moves the store's change stamp."""

    def __init__(self, db: StoreDB, count_change: Callable[[], None]) -> None:
        self._db = db
        self._count_change = count_change

    def list(self, app_id: str | None = None, api_id: str | None = None) -> list[Example]:
        """Examples ordered by application, definition and name (byte order)."""
        sql, params = "SELECT * FROM examples", cast(tuple[str, ...], ())
        if app_id is not None:
            sql, params = sql + " WHERE app_id = ?", (app_id,)
            if api_id is not None:
                sql, params = sql + " AND api_id = ?", (app_id, api_id)
        rows = self._db.execute(sql + " ORDER BY app_id, api_id, name", params)
        return [_example_from_row(r) for r in rows]

    def get(self, app_id: str, api_id: str, name: str) -> Example | None:
        row = self._db.execute(
            "SELECT * FROM examples WHERE app_id = ? AND api_id = ? AND name = ?",
            (app_id, api_id, name),
        ).fetchone()
        return None if row is None else _example_from_row(row)

    def put(self, example: Example) -> None:
        """Insert ``example``, or overwrite the one of its key (keeping its creation time)."""
        stamp = now()
        self._db.write(
            "INSERT INTO examples (app_id, api_id, name, request, expect, created_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (app_id, api_id, name) "
            "DO UPDATE SET request = excluded.request, expect = excluded.expect, "
            "updated_at = excluded.updated_at",
            (
                example.app,
                example.api_id,
                example.name,
                json.dumps(example.request.to_dict()),
                json.dumps(example.expect.to_dict()),
                stamp,
                stamp,
            ),
        )
        self._count_change()

    def delete(self, app_id: str, api_id: str, name: str) -> None:
        self._db.write(
            "DELETE FROM examples WHERE app_id = ? AND api_id = ? AND name = ?",
            (app_id, api_id, name),
        )
        self._count_change()

    def forget(self, app_id: str, api_id: str) -> None:
        """Delete the examples of one definition (it is being deleted)."""
        self._db.write("DELETE FROM examples WHERE app_id = ? AND api_id = ?", (app_id, api_id))

    def move(self, app_id: str, old_api_id: str, new_api_id: str) -> None:
        """The examples of a renamed definition follow it."""
        self._db.write(
            "UPDATE examples SET api_id = ? WHERE app_id = ? AND api_id = ?",
            (new_api_id, app_id, old_api_id),
        )

    def record_check(self, deployment_id: int, forced: bool, checks: dict[str, Any] | None) -> None:
        """Keep on a deployment whether it was forced and its check's report."""
        self._db.write(
            "UPDATE deployments SET forced = ?, checks = ? WHERE id = ?",
            (int(forced), "" if checks is None else json.dumps(checks), deployment_id),
        )
