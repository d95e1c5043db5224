"""Per-stage rate limits: a token bucket per caller, like an API Gateway usage plan.

A stage with ``rate_limit_<stage>`` set allows each caller ``rate`` requests a second on
average and ``rate_limit_burst`` (default twice the rate) at once. The caller is the
consumer whose key the request presents, by name (the stage's own key is the consumer
``stage:<stage>``: every holder of a key shares its bucket, like an API Gateway usage
plan), else the client's IP address: a made-up ``x-api-key`` counts as its sender's
address, so varying it neither bypasses the limit nor grows the table. Past the limit the
runtime answers 429 with ``Retry-After``. (A consumer's own rate and quota are another
thing, exact across workers and nodes: ``allotments``.)

The table is bounded (``_CALLERS_KEPT`` callers per stage and worker) without ever
dropping a live bucket: when it is full, the callers whose bucket has filled up again
are forgotten (a full bucket is what a new caller gets anyway), at most once a second;
callers that still find no room share one overflow bucket until then.

The state is per worker process and in memory: with N workers (``serve --workers N``) a
caller whose requests spread over the workers gets up to N x the rate, unless the rate is
divided by N when it is set (the kernel spreads connections, not requests, over workers,
so a single keep-alive connection stays on one worker). A check is a dictionary lookup
and a few float operations on the ``perf_counter`` time the request already read.
"""

from __future__ import annotations

import math

__all__ = ["RateLimiter", "limiter_for"]

# Callers remembered per stage and worker; past it see the module docstring.
_CALLERS_KEPT = 10_000
_SWEEP_EVERY = 1.0  # seconds between two sweeps of a full table


class RateLimiter:
    """Token buckets of one stage in one worker: ``wait(caller, now)`` is 0.0 when the
    call may go (and takes a token), else the seconds until a token is back."""

    __slots__ = ("_buckets", "_next_sweep", "_overflow", "burst", "rate")

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: dict[str, list[float]] = {}  # caller -> [tokens, at]
        self._overflow = [burst, 0.0]  # shared by the callers a full table has no room for
        self._next_sweep = 0.0

    def wait(self, caller: str, now: float) -> float:
        bucket = self._buckets.get(caller)
        if bucket is None:
            if len(self._buckets) < _CALLERS_KEPT or self._sweep(now):
                self._buckets[caller] = [self.burst - 1.0, now]
                return 0.0
            bucket = self._overflow
        tokens = bucket[0] + (now - bucket[1]) * self.rate
        if tokens > self.burst:
            tokens = self.burst
        bucket[1] = now
        if tokens >= 1.0:
            bucket[0] = tokens - 1.0
            return 0.0
        bucket[0] = tokens
        return (1.0 - tokens) / self.rate

    def _sweep(self, now: float) -> bool:
        """Forget the callers whose bucket is full again (at most once every
        ``_SWEEP_EVERY`` s); whether the table has room now."""
        if now < self._next_sweep:
            return False
        self._next_sweep = now + _SWEEP_EVERY
        rate, burst, buckets = self.rate, self.burst, self._buckets
        for caller in [c for c, (t, at) in buckets.items() if t + (now - at) * rate >= burst]:
            del buckets[caller]
        return len(buckets) < _CALLERS_KEPT

    def __repr__(self) -> str:
        return f"<RateLimiter {self.rate}/s burst {self.burst}, {len(self._buckets)} callers>"


def retry_after(wait: float) -> str:
    """The ``Retry-After`` value (whole seconds, at least 1) for a wait in seconds."""
    return str(max(1, math.ceil(wait)))


def limiter_for(
    rate: float | None, burst: int | None, current: RateLimiter | None
) -> RateLimiter | None:
    """The limiter for a stage's settings: ``current`` when they did not change (a reload
    keeps the buckets), a new one when they did, None without a rate."""
    if rate is None:
        return None
    size = float(burst) if burst is not None else max(1.0, 2.0 * rate)
    if current is not None and current.rate == rate and current.burst == size:
        return current
    return RateLimiter(rate, size)
