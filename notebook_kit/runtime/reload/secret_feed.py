"""The supervisor's side of secrets: the values a deployment pins, for its application's
action processes only.

A deployment that pins secrets is served under code keys that name it
(``stage:deployment:version``, see ``builder``); an action process asks the supervisor
for that code, and ``SecretFeed.add`` puts the deployment's pinned values beside it,
once it has checked that the deployment is of the application the process runs and of
the stage the key names. Values are decrypted here, on the trusted side, at the first
such request (store reads: call it in a thread) and kept per deployment (deployments
are immutable); no worker ever gets them: the workers' snapshot carries the pinned
versions' ids only. A key that cannot decrypt them (missing, wrong) answers the request
with that error, logged once per deployment.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ...errors import NotebookKitError
from ...workspace.workspace import Workspace

__all__ = ["SecretFeed", "is_pinned_key"]

log = logging.getLogger("notebook_kit.runtime")

_KEPT = 256  # deployments whose values are kept


def is_pinned_key(key: str) -> bool:
    """Whether a code key names a deployment (``stage:deployment:version``)."""
    return key.count(":") == 2


class SecretFeed:
    """Pinned values by deployment, for ``workspace``'s supervisor."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._values: dict[int, tuple[str, str, dict[str, str]]] = {}
        self._failed: set[int] = set()
        self._lock = threading.Lock()

    def add(self, reply: dict[str, Any], key: str, app: str) -> dict[str, Any]:
        """``reply`` (the code for ``key``) with the secrets the key's deployment pins,
        or an error when that deployment is not ``app``'s on the key's stage."""
        stage, deployment, _ = key.split(":")
        if not deployment.isdigit():
            return {"error": f"no code {key!r} for this process"}
        found = self._pinned(int(deployment))
        if isinstance(found, str):
            return {"error": found}
        if found is None or found[0] != app or found[1] != stage:
            return {"error": f"no code {key!r} for this process"}
        return {**reply, "secrets": found[2]}

    def _pinned(self, deployment: int) -> tuple[str, str, dict[str, str]] | str | None:
        with self._lock:
            found = self._values.get(deployment)
        if found is not None:
            return found
        try:
            read = self.workspace.secret_keeper.pinned_values(deployment)
        except NotebookKitError as exc:
            if deployment not in self._failed:
                self._failed.add(deployment)
                log.error("the secrets of deployment %s cannot be read: %s", deployment, exc)
            return f"the secrets of this deployment cannot be read: {exc}"
        if read is None:
            return None
        with self._lock:
            if len(self._values) >= _KEPT:
                self._values.pop(next(iter(self._values)))
            self._values[deployment] = read
            self._failed.discard(deployment)
        return read
