"""Schedules' tables: the saved schedules, their pauses per stage, and the run log.

``schedules`` holds an application's saved schedules (key: application, name); a deploy
copies them into its snapshot, which is what runs. ``schedule_states`` says which
deployed schedules are paused on which stage, and since when they run again.
``schedule_runs`` is the run log: one row per tick of a schedule on a stage, UNIQUE on
(stage, application, schedule, tick). That row is the lease: a node claims a tick by
inserting it, and only the node whose insert went in runs it, whatever the number of
nodes. ``lease_until`` (seconds since the epoch) is renewed by the claiming node while
the run is open; an open row whose lease ran out (its node was killed) is closed as
failed by whichever node sees it first (``expire``).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Any

from ..domain.clock import now
from ..domain.schedules import Schedule
from .dialect import StoreDB

__all__ = ["OPEN", "RUNS_KEPT", "ScheduleTables"]

#: Statuses of a run not finished yet.
OPEN = ("queued", "running")
#: Runs kept per schedule and stage (older ones are trimmed as new ones come).
RUNS_KEPT = 10_000
_RUN_COLUMNS = (
    "id, stage, app_id, schedule, tick, manual, node, status, claimed_at, started_at, "
    "finished_at, duration_ms, error"
)


def _schedule(row: Any) -> Schedule:
    return Schedule(row[0], row[1], row[2], row[3], row[4], row[5])


def _run(row: Any) -> dict[str, Any]:
    names = [n.strip() for n in _RUN_COLUMNS.split(",")]
    run = dict(zip(names, tuple(row), strict=True))
    run["app"] = run.pop("app_id")
    run["manual"] = bool(run["manual"])
    return run


class ScheduleTables:
    """Reads and writes of schedules, their pauses and their runs."""

    def __init__(self, db: StoreDB) -> None:
        self._db = db

    # -- saved schedules ------------------------------------------------------------------

    def list(self, app_id: str | None = None) -> list[Schedule]:
        """Saved schedules, by application and name (byte order)."""
        sql = "SELECT app_id, name, definition, cron, timezone, overlap FROM schedules"
        params: tuple[str, ...] = ()
        if app_id is not None:
            sql, params = sql + " WHERE app_id = ?", (app_id,)
        return [_schedule(r) for r in self._db.execute(sql + " ORDER BY app_id, name", params)]

    def get(self, app_id: str, name: str) -> Schedule | None:
        row = self._db.execute(
            "SELECT app_id, name, definition, cron, timezone, overlap FROM schedules "
            "WHERE app_id = ? AND name = ?",
            (app_id, name),
        ).fetchone()
        return None if row is None else _schedule(row)

    def put(self, schedule: Schedule) -> None:
        """Insert ``schedule``, or replace the saved one of that name."""
        at = now()
        with self._db.transaction(None):
            self._db.write(
                "INSERT INTO schedules (app_id, name, definition, cron, timezone, overlap, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (app_id, name) DO UPDATE SET definition = excluded.definition, "
                "cron = excluded.cron, timezone = excluded.timezone, "
                "overlap = excluded.overlap, updated_at = excluded.updated_at",
                (
                    schedule.app, schedule.name, schedule.definition, schedule.cron,
                    schedule.timezone, schedule.overlap, at, at,
                ),
            )  # fmt: skip

    def delete(self, app_id: str, name: str) -> None:
        with self._db.transaction(None):
            self._db.write("DELETE FROM schedules WHERE app_id = ? AND name = ?", (app_id, name))

    def rename_definition(self, app_id: str, old: str, new: str) -> None:
        """Point the schedules of definition ``old`` at ``new`` (a definition renamed)."""
        self._db.write(
            "UPDATE schedules SET definition = ? WHERE app_id = ? AND definition = ?",
            (new, app_id, old),
        )

    # -- pauses -----------------------------------------------------------------------------

    def set_paused(self, stage: str, app_id: str, name: str, paused: bool) -> None:
        """Pause (or resume) schedule ``name`` of ``app_id`` on ``stage``, from now."""
        with self._db.transaction(None):
            self._db.write(
                "INSERT INTO schedule_states (stage, app_id, name, paused, changed_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (stage, app_id, name) DO UPDATE SET "
                "paused = excluded.paused, changed_at = excluded.changed_at",
                (stage, app_id, name, int(paused), now()),
            )

    def states(self) -> dict[tuple[str, str, str], tuple[bool, str]]:
        """(paused, since when) by (stage, application, name), for those ever paused."""
        rows = self._db.execute(
            "SELECT stage, app_id, name, paused, changed_at FROM schedule_states"
        )
        return {(r[0], r[1], r[2]): (bool(r[3]), r[4]) for r in rows}

    # -- the run log ------------------------------------------------------------------------

    def claim(
        self,
        stage: str,
        app_id: str,
        schedule: str,
        tick: str,
        node: str,
        status: str,
        lease_until: float,
        *,
        manual: bool = False,
        error: str | None = None,
    ) -> int | None:
        """Insert the run of ``tick`` (ISO UTC) with ``status``: its id, or None when the
        tick was claimed already (by any node)."""
        at = now()
        finished = None if status in OPEN else at
        with self._db.transaction(None):
            row = self._db.write(
                "INSERT INTO schedule_runs (stage, app_id, schedule, tick, manual, node, status, "
                "claimed_at, started_at, finished_at, error, lease_until) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (stage, app_id, schedule, tick) DO NOTHING RETURNING id",
                (
                    stage, app_id, schedule, tick, int(manual), node, status, at,
                    at if status == "running" else None, finished, error, lease_until,
                ),
            ).fetchone()  # fmt: skip
        return None if row is None else int(row[0])

    def start(self, run_id: int, lease_until: float) -> None:
        """A queued run starts."""
        with self._db.transaction(None):
            self._db.write(
                "UPDATE schedule_runs SET status = 'running', started_at = ?, lease_until = ? "
                "WHERE id = ?",
                (now(), lease_until, run_id),
            )

    def finish(self, run_id: int, status: str, duration_ms: float, error: str | None) -> None:
        """How a run ended (this overwrites a row closed as lost: the run's own word wins)."""
        with self._db.transaction(None):
            self._db.write(
                "UPDATE schedule_runs SET status = ?, finished_at = ?, duration_ms = ?, "
                "error = ? WHERE id = ?",
                (status, now(), duration_ms, error, run_id),
            )

    def renew(self, run_ids: Iterable[int], lease_until: float) -> None:
        """Extend the leases of the open runs ``run_ids`` (the claiming node is alive)."""
        ids = list(run_ids)
        if not ids:
            return
        marks = ",".join("?" * len(ids))
        with self._db.transaction(None, durable=False):
            self._db.write(
                f"UPDATE schedule_runs SET lease_until = ? WHERE id IN ({marks}) "
                "AND status IN ('queued', 'running')",
                (lease_until, *ids),
            )

    def expire(self, at: float) -> int:
        """Close as failed every open run whose lease ran out before ``at`` (its node
        stopped without finishing it); how many."""
        if not self._db.execute(
            "SELECT 1 FROM schedule_runs WHERE status IN ('queued', 'running') "
            "AND lease_until < ? LIMIT 1",
            (at,),
        ).fetchone():
            return 0
        with self._db.transaction(None):
            rows = self._db.write(
                "UPDATE schedule_runs SET status = 'failed', finished_at = ?, "
                "error = 'the node ' || node || ' stopped before the run finished "
                "(not retried)' WHERE status IN ('queued', 'running') AND lease_until < ? "
                "RETURNING id",
                (now(), at),
            ).fetchall()
        return len(rows)

    def open_before(self, stage: str, app_id: str, schedule: str, tick: str) -> builtins.list[str]:
        """The statuses of open runs of the schedule with a tick before ``tick``."""
        rows = self._db.execute(
            "SELECT status FROM schedule_runs WHERE stage = ? AND app_id = ? AND schedule = ? "
            "AND status IN ('queued', 'running') AND tick < ?",
            (stage, app_id, schedule, tick),
        )
        return [r[0] for r in rows]

    def running(self, stage: str, app_id: str, schedule: str, other_than: int) -> bool:
        """Whether a run of the schedule other than ``other_than`` is running."""
        row = self._db.execute(
            "SELECT 1 FROM schedule_runs WHERE stage = ? AND app_id = ? AND schedule = ? "
            "AND status = 'running' AND id <> ? LIMIT 1",
            (stage, app_id, schedule, other_than),
        ).fetchone()
        return row is not None

    def last_success(self, stage: str, app_id: str, schedule: str) -> str | None:
        """The tick of the schedule's last successful run on ``stage`` (None: never)."""
        row = self._db.execute(
            "SELECT MAX(tick) FROM schedule_runs WHERE stage = ? AND app_id = ? "
            "AND schedule = ? AND status = 'succeeded'",
            (stage, app_id, schedule),
        ).fetchone()
        return None if row is None else row[0]

    def run(self, run_id: int) -> dict[str, Any] | None:
        """One run by its id."""
        row = self._db.execute(
            f"SELECT {_RUN_COLUMNS} FROM schedule_runs WHERE id = ?", (run_id,)
        ).fetchone()
        return None if row is None else _run(row)

    def last_runs(self) -> dict[tuple[str, str, str], dict[str, Any]]:
        """The latest run of every schedule that ran, by (stage, application, name)."""
        rows = self._db.execute(
            f"SELECT {_RUN_COLUMNS} FROM schedule_runs WHERE id IN ("
            "SELECT MAX(id) FROM schedule_runs GROUP BY stage, app_id, schedule)"
        )
        return {(r[1], r[2], r[3]): _run(r) for r in rows}

    def runs(
        self,
        app_id: str | None = None,
        schedule: str | None = None,
        stage: str | None = None,
        limit: int | None = 100,
    ) -> builtins.list[dict[str, Any]]:
        """Runs, newest tick first (``limit`` None: all of them)."""
        where: builtins.list[str] = []
        params: builtins.list[str] = []
        for column, value in (("app_id", app_id), ("schedule", schedule), ("stage", stage)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        sql = f"SELECT {_RUN_COLUMNS} FROM schedule_runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY tick DESC, id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_run(r) for r in self._db.execute(sql, tuple(params))]

    def trim(self, stage: str, app_id: str, schedule: str, keep: int = RUNS_KEPT) -> None:
        """Delete the finished runs of a schedule beyond the newest ``keep``."""
        row = self._db.execute(
            "SELECT id FROM schedule_runs WHERE stage = ? AND app_id = ? AND schedule = ? "
            "ORDER BY id DESC LIMIT 1 OFFSET ?",
            (stage, app_id, schedule, keep),
        ).fetchone()
        if row is None:
            return
        with self._db.transaction(None, durable=False):
            self._db.write(
                "DELETE FROM schedule_runs WHERE stage = ? AND app_id = ? AND schedule = ? "
                "AND id <= ? AND status NOT IN ('queued', 'running')",
                (stage, app_id, schedule, row[0]),
            )
