"""Schedules: the core's side (docs/schedules.md).

``ScheduleKeeper`` saves an application's schedules (they run once deployed: a deploy puts
them in its snapshot), pauses and resumes them per stage, lists them with their next and
last runs, and runs one tick: ``run_tick`` claims the tick in the store (the run log's
UNIQUE row is the lease: of all the nodes that try, one runs it), applies the overlap rule,
runs the definition in a sandboxed action process through the runner of test runs (its
time limit, confinement, built-ins and the stage's secrets, as a call has them), and logs
how it ended. The server's scheduler (``runtime.process.scheduler``) calls it for each due
tick; ``run_now`` calls it for a run by hand.

What the action is told: ``req.headers`` carries ``X-Schedule`` (the schedule's name),
``X-Schedule-Tick`` and ``X-Schedule-Last-Success`` (ISO UTC; empty before any success),
and ``req.body`` the same as JSON: ``{"schedule": {"name", "tick", "lastSuccess"}}``.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..domain.clock import iso_time, now
from ..domain.models import Definition, Stage
from ..domain.schedules import Schedule, check_targets
from ..errors import ConflictError, NotFoundError
from ..store.schedules import RUNS_KEPT
from ..store.store import Store

if TYPE_CHECKING:
    from ..sandbox.runner import ActionRunner

__all__ = [
    "LATE",
    "LEASE_GRACE",
    "Claim",
    "DeployedSchedule",
    "ScheduleKeeper",
    "node_name",
    "parse_tick",
]

#: Seconds past a run's time limit its lease lasts: a node that has not finished a run by
#: then was stopped, and the run is closed as failed.
LEASE_GRACE = 10.0
#: Seconds after its time a tick is still run; one no node claimed by then (every node was
#: down or stalled) is logged as missed when a node comes to it, not run.
LATE = 60.0
_QUEUE_POLL = 0.2  # seconds between two looks at the run a queued tick waits for


def node_name() -> str:
    """This process as the run log names it: host and process ID."""
    return f"{socket.gethostname()}:{os.getpid()}"


def parse_tick(text: str) -> datetime:
    """An ISO UTC tick as the run log writes it, as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class DeployedSchedule:
    """A schedule served on ``stage`` by a live deployment made at ``since`` (ISO UTC),
    with the definition it runs as that deployment has it."""

    stage: Stage
    schedule: Schedule
    definition: Definition
    since: str


@dataclass(frozen=True)
class Claim:
    """A tick ``run_id`` of ``item`` this node claimed, and how (``running``, ``queued``
    or ``skipped``)."""

    item: DeployedSchedule
    tick: str
    run_id: int
    status: str
    lease: float  # seconds a renewal of its lease lasts


