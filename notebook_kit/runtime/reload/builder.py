"""Building a worker's ``LiveState`` from what the supervisor pushed: only what changed.

The supervisor reads the store (``feed``) and sends each worker a ``snapshot``: the
generation, the settings for actions, the digests of the stage keys and consumer keys
(``serve.callers``), what each stage serves
(per application, a deployment and its definition versions), the running canaries, and
the definition bodies this worker has not been sent before (a version number names one
immutable definition). The builder reuses everything it already has:

* an application whose deployment did not change keeps its ``_Served`` record, route
  subtree included (``routing.AppRoutes``);
* a new deployment compiles only the versions this worker has not compiled, so a
  redeploy with one change compiles one action;
* a stage whose applications, callers, rate limiter and canaries did not change keeps
  its ``StageTable`` object, with the paths it has already matched;
* a canary's deployment is built the same way and served from a second ``StageTable``
  (``live.CanarySplit``); promoting it reuses what was built for it.

Compiled actions are kept per (stage, version): the same definition live on dev and on
prod runs in separate namespaces. New settings drop them all (an action's ``db`` and
``fn`` are bound when it loads). A build compiles only, running no action code (not even
user functions' top level: ``live.LiveAction.load``), so the worker runs it in a thread
and swaps the finished state in on its event loop.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

from ...domain.actions import prepare_action
from ...domain.models import Application, Definition, Stage
from ...domain.routing import AppRoutes, RouteTable
from ...sandbox.pace import Pace, local_db, pace_for
from ..serve.callers import Caller, callers_by_stage
from ..serve.limits import RateLimiter
from .live import CanarySplit, LiveAction, LiveState, StageHooks, StageTable

__all__ = ["LiveBuilder", "freeze_heap"]

log = logging.getLogger("notebook_kit.runtime")

_BUILD_SWITCH_SECONDS = 0.001


@dataclass(frozen=True, slots=True)
class _Served:
    """One application as one stage serves it: built once per deployment."""

    deployment_id: int
    application: Application
    definitions: list[Definition]
    routes: AppRoutes[LiveAction]
    versions: frozenset[int]


class LiveBuilder:
    """Turns pushed snapshots into ``LiveState`` objects, incrementally.

    Not thread-safe: one build at a time (the worker runs them in turn). ``env(settings)``
    gives the names actions load with under those settings (made at the first build
    under them); ``compiled`` counts the actions compiled so far."""

    def __init__(self, env: Callable[[Mapping[str, Any]], dict[str, Any]]) -> None:
        self._env = env
        self._bodies: dict[int, Definition] = {}
        self._served: dict[tuple[str, str], _Served] = {}
        self._canaries: dict[tuple[str, str], tuple[list[Any], _Served]] = {}
        self._actions: dict[tuple[str, int], LiveAction] = {}
        self._stages: dict[str, StageTable] = {}
        self._settings: dict[str, Any] | None = None
        self._quarantined: set[int] = set()
        self._callers: tuple[Any, dict[str, dict[bytes, Caller]]] | None = None
        # the names actions load with under the current settings
        self._names: Callable[[], Mapping[str, Any]] = cache(partial(env, {}))
        self.compiled = 0

    def quarantine(self, versions: list[int]) -> None:
        """These versions froze a worker: never inline again (here and when built)."""
        self._quarantined.update(versions)
        for (_, version), action in self._actions.items():
            if version in self._quarantined:
                action.pace.quarantine()

    def build(
        self, snapshot: Mapping[str, Any], limiters: Mapping[Stage, RateLimiter | None]
    ) -> LiveState:
        """The state ``snapshot`` describes, with the stages' rate limiters.

        While it builds, the interpreter hands the GIL over every millisecond instead of
        every 5: the build runs in a thread, and a request on the event loop waits for
        the GIL at each step (read, handle, write), so at 5 ms a step it stalled."""
        switch = sys.getswitchinterval()
        fast = min(switch, _BUILD_SWITCH_SECONDS)
        sys.setswitchinterval(fast)
        try:
            return self._build(snapshot, limiters)
        finally:
            if sys.getswitchinterval() == fast:
                sys.setswitchinterval(switch)

    def _build(
        self, snapshot: Mapping[str, Any], limiters: Mapping[Stage, RateLimiter | None]
    ) -> LiveState:
        settings = dict(snapshot["settings"])
        if settings != self._settings:  # db, fn and http bind settings when they compile
            self._actions.clear()
            self._served.clear()
            self._canaries.clear()
            self._stages.clear()
            self._settings = settings
            self._names = cache(partial(self._env, settings))
            # Made now, off the loop, not at an action's first inline call: building the
            # built-ins (their imports, ~0.1 s) would hold that call and every other on
            # the loop. Only the definitions' own code waits for its first call.
            self._names()
        for version, body in dict(snapshot.get("bodies") or {}).items():
            self._bodies[int(version)] = Definition.from_dict(body)
        self._quarantined.update(int(v) for v in snapshot.get("quarantined") or ())
        deployments = {int(k): v for k, v in dict(snapshot["deployments"]).items()}
        local = local_db(settings)
        built = {(st, s.deployment_id): s for (st, _), s in self._served.items()}
        built.update(((st, c.deployment_id), c) for (st, _), (_, c) in self._canaries.items())

        def served_as(stage: str, app: str, deployment_id: int) -> _Served | None:
            found = built.get((stage, deployment_id))
            if found is None:
                found = self._load(stage, app, deployment_id, deployments, local)
                if found is not None:
                    built[stage, deployment_id] = found
            return found

        served: dict[tuple[str, str], _Served] = {}
        for stage, app, deployment_id in snapshot["live"]:
            found = served_as(str(stage), str(app), int(deployment_id))
            if found is not None:
                served[str(stage), str(app)] = found
        canaries: dict[tuple[str, str], tuple[list[Any], _Served]] = {}
        for row in snapshot.get("canaries") or ():
            found = served_as(str(row[0]), str(row[1]), int(row[3]))
            if found is not None and (str(row[0]), str(row[1])) in served:
                canaries[str(row[0]), str(row[1])] = (list(row), found)
        self._served, self._canaries = served, canaries
        every = [*served.items(), *((k, c[1]) for k, c in canaries.items())]
        in_use = {(stage, v) for (stage, _), s in every for v in s.versions}
        self._actions = {k: a for k, a in self._actions.items() if k in in_use}
        # What the supervisor sent once and will not send again while it stays referenced
        # (it sends the bodies a snapshot names that the previous one did not).
        referenced = {int(v) for d in deployments.values() for v in d["versions"]}
        self._bodies = {v: d for v, d in self._bodies.items() if v in referenced}
        callers = self._callers_of(snapshot["keys"], snapshot.get("callers") or [])
        stages = {
            str(s): self._stage(s, callers[str(s)], limiters[s], _record_bytes(settings, s))
            for s in Stage
        }
        self._stages = stages
        return LiveState(
            int(snapshot["generation"]),
            stages,
            settings["max_body_bytes"],
            settings["request_log_size"],
            settings["reload_interval"],
            settings["action_timeout"],
            settings["max_concurrent_actions"],
            settings["request_timeout"],
            settings,
            any(row[6] is not None for row, _ in canaries.values()),
            bool(settings.get("server_timing")),
            bool(settings.get("tracing")),
        )

    def _callers_of(self, keys: Any, rows: Any) -> dict[str, dict[bytes, Caller]]:
        """Each stage's callers: a stage whose callers did not change keeps the same
        object (so it keeps its table: a key made for prod rebuilds prod only)."""
        raw = (keys, rows)
        if self._callers is not None and self._callers[0] == raw:
            return self._callers[1]
        fresh = callers_by_stage(keys, rows)
        if self._callers is not None:
            previous = self._callers[1]
            fresh = {s: previous[s] if previous.get(s) == c else c for s, c in fresh.items()}
        self._callers = (raw, fresh)
        return fresh

    def _stage(
        self,
        stage: Stage,
        callers: Mapping[bytes, Caller],
        limiter: RateLimiter | None,
        record_bytes: int,
    ) -> StageTable:
        name = str(stage)
        apps = {app: s for (st, app), s in sorted(self._served.items()) if st == name}
        deployed = {app: s.deployment_id for app, s in apps.items()}
        canaries = {app: c for (st, app), c in sorted(self._canaries.items()) if st == name}
        splits = {app: (row[3], row[4]) for app, (row, _) in canaries.items()}
        previous = self._stages.get(name)
        if (
            previous is not None
            and previous.callers is callers
            and previous.limiter is limiter
            and {app: p[1] for app, p in previous.published.items()} == deployed
            and _splits(previous) == splits
            and (previous.hooks.record_bytes if previous.hooks else 0) == record_bytes
        ):
            return previous  # nothing it serves changed: keep it, and what it has matched
        table = self._table(name, stage, callers, limiter, apps)
        if not canaries and not record_bytes:
            return table
        sides = {
            app: CanarySplit.of(
                int(row[4]),
                apps[app].deployment_id,
                int(row[3]),
                self._table(name, stage, callers, limiter, {**apps, app: canary}),
            )
            for app, (row, canary) in canaries.items()
        }
        return dataclasses.replace(table, hooks=StageHooks(sides, record_bytes))

    @staticmethod
    def _table(
        name: str,
        stage: Stage,
        callers: Mapping[bytes, Caller],
        limiter: RateLimiter | None,
        apps: dict[str, _Served],
    ) -> StageTable:
        return StageTable(
            name,
            RouteTable.of_apps({app: s.routes for app, s in apps.items()}),
            callers,
            stage is Stage.DEV,
            {app: (s.application, s.deployment_id, s.definitions) for app, s in apps.items()},
            limiter=limiter,
        )

    def _load(
        self,
        stage: str,
        app: str,
        deployment_id: int,
        deployments: Mapping[int, Any],
        local: bool,
    ) -> _Served | None:
        """One deployment made servable, compiling only the versions not yet compiled."""
        found = deployments.get(deployment_id)
        if found is None:
            log.error("deployment %s of %s is live but was not sent", deployment_id, app)
            return None
        ids = [int(v) for v in found["versions"]]
        entries: list[tuple[Definition, LiveAction]] = []
        # A deployment that pins secrets: its actions run in action processes only, each
        # known by a key naming the deployment, whose pinned values come with the code.
        pinned = bool(found.get("secrets"))
        for version in ids:
            action = None if pinned else self._actions.get((stage, version))
            if action is None:
                definition = self._bodies.get(version)
                if definition is None:
                    log.error(
                        "version %s of %s was not sent (deployment %s)", version, app, deployment_id
                    )
                    continue
                try:
                    code = prepare_action(definition)
                except Exception:  # validated at deploy; keep serving the rest
                    log.exception(
                        "cannot compile version %s of %s (deployment %s)",
                        *(version, app, deployment_id),
                    )
                    continue
                # never inline when it pins secrets: a worker holds no value
                pace = (
                    Pace(eligible=False) if pinned else pace_for(code.names, code.is_async, local)
                )
                if version in self._quarantined:
                    pace.quarantine()
                action = LiveAction(code, stage, version, pace, self._names)
                self.compiled += 1
                if pinned:
                    action.key = f"{stage}:{deployment_id}:{version}"
                else:
                    self._actions[stage, version] = action
            entries.append((action.definition, action))
        try:
            routes = AppRoutes(app, entries)
        except Exception:
            log.exception("cannot route deployment %s of %s; it is not served", deployment_id, app)
            return None
        return _Served(
            deployment_id,
            Application.from_dict(found["application"]),
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
