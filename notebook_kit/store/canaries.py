"""Canaries: the second deployment a stage's live pointer may carry (table ``live``).

A ``live`` row (stage, app -> the deployment served) gains ``canary_id`` (the deployment
serving ``canary_percent`` % of the calls), when it started, its automatic-rollback
threshold, a note on how the last one ended, and where the request log stood then
(``canary_log_from``, the log's running count: entries numbered above it were answered
during the canary). A deploy, rollback or
undeploy rewrites the row (``Store.set_live``) and so ends any canary with it.
"""

from __future__ import annotations

from typing import Any

from ..domain.clock import now
from ..domain.models import Stage
from .dialect import StoreDB
from .request_log import LAST_SQL

__all__ = ["Canaries", "CanaryRow"]

# (stage, app, live deployment, canary deployment, percent, started at, rollback above %
# or None, request-log running count at the start)
CanaryRow = tuple[Stage, str, int, int, int, str, "float | None", int]

_COLUMNS = (
    "stage, app_id, deployment_id, canary_id, canary_percent, canary_started_at, "
    "canary_rollback_above, canary_log_from"
)


def _row(r: Any) -> CanaryRow:
    threshold = None if r[6] is None else float(r[6])
    return (Stage(r[0]), r[1], int(r[2]), int(r[3]), int(r[4]), r[5], threshold, int(r[7]))


class Canaries:
    """Reads and writes of the canary columns of ``live``."""

    def __init__(self, db: StoreDB) -> None:
        self._db = db

    def start(
        self,
        stage: Stage,
        app: str,
        canary_id: int,
        percent: int,
        rollback_above: float | None,
    ) -> None:
        """Serve ``canary_id`` to ``percent`` % of ``app``'s calls on ``stage`` (its live
        row must exist). Inside a transaction."""
        log_from = self._db.execute(LAST_SQL).fetchone()[0]
        self._db.write(
            "UPDATE live SET canary_id = ?, canary_percent = ?, canary_started_at = ?, "
            "canary_rollback_above = ?, canary_log_from = ?, canary_note = NULL "
            "WHERE stage = ? AND app_id = ?",
            (canary_id, percent, now(), rollback_above, log_from, str(stage), app),
        )

    def end(self, stage: Stage, app: str, note: str | None = None) -> None:
        """Drop the canary of ``app`` on ``stage`` (the live side stays); ``note`` says
        why, kept until the stage's next deploy, rollback or canary."""
        self._db.write(
            "UPDATE live SET canary_id = NULL, canary_percent = NULL, canary_started_at = "
            "NULL, canary_rollback_above = NULL, canary_log_from = NULL, canary_note = ? "
            "WHERE stage = ? AND app_id = ?",
            (note, str(stage), app),
        )

    def note(self, stage: Stage, app: str) -> str | None:
        """How the last canary of ``app`` on ``stage`` ended, when it was noted."""
        row = self._db.execute(
            "SELECT canary_note FROM live WHERE stage = ? AND app_id = ?", (str(stage), app)
        ).fetchone()
        return None if row is None else row[0]

    def get(self, stage: Stage, app: str) -> CanaryRow | None:
        """The canary of ``app`` on ``stage``, or None."""
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM live WHERE stage = ? AND app_id = ? AND canary_id IS NOT NULL",
            (str(stage), app),
        ).fetchone()
        return None if row is None else _row(row)

    def running(self) -> list[CanaryRow]:
        """Every canary running now, by stage and application."""
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM live WHERE canary_id IS NOT NULL ORDER BY stage, app_id"
        )
        return [_row(r) for r in rows]
