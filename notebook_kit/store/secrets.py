"""The secrets' SQL: table ``secret_versions`` and the pins in ``deployments.secrets``.

Every set of a secret is a new row (an immutable version); a delete is a row without a
value. A secret's current version on a stage is its newest row, unless that row is a
delete. The store holds only ciphertext and the id of the key that made it, never the
key (``workspace.secrets`` encrypts and decrypts). A deploy pins the current versions of
its application and stage (``pin``: their ids in ``deployments.secrets``), so a rollback
serves them again; a version neither current nor pinned by a deployment still kept is
deleted (``collect``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..domain.clock import now
from ..domain.models import Stage
from .dialect import StoreDB
from .snapshots import decode_ids, encode_ids

__all__ = ["SecretRow", "SecretTables"]

_SELECT = "SELECT id, app_id, stage, name, value, key_id, set_at FROM secret_versions"
_CURRENT = (
    "SELECT s.id, s.app_id, s.stage, s.name, s.value, s.key_id, s.set_at "
    "FROM secret_versions s WHERE s.app_id = ? {stage} AND s.id = ("
    "SELECT MAX(t.id) FROM secret_versions t "
    "WHERE t.app_id = s.app_id AND t.stage = s.stage AND t.name = s.name) "
    "AND s.value IS NOT NULL ORDER BY s.name, s.stage"
)


@dataclass(frozen=True)
class SecretRow:
    """One stored version: ``value`` is ciphertext (base64), made with key ``key_id``."""

    id: int
    app: str
    stage: str
    name: str
    value: str
    key_id: str
    set_at: str


def _row(r: Sequence[object]) -> SecretRow:
    return SecretRow(
        int(str(r[0])), str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5]), str(r[6])
    )


class SecretTables:
    """The secrets' rows in one store (see the module docstring)."""

    def __init__(self, db: StoreDB) -> None:
        self._db = db

    def current(self, app: str, stage: Stage | None = None) -> list[SecretRow]:
        """The current version of each secret of ``app`` (on ``stage``, or on both)."""
        if stage is None:
            return [_row(r) for r in self._db.execute(_CURRENT.format(stage=""), (app,))]
        sql = _CURRENT.format(stage="AND s.stage = ?")
        return [_row(r) for r in self._db.execute(sql, (app, str(stage)))]

    def add(self, app: str, stage: Stage, name: str, value: str | None, key_id: str) -> int:
        """A new version of secret ``name`` (``value`` None: deleted). Inside a
        transaction."""
        row = self._db.write(
            "INSERT INTO secret_versions (app_id, stage, name, value, key_id, set_at) "
            "VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
            (app, str(stage), name, value, key_id, now()),
        ).fetchone()
        return int(row[0])

    def pin(self, deployment_id: int, app: str, stage: Stage) -> list[int]:
        """Pin the current versions of ``app``'s secrets on ``stage`` to the deployment.
        Inside the deploy's transaction."""
        ids = [row.id for row in self.current(app, stage)]
        self._db.write(
            "UPDATE deployments SET secrets = ? WHERE id = ?", (encode_ids(ids), deployment_id)
        )
        return ids

    def pinned(self, deployment_id: int) -> tuple[str, str, list[SecretRow]] | None:
        """The application, stage and pinned versions of a deployment (None: no such
        deployment)."""
        head = self._db.execute(
            "SELECT app_id, stage, secrets FROM deployments WHERE id = ?", (deployment_id,)
        ).fetchone()
        if head is None:
            return None
        ids = decode_ids(str(head[2]))
        rows: list[SecretRow] = []
        if ids:
            marks = ",".join("?" * len(ids))
            found = self._db.execute(
                f"{_SELECT} WHERE id IN ({marks}) AND value IS NOT NULL ORDER BY name",
                tuple(ids),
            )
            rows = [_row(r) for r in found]
        return str(head[0]), str(head[1]), rows

    def every(self) -> list[SecretRow]:
        """Every stored version that holds a value (for a key rotation)."""
        return [_row(r) for r in self._db.execute(f"{_SELECT} WHERE value IS NOT NULL ORDER BY id")]

    def rewrite(self, version_id: int, value: str, key_id: str) -> None:
        """Replace a version's ciphertext (the same value under a new key)."""
        self._db.write(
            "UPDATE secret_versions SET value = ?, key_id = ? WHERE id = ?",
            (value, key_id, version_id),
        )

    def key_ids(self) -> set[str]:
        """The ids of the keys the stored values were encrypted with."""
        rows = self._db.execute(
            "SELECT DISTINCT key_id FROM secret_versions WHERE value IS NOT NULL"
        )
        return {str(r[0]) for r in rows}

    def collect(self, app: str, stage: Stage) -> int:
        """Delete the versions of ``app`` on ``stage`` that are neither current nor pinned
        by a deployment (and deletes that hide nothing any more); how many went."""
        pinned: set[int] = set()
        for (text,) in self._db.execute(
            "SELECT secrets FROM deployments WHERE app_id = ? AND stage = ? AND secrets <> ''",
            (app, str(stage)),
        ):
            pinned.update(decode_ids(str(text)))
        rows = self._db.execute(
            "SELECT id, name, value FROM secret_versions WHERE app_id = ? AND stage = ? "
            "ORDER BY name, id DESC",
            (app, str(stage)),
        ).fetchall()
        doomed: list[int] = []
        newest: dict[str, int] = {}
        for version_id, name, value in rows:
            if str(name) not in newest:
                newest[str(name)] = int(version_id)
                older_pinned = any(
                    int(r[0]) in pinned for r in rows if r[1] == name and r[0] != version_id
                )
                if value is None and not older_pinned:
                    doomed.append(int(version_id))
                continue
            if int(version_id) not in pinned:
                doomed.append(int(version_id))
        for version_id in doomed:
            self._db.write("DELETE FROM secret_versions WHERE id = ?", (version_id,))
        return len(doomed)

    def forget(self, app: str) -> None:
        """Delete every version of ``app``'s secrets (the application is deleted)."""
        self._db.write("DELETE FROM secret_versions WHERE app_id = ?", (app,))
