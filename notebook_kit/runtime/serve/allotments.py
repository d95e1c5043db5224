"""A worker's share of its consumers' limits: units taken from the store, spent per call.

A consumer with a rate limit or a quota is limited across every worker of every node, so
no worker may decide alone. A worker asks its supervisor for units (``ask``: the
supervisor takes them from the store in one transaction, ``store.consumers.take``), then
spends one per admitted call without asking again until they run out or lapse (a rate's
units are good for the tick they were taken in; a quota's for a second). Calls that come
while an ask is on its way wait for it and are counted into the next one, so a burst of
calls costs one ask. Units that lapse unspent are handed back (``give_back``). A refusal
is remembered until the rate's tick ends (or for a second, for a quota), so a caller past
its limit costs the store nothing more.

Each admitted or refused call gets the IETF ``RateLimit-Policy`` and ``RateLimit`` fields
(draft-ietf-httpapi-ratelimit-headers-09): the policy of each limit, and what is left of
it: what the store had left when the units were taken plus what this worker still holds.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import Any

from .callers import Caller

__all__ = ["ASK_SECONDS", "Allotments", "Verdict"]

ASK_SECONDS = 5.0  # an ask unanswered this long refuses its calls (429, never unlimited)
_QUOTA_REFUSAL_SECONDS = 1.0  # a quota refusal is remembered this long (returns may come)

Ask = Callable[[str, int], Awaitable[dict[str, Any]]]
GiveBack = Callable[[str, Any, Any, int], None]


class _Share:
    """One consumer's units in this worker."""

    __slots__ = (
        "asking",
        "denied_until",
        "period",
        "policy",
        "quota_left",
        "rate_left",
        "reset_at",
        "retry_at",
        "tick",
        "tick_end",
        "units",
        "until",
        "waiting",
    )

    def __init__(self) -> None:
        self.units = 0
        self.until = 0.0
        self.period: Any = None
        self.tick: Any = None
        self.quota_left: int | None = None
        self.rate_left: int | None = None
        self.reset_at = 0.0
        self.tick_end = 0.0
        self.asking: asyncio.Future[dict[str, Any]] | None = None
        self.waiting = 0
        self.denied_until = 0.0
        self.retry_at = 0.0
        self.policy = ""


class Verdict:
    """A limited call's outcome: ``admitted`` or not, the ``headers`` to add, and when
    refused the ``retry_after`` (whole seconds, as text)."""

    __slots__ = ("admitted", "headers", "retry_after")

    def __init__(self, admitted: bool, headers: dict[str, str], retry_after: str = "") -> None:
        self.admitted = admitted
        self.headers = headers
        self.retry_after = retry_after


def _seconds(wait: float) -> int:
    return max(0, math.ceil(wait))


class Allotments:
    """The shares of one worker (see the module docstring)."""

    def __init__(self, ask: Ask, give_back: GiveBack) -> None:
        self._ask = ask
        self._give_back = give_back
        self._shares: dict[str, _Share] = {}

    def spend(self, caller: Caller, now: float) -> Verdict | None:
        """The verdict for a call at ``now`` (``perf_counter``) if this worker can give it
        without asking, else None (then ``await admit``)."""
        share = self._shares.get(caller.name)
        if share is None:
            return None
        if share.units and now < share.until:
            share.units -= 1
            return Verdict(True, self._headers(share, caller, now))
        if now < share.denied_until:
            return self._refusal(share, caller, now)
        return None

    async def admit(self, caller: Caller) -> Verdict:
        """The verdict for a call, asking the supervisor for units if need be."""
        share = self._shares.get(caller.name)
        if share is None:
            share = self._shares[caller.name] = _Share()
        while True:
            now = perf_counter()
            if share.units and now < share.until:
                share.units -= 1
                return Verdict(True, self._headers(share, caller, now))
            if now < share.denied_until:
                return self._refusal(share, caller, now)
            self._lapse(caller.name, share)
            share.waiting += 1
            asking = share.asking
            if asking is None:
                asking = share.asking = asyncio.get_running_loop().create_future()
                asyncio.get_running_loop().create_task(self._fetch(caller, share, asking, now))
            try:
                await asyncio.wait_for(asyncio.shield(asking), ASK_SECONDS)
            except TimeoutError:
                raise LookupError("the supervisor did not answer") from None

    async def _fetch(
        self, caller: Caller, share: _Share, asking: asyncio.Future[dict[str, Any]], began: float
    ) -> None:
        """One ask for every call waiting now (and those that come while it is away)."""
        await asyncio.sleep(0)  # the calls read with this one join the ask
        want, share.waiting = share.waiting, 0
        try:
            grant = await self._ask(caller.name, max(1, want))
        except Exception as exc:  # the channel closed: the waiting calls end with a 503
            share.asking = None
            if not asking.done():
                asking.set_exception(exc)
            return
        share.asking = None
        self._lapse(caller.name, share)
        units = int(grant.get("units") or 0)
        hold = float(grant.get("hold") or 0.0)
        share.period, share.tick = grant.get("period"), grant.get("tick")
        share.quota_left = _int(grant.get("quota_left"))
        share.rate_left = _int(grant.get("rate_left"))
        if grant.get("reset") is not None:
            share.reset_at = began + float(grant["reset"])
        if caller.rate is not None:
            share.tick_end = began + hold
        share.policy = grant.get("policy") or ""
        if units > 0:
            share.units, share.until = units, began + hold
            loop = asyncio.get_running_loop()
            loop.call_later(max(hold, 0.0) + 0.01, self._lapse, caller.name, share)
        else:
            retry = float(grant.get("retry") or 1.0)
            share.retry_at = began + retry
            out_of_quota = share.quota_left is not None and share.quota_left <= 0
            if out_of_quota or grant.get("gone"):  # units handed back may come: look again soon
                retry_remembered = min(retry, _QUOTA_REFUSAL_SECONDS)
            else:  # the rate's window frees no unit before its tick ends
                retry_remembered = retry
            share.denied_until = began + retry_remembered
        if not asking.done():
            asking.set_result(grant)

    def _lapse(self, name: str, share: _Share) -> None:
        """Hand back units past their time."""
        if share.units and perf_counter() >= share.until:
            units, share.units = share.units, 0
            self._give_back(name, share.period, share.tick, units)

    def _refusal(self, share: _Share, caller: Caller, now: float) -> Verdict:
        retry = str(max(1, _seconds(share.retry_at - now)))
        headers = self._headers(share, caller, now)
        headers["Retry-After"] = retry
        return Verdict(False, headers, retry)

    @staticmethod
    def _headers(share: _Share, caller: Caller, now: float) -> dict[str, str]:
        items = []
        if caller.rate is not None:
            left = max(0, (share.rate_left or 0) + share.units)
            items.append(f'"rate";r={left};t={_seconds(share.tick_end - now)}')
        if caller.quota is not None:
            left = max(0, (share.quota_left or 0) + share.units)
            items.append(f'"quota";r={left};t={_seconds(share.reset_at - now)}')
        return {"RateLimit-Policy": share.policy, "RateLimit": ", ".join(items)}

    def give_back_all(self) -> None:
        """At the worker's stop: every unit held goes back."""
        for name, share in self._shares.items():
            if share.units:
                units, share.units = share.units, 0
                self._give_back(name, share.period, share.tick, units)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)
