"""Canary releases: start one on prod, read how each side does, promote, roll back.

The rules of the split itself (the caller's bucket, the header, the thresholds) are in
``domain.canary``; the store keeps a canary on the stage's live row (``store.canaries``),
so it reaches every node like any deploy. This module is the core's side:

* ``start``: a deploy whose new deployment serves ``percent`` % of prod's calls;
* ``status``: the running canary with each side's calls, 5xx share and p50/p99, from the
  request-log entries numbered after the canary started;
* ``promote``: the canary becomes live for every call (``rollback`` in ``publishing``
  drops it instead);
* ``check``: the automatic rollback, run by the servers after they write the log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..domain.canary import (
    Canary,
    should_roll_back,
    side_stats,
    validate_percent,
    validate_threshold,
)
from ..domain.clock import now
from ..domain.models import Application, Deployment, Stage
from ..errors import NotFoundError, ValidationError
from ..store.canaries import CanaryRow
from ..store.store import Store
from .publishing import Publisher, snapshot_definitions

__all__ = ["CanaryReleases"]

log = logging.getLogger("notebook_kit.canary")

#: The one stage canaries run on.
CANARY_STAGE = Stage.PROD


class CanaryReleases:
    """Canaries of one store; ``setting`` answers a setting in force."""

    def __init__(self, store: Store, publisher: Publisher, setting: Callable[[str], Any]) -> None:
        self.store = store
        self._publisher = publisher
        self._setting = setting

    def deploy(
        self,
        record: Application,
        stage: Stage,
        force: bool = False,
        percent: Any = None,
        rollback_above: Any = None,
        description: str = "",
    ) -> Deployment:
        """A deploy: a canary when ``percent`` or ``rollback_above`` is given (``start``),
        else a plain one (which ends any canary of ``record`` on ``stage``)."""
        if percent is None and rollback_above is None:
            return self._publisher.deploy(record, stage, force, description=description)
        return self.start(record, stage, percent, rollback_above, force, description)

    def start(
        self,
        record: Application,
        stage: Stage,
        percent: Any,
        rollback_above: Any = None,
        force: bool = False,
        description: str = "",
    ) -> Deployment:
        """Deploy ``record``'s saved definitions as a canary on ``stage`` (prod only)."""
        if stage is not CANARY_STAGE:
            raise ValidationError(f"canary releases run on prod only, not {stage}", field="stage")
        if percent is None:
            raise ValidationError(
                "an automatic-rollback threshold applies to a canary: give its percent too",
                field="canary",
            )
        percent = validate_percent(percent)
        threshold = validate_threshold(rollback_above)
        return self._publisher.deploy(record, stage, force, percent, threshold, description)

    def _canary(self, row: CanaryRow) -> Canary:
        stage, app, live_id, canary_id, percent, started, threshold, _ = row
        return Canary(
            app,
            str(stage),
            live_id,
            canary_id,
            percent,
            started,
            threshold,
            self._setting("canary_min_calls"),
        )

    def status(self, app: str, stats: bool = True) -> Canary | None:
        """The canary of ``app`` on prod (None: none runs), with each side's stats
        since it started unless ``stats`` is False."""
        row = self.store.canaries.get(CANARY_STAGE, app)
        if row is None:
            return None
        return self._with_stats(row) if stats else self._canary(row)

    def running(self) -> list[Canary]:
        """Every canary running, with each side's stats."""
        return [self._with_stats(row) for row in self.store.canaries.running()]

    def _with_stats(self, row: CanaryRow) -> Canary:
        """The canary of ``row`` with its sides' stats from the log since it started."""
        outcomes = self.store.outcomes_since(row[7])
        canary = self._canary(row)
        return replace(
            canary,
            live=side_stats(canary.live_id, outcomes),
            canary=side_stats(canary.canary_id, outcomes),
        )

    def ended(self, app: str) -> str | None:
        """Why the last canary of ``app`` was rolled back automatically, if it was (kept
        until the next deploy, rollback or canary of ``app`` on prod)."""
        return self.store.canaries.note(CANARY_STAGE, app)

    def promote(self, app: str) -> Deployment:
        """Serve the canary of ``app`` to every prod call; the canary ends."""
        with self.store.transaction():
            row = self.store.canaries.get(CANARY_STAGE, app)
            if row is None:
                raise NotFoundError(f"{app} has no canary on {CANARY_STAGE} to promote")
            canary_id = row[3]
            found = self.store.get_deployment(canary_id)
            assert found is not None  # a canary's deployment is never pruned
            self._publisher.check_quota(CANARY_STAGE, app, snapshot_definitions(found[1]))
            self.store.set_live(CANARY_STAGE, app, canary_id)
            self.store.bump_generation()
        return self._publisher.deployment(canary_id)

    def check(self) -> list[str]:
        """Roll back every canary whose 5xx share is past its threshold (with at least
        ``canary_min_calls`` calls answered); what was rolled back and why, one line each.
        Every server runs it after writing the log; the first to see a bad canary ends
        it, the others then find it gone (or replaced) and leave it."""
        done = []
        for row in self.store.canaries.running():
            if row[6] is None:
                continue
            outcomes = self.store.outcomes_since(row[7])  # the canary's side only is judged
            reason = should_roll_back(self._canary(row), side_stats(row[3], outcomes))
            if reason is None:
                continue
            with self.store.transaction():
                again = self.store.canaries.get(row[0], row[1])
                if again is None or again[3] != row[3]:
                    continue
                note = f"rolled back automatically at {now()}: {reason}"
                self.store.canaries.end(row[0], row[1], note)
                self.store.bump_generation()
            log.warning("canary of %s on %s %s", row[1], row[0], note)
            done.append(f"{row[1]}: {note}")
        return done
