"""The supervisor's side of following deploys: read what the store has live, and make
each worker's snapshot.

``Feed.read`` (run in a thread: store reads) takes one consistent view of what is live
(the generation, each stage's deployments, the running canaries, the keys) with the
settings in force, and the deployments' definition versions, reading only deployments
and bodies it has not read before (both immutable). ``Feed.snapshot`` makes the message
one worker is sent: the settings for actions (secrets left out: ``for_actions``), each
stage's key and every consumer key as a SHA-256 digest (the worker never holds a key;
consumers' keys are stored only as digests), what is live, and the
definition bodies the worker was not sent before. ``definition`` answers an action
process's request for the code of a version, for the application it runs only: a
version of what is live, or of what the workers served until the last commit (a call
read just before a deploy went live asks for the code it was routed to; see
``committed``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ...domain.settings import for_actions
from ...workspace.workspace import Workspace

__all__ = ["Feed", "LiveRead"]


@dataclass(frozen=True)
class LiveRead:
    """One read of what is live (see the module docstring)."""

    generation: int
    settings: dict[str, Any]
    digests: dict[str, str]
    live: list[list[Any]]
    canaries: list[list[Any]]
    deployments: dict[int, dict[str, Any]]
    canary_check: bool = False
    referenced: frozenset[int] = field(default_factory=frozenset)
    callers: list[list[Any]] = field(default_factory=list)


class Feed:
    """Reads ``workspace``'s store for the supervisor (see the module docstring)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.store = workspace.store
        self._heads: dict[int, dict[str, Any]] = {}
        self._bodies: dict[int, dict[str, Any]] = {}
        # generation -> its bodies, for each generation read since the one committed
        # before the last commit (read() runs in a thread, the rest on the loop)
        self._kept: dict[int, dict[int, dict[str, Any]]] = {}
        self._keeping = threading.Lock()
        self.quarantined: set[int] = set()

    def generation(self) -> int:
        return self.store.generation()

    def read(self) -> LiveRead:
        """What is live now, with the settings in force (store reads: run it in a thread)."""
        generation, pointers, keys, canary_rows = self.store.live_view()
        settings = self.workspace.settings()
        callers = self.store.consumers.callers()
        wanted = {p[2] for p in pointers} | {row[3] for row in canary_rows}
        heads = {d: h for d, h in self._heads.items() if d in wanted}
        for deployment_id in wanted - heads.keys():
            found = self.store.snapshots.version_ids(deployment_id)
            if found is not None:
                head, ids = found
                heads[deployment_id] = {"application": head["application"], "versions": ids}
                if head.get("secrets"):  # the ids of the secret versions it pins, no value
                    heads[deployment_id]["secrets"] = head["secrets"]
        referenced = frozenset(v for head in heads.values() for v in head["versions"])
        bodies = {v: b for v, b in self._bodies.items() if v in referenced}
        missing = [v for v in referenced if v not in bodies]
        if missing:
            bodies.update(self.store.snapshots.bodies(missing))
        self._heads, self._bodies = heads, bodies
        with self._keeping:
            self._kept[generation] = bodies
        return LiveRead(
            generation,
            settings,
            {str(s): hashlib.sha256(k.encode()).hexdigest() for s, k in keys.items()},
            [[str(stage), app, deployment] for stage, app, deployment in pointers],
            [[str(row[0]), *row[1:]] for row in canary_rows],
            heads,
            any(row[6] is not None for row in canary_rows),
            referenced,
            callers,
        )

    def snapshot(self, read: LiveRead, sent: Iterable[int]) -> dict[str, Any]:
        """The message for a worker that was last sent the bodies of ``sent``."""
        already = set(sent)
        return {
            "op": "snapshot",
            "generation": read.generation,
            "settings": for_actions(read.settings),
            "keys": read.digests,
            "callers": read.callers,
            "live": read.live,
            "canaries": read.canaries,
            "deployments": {str(d): head for d, head in read.deployments.items()},
            "bodies": {
                str(v): self._bodies[v]
                for v in read.referenced
                if v not in already and v in self._bodies
            },
            "quarantined": sorted(self.quarantined),
        }

    def committed(self, served: int) -> None:
        """The workers are told to leave generation ``served`` for a newer one: the
        bodies only older generations referenced are no longer asked for."""
        with self._keeping:
            for generation in [g for g in self._kept if g < served]:
                del self._kept[generation]

    def definition(self, version: int, app: str) -> dict[str, Any] | None:
        """The body of ``version`` if it is live (or a canary), or was until the last
        commit, and of ``app``."""
        body = self._bodies.get(version)
        if body is None:
            with self._keeping:
                found = (bodies.get(version) for bodies in self._kept.values())
                body = next((b for b in found if b is not None), None)
        return body if body is not None and body.get("app") == app else None
