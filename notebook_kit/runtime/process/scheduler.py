"""The scheduler: the supervisor's task that runs the deployed schedules' ticks.

Every node runs one, and they need not know of each other: each looks at what is due
every ``STEP`` seconds and claims each due tick in the store (``ScheduleKeeper.claim``:
the run log's UNIQUE row is the lease), so of all the nodes one runs a tick, whichever
claims it first; the others' inserts find the row and do nothing. A claimed tick runs on a
thread of this node's pool (``carry_out``: an action process through the workspace's
runner, the stage's secrets, the definition's time limit).

What a node looks at: the ticks after the last one it looked at, at most ``LATE``
seconds back (when it starts: the last ``LATE`` seconds, so ticks a node stopped or
killed meanwhile left unclaimed are run by the others or by it when it is back), never
before the deployment that serves the schedule, nor while it is paused, nor before it
was resumed. A tick older than ``LATE`` when a node comes to it (every node was down or
stalled) is logged as missed, not run. While a schedule is deployed, each step also
closes as failed the open runs whose lease ran out (``ScheduleTables.expire``: their
node stopped mid-run), and renews the leases of this node's runs in hand
(``HEARTBEAT``). With no schedule deployed and no run in hand, the scheduler sleeps
until the supervisor sees the store change (``wake``): an idle node does not wake for it.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from ...domain.clock import iso_time
from ...domain.schedules import Cron, parse_cron
from ...errors import StoreError
from ...workspace.schedules import LATE, Claim, DeployedSchedule, node_name, parse_tick
from ...workspace.workspace import Workspace

__all__ = ["HEARTBEAT", "STEP", "Scheduler"]

log = logging.getLogger("notebook_kit.runtime")

STEP = 0.25  # seconds between two looks at what is due
#: Seconds a claim of this node holds unless renewed; every step renews those in hand, so
#: the run of a node killed mid-run is closed as failed this long after, at most.
HEARTBEAT = 6.0
_RUNS_AT_ONCE = 16  # runs of this node's ticks at once (the rest wait their turn)

_Key = tuple[str, str, str]  # (stage, application, schedule)


class Scheduler:
    """Runs the ticks of the deployed schedules of ``workspace`` that this node claims
    (see the module docstring); ``node`` names it in the run log."""

    def __init__(self, workspace: Workspace, node: str | None = None) -> None:
        self.keeper = workspace.schedule_keeper
        self.store = workspace.store
        self.node = node or node_name()
        self._cursors: dict[_Key, datetime] = {}
        self._crons: dict[str, Cron] = {}
        self._generation: int | None = None
        self._deployed: list[DeployedSchedule] = []
        self._pool = ThreadPoolExecutor(_RUNS_AT_ONCE, thread_name_prefix="schedule")
        self._failing = False
        self._in_hand: set[int] = set()  # claimed runs not finished yet
        self._changed = asyncio.Event()

    def wake(self) -> None:
        """What is live changed (the supervisor saw a new generation): look again."""
        self._changed.set()

    async def run(self) -> None:
        """Look at what is due every ``STEP`` seconds until cancelled; while nothing is
        deployed nor in hand, only once the store changes."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                self._changed.clear()  # a change seen from here on wakes the wait below
                try:
                    await loop.run_in_executor(None, self.step)
                    self._failing = False
                except StoreError as exc:
                    if not self._failing:  # once, not every step while the store is away
                        log.warning("schedules wait for the store: %s", exc)
                    self._failing = True
                except Exception:
                    log.exception("looking at the schedules failed; trying again")
                if self._deployed or self._in_hand or self._failing:
                    await asyncio.sleep(STEP)
                else:
                    await self._changed.wait()
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def step(self, at: datetime | None = None) -> list[Any]:
        """Claim every tick due now (``at``) and hand the runs to the pool: their
        futures."""
        generation = self.store.generation()
        if generation != self._generation:
            self._deployed = self.keeper.deployed()
            self._generation = generation
        at = at or datetime.now(UTC)
        if self._in_hand:
            self.store.schedules.renew(list(self._in_hand), at.timestamp() + HEARTBEAT)
        if not self._deployed and not self._in_hand:
            self._cursors.clear()  # nothing to run: one cheap read a step, no more
            return []
        self.store.schedules.expire(at.timestamp())
        states = self.store.schedules.states()
        futures: list[Any] = []
        seen: set[_Key] = set()
        for item in self._deployed:
            s = item.schedule
            key = (str(item.stage), s.app, s.name)
            seen.add(key)
            since = max(parse_tick(item.since), at - timedelta(seconds=LATE))
            cursor = self._cursors.get(key, since)
            paused, changed = states.get(key, (False, ""))
            self._cursors[key] = at
            if paused:
                continue
            if changed:
                cursor = max(cursor, parse_tick(changed))
            for tick in self._cron(s.cron).ticks(cursor, at, s.zone):
                futures.extend(self._claim(item, tick, at))
        for gone in set(self._cursors) - seen:
            del self._cursors[gone]
        return futures

    def _cron(self, text: str) -> Cron:
        cron = self._crons.get(text)
        if cron is None:
            cron = self._crons[text] = parse_cron(text)
        return cron

    def _claim(self, item: DeployedSchedule, tick: datetime, at: datetime) -> list[Any]:
        text = iso_time(tick.timestamp())
        late = (at - tick).total_seconds()
        if late > LATE:
            self.keeper.miss(item, text, self.node, late)
            return []
        claimed = self.keeper.claim(item, text, self.node, lease=HEARTBEAT)
        if claimed is None or claimed.status == "skipped":
            return []
        self._in_hand.add(claimed.run_id)
        return [self._pool.submit(self._carry_out, claimed)]

    def _carry_out(self, claimed: Claim) -> None:
        try:
            self.keeper.carry_out(claimed)
        except Exception:
            log.exception("the run of schedule %s failed", claimed.item.schedule.name)
        finally:
            self._in_hand.discard(claimed.run_id)

    def close(self) -> None:
        """Wait for the runs in hand (a test's end)."""
        self._pool.shutdown(wait=True)
