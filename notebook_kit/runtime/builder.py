"""Building a worker's ``LiveState``: only what changed since the last build.

A build reads the cheap part of what is live (per stage and application, the deployment
ID; the keys; the generation, all as of one moment) and reuses everything it already has:

* an application whose deployment did not change keeps its ``_Served`` record, route
  subtree included (``routing.AppRoutes``);
* a new deployment fetches only the definition versions this worker has not compiled (a
  version number names one immutable definition) and compiles just those, so a redeploy
  with one change compiles one action;
* a stage whose applications, key, rate limiter and canaries did not change keeps its
  ``StageTable`` object, with the paths it has already matched;
* a canary's deployment is loaded the same way and served from a second ``StageTable``
  (``live.CanarySplit``); promoting it reuses what was built for it.

Compiled actions are cached per (stage, version): the same definition live on dev and on
prod runs in separate namespaces, as before. A build does store reads and compiling only,
so the runtime runs it in a thread and swaps the finished state in on its event loop.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..domain.actions import CompiledAction, compile_action
from ..domain.models import Application, Definition, Stage
from ..domain.routing import AppRoutes, RouteTable
from ..store.canaries import CanaryRow
from ..store.store import Store
from .limits import RateLimiter
from .live import CanarySplit, LiveState, StageHooks, StageTable

__all__ = ["LiveBuilder", "freeze_heap"]

log = logging.getLogger("notebook_kit.runtime")

_BUILD_SWITCH_SECONDS = 0.001


@dataclass(frozen=True, slots=True)
class _Served:
    """One application as one stage serves it: built once per deployment."""

    deployment_id: int
    application: Application
    definitions: list[Definition]
    routes: AppRoutes[CompiledAction]
    versions: frozenset[int]


class LiveBuilder:
    """Turns what the store has live into ``LiveState`` objects, incrementally.

    Not thread-safe: one build at a time (the runtime's watcher runs them in turn).
    ``compiled`` counts the actions compiled so far (tests and benchmarks read it).
    """

    def __init__(self, store: Store, env: Callable[[], dict[str, Any]]) -> None:
        self._store = store
        self._env = env
        self._served: dict[tuple[str, str], _Served] = {}
        self._canaries: dict[tuple[str, str], tuple[CanaryRow, _Served]] = {}
        self._actions: dict[tuple[str, int], CompiledAction] = {}
        self._stages: dict[str, StageTable] = {}
        self.compiled = 0

    def generation(self) -> int:
        """The store's generation now (one small read)."""
        return self._store.generation()

    def build(
        self, settings: Mapping[str, Any], limiters: Mapping[Stage, RateLimiter | None]
    ) -> LiveState:
        """The state the store has live now, with ``settings`` and the stages' limiters.

        While it builds, the interpreter hands the GIL over every millisecond instead of
        every 5: the build runs in a thread, and a request on the event loop waits for
        the GIL at each step (read, handle, write), so at 5 ms a step it stalled."""
        switch = sys.getswitchinterval()
        fast = min(switch, _BUILD_SWITCH_SECONDS)
        sys.setswitchinterval(fast)
        try:
            return self._build(settings, limiters)
        finally:
            if sys.getswitchinterval() == fast:  # unless the relay has set its own since
                sys.setswitchinterval(switch)

    def _build(
        self, settings: Mapping[str, Any], limiters: Mapping[Stage, RateLimiter | None]
    ) -> LiveState:
        generation, pointers, keys, canary_rows = self._store.live_view()
        # What this worker has built, by (stage, deployment): live or canary, either may
        # serve as the other now (a promoted canary, a canary of the live deployment).
        built = {(st, s.deployment_id): s for (st, _), s in self._served.items()}
        built.update(((st, c.deployment_id), c) for (st, _), (_, c) in self._canaries.items())
        env: list[dict[str, Any]] = []  # the names actions compile with, read once if needed

        def served_as(stage: str, app: str, deployment_id: int) -> _Served | None:
            found = built.get((stage, deployment_id))
            if found is None:
                if not env:
                    env.append(self._env())
                found = self._load(stage, app, deployment_id, env[0])
            return found

        served: dict[tuple[str, str], _Served] = {}
        for stage, app, deployment_id in pointers:
            found = served_as(str(stage), app, deployment_id)
            if found is not None:
                served[str(stage), app] = found
        canaries: dict[tuple[str, str], tuple[CanaryRow, _Served]] = {}
        for row in canary_rows:
            found = served_as(str(row[0]), row[1], row[3])
            if found is not None and (str(row[0]), row[1]) in served:
                canaries[str(row[0]), row[1]] = (row, found)
        self._served, self._canaries = served, canaries
        every = [*served.items(), *((k, c[1]) for k, c in canaries.items())]
        in_use = {(stage, v) for (stage, _), s in every for v in s.versions}
        self._actions = {k: a for k, a in self._actions.items() if k in in_use}
        stages = {
            str(s): self._stage(s, keys[s].encode(), limiters[s], _record_bytes(settings, s))
            for s in Stage
        }
        self._stages = stages
        return LiveState(
            generation,
            stages,
            settings["max_body_bytes"],
            settings["request_log_size"],
            settings["reload_interval"],
            settings["action_timeout"],
            settings["max_concurrent_actions"],
            settings["request_timeout"],
            dict(settings),
            any(row[6] is not None for row, _ in canaries.values()),
        )

    def _stage(
        self, stage: Stage, key: bytes, limiter: RateLimiter | None, record_bytes: int
    ) -> StageTable:
        name = str(stage)
        apps = {app: s for (st, app), s in sorted(self._served.items()) if st == name}
        deployed = {app: s.deployment_id for app, s in apps.items()}
        canaries = {app: c for (st, app), c in sorted(self._canaries.items()) if st == name}
        splits = {app: (row[3], row[4]) for app, (row, _) in canaries.items()}
        previous = self._stages.get(name)
        if (
            previous is not None
            and previous.key == key
            and previous.limiter is limiter
            and {app: p[1] for app, p in previous.published.items()} == deployed
            and _splits(previous) == splits
            and (previous.hooks.record_bytes if previous.hooks else 0) == record_bytes
        ):
            return previous  # nothing it serves changed: keep it, and what it has matched
        table = self._table(name, stage, key, limiter, apps)
        if not canaries and not record_bytes:
            return table
        sides = {
            app: CanarySplit.of(
                row[4],
                apps[app].deployment_id,
                row[3],
                self._table(name, stage, key, limiter, {**apps, app: canary}),
            )
            for app, (row, canary) in canaries.items()
        }
        return dataclasses.replace(table, hooks=StageHooks(sides, record_bytes))

    @staticmethod
    def _table(
        name: str,
        stage: Stage,
        key: bytes,
        limiter: RateLimiter | None,
        apps: dict[str, _Served],
    ) -> StageTable:
        return StageTable(
            name,
            RouteTable.of_apps({app: s.routes for app, s in apps.items()}),
            key,
            stage is Stage.DEV,
            {app: (s.application, s.deployment_id, s.definitions) for app, s in apps.items()},
            limiter=limiter,
        )

    def _load(
        self, stage: str, app: str, deployment_id: int, env: dict[str, Any]
    ) -> _Served | None:
        """One deployment made servable, compiling only the versions not yet compiled."""
        found = self._store.snapshots.version_ids(deployment_id)
        if found is None:
            log.error("deployment %s of %s is live but missing", deployment_id, app)
            return None
        head, ids = found
        missing = [v for v in ids if (stage, v) not in self._actions]
        bodies = self._store.snapshots.bodies(missing) if missing else {}
        entries: list[tuple[Definition, CompiledAction]] = []
        for version in ids:
            action = self._actions.get((stage, version))
            if action is None:
                try:
                    definition = Definition.from_dict(bodies[version])
                    action = compile_action(definition, env)
                except Exception:  # validated at deploy; keep serving the rest
                    log.exception(
                        "cannot load version %s of %s (deployment %s)", version, app, deployment_id
                    )
                    continue
                self.compiled += 1
                self._actions[stage, version] = action
            entries.append((action.definition, action))
        try:
            routes = AppRoutes(app, entries)
        except Exception:
            log.exception("cannot route deployment %s of %s; it is not served", deployment_id, app)
            return None
        return _Served(
            deployment_id,
            Application.from_dict(head["application"]),
            [d for d, _ in entries],
            routes,
            frozenset(ids),
        )


def _record_bytes(settings: Mapping[str, Any], stage: Stage) -> int:
    """How many body bytes ``stage`` keeps of a recorded call (0: it records none)."""
    return int(settings["record_max_bytes"]) if settings[f"record_requests_{stage}"] else 0


def _splits(table: StageTable) -> dict[str, tuple[int, int]]:
    """A stage table's canaries as app -> (canary deployment, percent)."""
    found = table.hooks.canaries if table.hooks is not None else {}
    return {app: (split.canary_id, split.percent) for app, split in found.items()}


def freeze_heap() -> None:
    """Take what is built at start (thousands of compiled actions and route nodes) out of
    the cyclic garbage collector's full passes: at 10,000 definitions one such pass held
    the interpreter for 0.1-0.4 s, stalling every request. Reloads add little, so later
    passes stay short. (Frozen objects are still freed by reference counting.)"""
    gc.collect()
    gc.freeze()