class ScheduleKeeper:
    """Schedules of the applications of ``store`` (see the module docstring). ``runner``
    gives the workspace's action runner; ``setting`` a setting in force."""

    def __init__(
        self, store: Store, runner: Callable[[], ActionRunner], setting: Callable[[str], Any]
    ) -> None:
        self.store = store
        self._runner = runner
        self._setting = setting
        self._runs = 0

    # -- saved schedules ------------------------------------------------------------------

    def add(
        self,
        app: str,
        name: str,
        definition: str,
        cron: str,
        timezone: str = "UTC",
        overlap: str = "skip",
        replace: bool = False,
    ) -> Schedule:
        """Save a schedule of ``app`` (it runs once ``app`` is deployed); an existing
        name only with ``replace``."""
        schedule = Schedule(app, name, definition, cron, timezone, overlap)
        with self.store.transaction():
            if self.store.get_application(app) is None:
                raise NotFoundError(f"application {app!r} does not exist")
            check_targets([schedule], self.store.list_definitions(app))
            if not replace and self.store.schedules.get(app, name) is not None:
                raise ConflictError(
                    f"{app} already has a schedule {name!r} (replace=True, CLI --replace, "
                    "to change it)"
                )
            self.store.schedules.put(schedule)
        return schedule

    def get(self, app: str, name: str) -> Schedule:
        found = self.store.schedules.get(app, name)
        if found is None:
            raise NotFoundError(f"{app} has no schedule {name!r}")
        return found

    def saved(self, app: str | None = None) -> list[Schedule]:
        return self.store.schedules.list(app)

    def delete(self, app: str, name: str) -> None:
        """Delete a saved schedule (a deployed one runs until the next deploy)."""
        with self.store.transaction():
            self.get(app, name)
            self.store.schedules.delete(app, name)

    def pause(self, app: str, name: str, stage: Stage | str, paused: bool = True) -> None:
        """Pause (``paused=False``: resume) a deployed schedule on ``stage`` at once, on
        every node; ticks while paused are not run, nor run later."""
        self.deployed_one(app, name, Stage.parse(stage))
        self.store.schedules.set_paused(str(Stage.parse(stage)), app, name, paused)

    # -- what runs --------------------------------------------------------------------------

    def deployed(self) -> list[DeployedSchedule]:
        """Every schedule the live deployments serve."""
        found: list[DeployedSchedule] = []
        for stage, _, _, snapshot in self.store.live_snapshots():
            items = snapshot.get("schedules") or []
            if not items:
                continue
            app = snapshot["application"]["id"]
            definitions = {d["id"]: d for d in snapshot["definitions"]}
            for item in items:
                schedule = Schedule.from_dict({**item, "app": app})
                definition = Definition.from_dict({**definitions[schedule.definition]})
                since = str(snapshot.get("exported_at") or now())
                found.append(DeployedSchedule(stage, schedule, definition, since))
        return found

    def deployed_one(self, app: str, name: str, stage: Stage) -> DeployedSchedule:
        for item in self.deployed():
            if (item.stage, item.schedule.app, item.schedule.name) == (stage, app, name):
                return item
        raise NotFoundError(f"no schedule {name!r} of {app} is deployed to {stage}")

    def overview(self, app: str | None = None) -> list[dict[str, Any]]:
        """Each schedule, saved or deployed, per stage it is deployed to (stage None:
        saved only): its fields, whether it is paused, its next tick and its last run."""
        states = self.store.schedules.states()
        last = self.store.schedules.last_runs()
        at = datetime.now(UTC)
        rows: list[dict[str, Any]] = []
        deployed = [d for d in self.deployed() if app is None or d.schedule.app == app]
        for item in deployed:
            s, stage = item.schedule, str(item.stage)
            paused = states.get((stage, s.app, s.name), (False, ""))[0]
            tick = None if paused else s.next_tick(at)
            run = last.get((stage, s.app, s.name)) or {}
            rows.append(
                {
                    **s.to_dict(), "stage": stage, "paused": paused,
                    "next_run": None if tick is None else iso_time(tick.timestamp()),
                    "last_run": run.get("tick"), "last_status": run.get("status"),
                    "last_error": run.get("error"),
                }
            )  # fmt: skip
        served = {(d.schedule.app, d.schedule.name) for d in deployed}
        for s in self.saved(app):
            if (s.app, s.name) not in served:
                rows.append(
                    {
                        **s.to_dict(), "stage": None, "paused": False, "next_run": None,
                        "last_run": None, "last_status": None, "last_error": None,
                    }
                )  # fmt: skip
        return sorted(rows, key=lambda r: (r["app"], r["name"], r["stage"] or ""))

    def runs(
        self,
        app: str | None = None,
        name: str | None = None,
        stage: Stage | str | None = None,
        limit: int | None = 100,
    ) -> list[dict[str, Any]]:
        """The run log, newest tick first."""
        stage_name = None if stage is None else str(Stage.parse(stage))
        return self.store.schedules.runs(app, name, stage_name, limit)

    # -- running a tick ---------------------------------------------------------------------

    def run_now(self, app: str, name: str, stage: Stage | str) -> dict[str, Any]:
        """Run a deployed schedule once, now, in this process (logged as by hand)."""
        item = self.deployed_one(app, name, Stage.parse(stage))
        return self.run_tick(item, now(), node_name(), manual=True) or {}

    def limit(self, definition: Definition) -> float:
        """A run's time limit: the definition's own, else the ``action_timeout`` setting."""
        return definition.timeout or float(self._setting("action_timeout"))

    def run_tick(
        self, item: DeployedSchedule, tick: str, node: str, *, manual: bool = False
    ) -> dict[str, Any] | None:
        """Claim ``tick`` (ISO UTC) of ``item`` for ``node`` and run it: the run's row
        once it ends, or None when another node had claimed the tick."""
        claimed = self.claim(item, tick, node, manual=manual)
        if claimed is None:
            return None
        self.carry_out(claimed)
        return self._row(claimed.run_id)

    def claim(
        self,
        item: DeployedSchedule,
        tick: str,
        node: str,
        *,
        manual: bool = False,
        lease: float | None = None,
    ) -> Claim | None:
        """Claim ``tick`` for ``node``, applying the overlap rule: None if another node
        had claimed it; a claim whose ``status`` is ``running`` or ``queued`` is for
        ``carry_out``, one ``skipped`` is logged and done. ``lease``: seconds the claim
        holds unless renewed (default: the run's time limit and ``LEASE_GRACE``, for a
        claimer that does not renew it)."""
        s, stage = item.schedule, str(item.stage)
        runs = self.store.schedules
        earlier = runs.open_before(stage, s.app, s.name, tick)
        if earlier and s.overlap == "skip":
            busy = "the run of an earlier tick was still running (overlap: skip)"
            run_id = runs.claim(
                stage, s.app, s.name, tick, node, "skipped", 0.0, manual=manual, error=busy
            )
            return None if run_id is None else Claim(item, tick, run_id, "skipped", 0.0)
        status = "queued" if earlier else "running"
        if lease is None:
            lease = self.limit(item.definition) + LEASE_GRACE
        until = time.time() + lease
        run_id = runs.claim(stage, s.app, s.name, tick, node, status, until, manual=manual)
        return None if run_id is None else Claim(item, tick, run_id, status, lease)

    def miss(self, item: DeployedSchedule, tick: str, node: str, late: float) -> None:
        """Log ``tick`` as missed (claimed ``late`` seconds after it, past ``LATE``)."""
        s = item.schedule
        why = f"no node claimed it within {LATE:.0f} s ({late:.0f} s late): not run"
        self.store.schedules.claim(str(item.stage), s.app, s.name, tick, node, "missed", 0.0,
                                   error=why)  # fmt: skip

    def carry_out(self, claimed: Claim) -> None:
        """Run a claimed tick (a queued one once every earlier run ended) and log how it
        ended."""
        if claimed.status == "skipped":
            return
        item, tick, run_id = claimed.item, claimed.tick, claimed.run_id
        s, stage = item.schedule, str(item.stage)
        runs = self.store.schedules
        lease = claimed.lease
        if claimed.status == "queued":
            # one at a time, in tick order: wait for every earlier tick, and any run
            while runs.open_before(stage, s.app, s.name, tick) or runs.running(
                stage, s.app, s.name, other_than=run_id
            ):
                runs.renew([run_id], time.time() + lease)
                time.sleep(_QUEUE_POLL)
            runs.start(run_id, time.time() + lease)
        self._execute(item, tick, run_id)
        self._runs += 1
        if self._runs % 100 == 0:
            runs.trim(stage, s.app, s.name, RUNS_KEPT)

    def _execute(self, item: DeployedSchedule, tick: str, run_id: int) -> None:
        from multidict import CIMultiDict  # not at import: the CLI's start

        from ..domain.messages import ActionRequest

        s, stage, definition = item.schedule, str(item.stage), item.definition
        runs = self.store.schedules
        last = runs.last_success(stage, s.app, s.name)
        told = {"name": s.name, "tick": tick, "lastSuccess": last}
        headers = {"X-Schedule": s.name, "X-Schedule-Tick": tick,
                   "X-Schedule-Last-Success": last or "",
                   "Content-Type": "application/json"}  # fmt: skip
        req = ActionRequest(
            httpMethod=definition.method,
            path=f"/{stage}/{s.app}/{definition.resource}",
            stage=stage,
            headers=CIMultiDict(headers),
            pathParameters={},
            body=json.dumps({"schedule": told}),
        )
        limit = self.limit(definition)
        started = time.perf_counter()
        try:
            outcome = self._runner().run(definition, req, limit, capture=False,
                                         secrets_stage=stage)  # fmt: skip
        except Exception as exc:  # the run is logged, whatever stopped it
            duration = (time.perf_counter() - started) * 1000
            runs.finish(run_id, "failed", duration, f"{type(exc).__name__}: {exc}")
            raise
        duration = (time.perf_counter() - started) * 1000
        if outcome.ok and outcome.status < 400:
            runs.finish(run_id, "succeeded", duration, None)
        else:
            error = outcome.error or f"the action answered {outcome.status}"
            runs.finish(run_id, "failed", duration, error)

    def _row(self, run_id: int) -> dict[str, Any]:
        return self.store.schedules.run(run_id) or {}
