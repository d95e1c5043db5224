"""Canary releases on prod: the split's rules, as data and pure functions.

A canary serves a new deployment of one application to ``percent`` % of its prod callers
while the live deployment serves the rest. Which side a call goes to:

1. ``X-Notebook-Kit-Deployment: ID`` naming one of the two deployments reaches that side
   (smoke tests); a value naming neither is ignored.
2. Otherwise the caller's identity, the ``x-api-key`` it sends or else its client address,
   is hashed: ``crc32(identity as UTF-8) % 100`` is its *bucket*, and buckets below
   ``percent`` go to the canary. The hash is the same in every worker and on every node,
   so a caller stays on one side while the split lasts.

How each side did is computed from the request log (``side_stats``): calls, 5xx answers,
their share and the p50/p99 durations. An automatic rollback drops the canary once it has
answered at least ``min_calls`` calls and its 5xx share is above ``rollback_above`` %.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ValidationError

__all__ = [
    "DEPLOYMENT_HEADER",
    "Canary",
    "SideStats",
    "caller_bucket",
    "caller_identity",
    "should_roll_back",
    "side_stats",
    "validate_percent",
    "validate_threshold",
]

#: The request header that picks a side by deployment ID (header names are case-blind).
DEPLOYMENT_HEADER = "x-notebook-kit-deployment"


def caller_identity(key: str | None, address: str) -> str:
    """Who a call comes from, for the split: its ``x-api-key`` together with its client
    address, or the address alone. Not the key alone: a stage has one key, so every
    keyed caller would share one bucket and a split would be all or nothing."""
    return f"{key}@{address}" if key else address


def caller_bucket(identity: str) -> int:
    """The caller's bucket, 0 to 99: ``crc32`` of ``identity`` (UTF-8) mod 100."""
    return zlib.crc32(identity.encode("utf-8", "surrogateescape")) % 100


def validate_percent(percent: Any) -> int:
    """A canary's share of calls: a whole number from 1 to 99."""
    if isinstance(percent, bool) or not isinstance(percent, int) or not 1 <= percent <= 99:
        raise ValidationError(
            f"canary percent must be a whole number from 1 to 99, not {percent!r}",
            field="canary",
        )
    return percent


def validate_threshold(threshold: Any) -> float | None:
    """The 5xx share (in %) above which a canary is rolled back: 0 to 100, or None."""
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise ValidationError(
            f"rollback threshold must be a number of percent, not {threshold!r}",
            field="rollback_above",
        )
    if not (math.isfinite(threshold) and 0 <= threshold < 100):
        raise ValidationError(
            f"rollback threshold must be at least 0 and below 100 (%), not {threshold!r}",
            field="rollback_above",
        )
    return float(threshold)


@dataclass(frozen=True, slots=True)
class SideStats:
    """How one side answered since the canary started."""

    deployment: int
    calls: int = 0
    errors: int = 0  # 5xx answers
    p50_ms: float | None = None
    p99_ms: float | None = None

    @property
    def error_rate(self) -> float | None:
        """The 5xx share in %, or None before any call."""
        return 100.0 * self.errors / self.calls if self.calls else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "deployment": self.deployment,
            "calls": self.calls,
            "errors": self.errors,
            "error_rate": self.error_rate,
            "p50_ms": self.p50_ms,
            "p99_ms": self.p99_ms,
        }


def _quantile(ordered: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (as pandas' ``quantile`` does)."""
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def side_stats(deployment: int, outcomes: Iterable[tuple[int, float, int | None]]) -> SideStats:
    """The stats of the calls ``deployment`` answered among ``outcomes`` (status,
    milliseconds, deployment that answered: ``Store.outcomes_since``)."""
    mine = [(status, ms) for status, ms, answered in outcomes if answered == deployment]
    if not mine:
        return SideStats(deployment)
    durations = sorted(ms for _, ms in mine)
    errors = sum(1 for status, _ in mine if status >= 500)
    return SideStats(
        deployment,
        len(mine),
        errors,
        round(_quantile(durations, 0.5), 3),
        round(_quantile(durations, 0.99), 3),
    )


@dataclass(frozen=True, slots=True)
class Canary:
    """A running canary of ``app`` on prod (``Workspace.canary``); ``live`` and ``canary``
    carry each side's stats when they were asked for."""

    app: str
    stage: str
    live_id: int
    canary_id: int
    percent: int
    started_at: str
    rollback_above: float | None = None
    min_calls: int = 0
    live: SideStats | None = field(default=None, compare=False)
    canary: SideStats | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "app": self.app,
            "stage": self.stage,
            "live_id": self.live_id,
            "canary_id": self.canary_id,
            "percent": self.percent,
            "started_at": self.started_at,
            "rollback_above": self.rollback_above,
            "min_calls": self.min_calls,
            "live": None if self.live is None else self.live.to_dict(),
            "canary": None if self.canary is None else self.canary.to_dict(),
        }


def should_roll_back(canary: Canary, stats: SideStats) -> str | None:
    """Why the canary must be rolled back automatically (its figures), or None."""
    threshold = canary.rollback_above
    rate = stats.error_rate
    if threshold is None or rate is None or stats.calls < canary.min_calls:
        return None
    if rate <= threshold:
        return None
    return (
        f"{stats.errors} of {stats.calls} calls to deployment {canary.canary_id} answered "
        f"5xx ({rate:.1f} %, above {threshold:g} %)"
    )
