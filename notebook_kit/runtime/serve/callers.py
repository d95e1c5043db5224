"""Who calls: the keys a stage accepts, as a worker holds them (digests, never keys).

A stage's ``callers`` maps the SHA-256 of every key valid on it to a ``Caller``: the
stage's own key (the built-in consumer ``stage:<stage>``) and each consumer key whose
consumer may call that stage. A request's ``x-api-key`` is hashed once and looked up;
a key that is unknown, expired, or of a consumer that may not call the path's
application is no caller at all (a 403 where the definition needs a key, like any wrong
key). The table is made by the builder from the supervisor's snapshot and shared by every
stage table built from the same callers (a reload that changes no key keeps it).

Looking a digest up in a dict is not constant-time, but what it could leak is where a
digest of the given key falls among the digests: nothing about a key (a key's digest
reveals nothing of the key, and keys have 240 random bits).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...domain.consumers import Quota, Rate, stage_consumer
from ...domain.models import Stage

__all__ = ["Caller", "caller_of", "callers_by_stage"]


@dataclass(frozen=True, slots=True)
class Caller:
    """One key's consumer, as a stage sees it: ``name`` (what the log records),
    ``apps`` (None: every application), ``expires`` (epoch seconds or None), its limits
    (``limited``: a rate or a quota, read on every call), ``digest`` (hex, for the key's
    last use; None for a stage's own key)."""

    name: str
    apps: frozenset[str] | None = None
    expires: float | None = None
    rate: Rate | None = None
    quota: Quota | None = None
    digest: str | None = None
    limited: bool = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "limited", self.rate is not None or self.quota is not None)


def caller_of(
    callers: Mapping[bytes, Caller], given: str | None, app: str, wall: Any
) -> Caller | None:
    """The caller a request's key names on a stage, if it may call ``app`` now
    (``wall()``: the time, read only for a key that expires)."""
    if given is None:
        return None
    caller = callers.get(hashlib.sha256(given.encode("utf-8", "surrogateescape")).digest())
    if caller is None:
        return None
    if caller.apps is not None and app not in caller.apps:
        return None
    if caller.expires is not None and caller.expires <= wall():
        return None
    return caller


def _limits(row: list[Any]) -> tuple[Rate | None, Quota | None]:
    rate = None if row[5] is None else Rate(int(row[5]), int(row[6]), int(row[7]))
    quota = None if row[8] is None else Quota(int(row[8]), str(row[9]))
    return rate, quota


def callers_by_stage(
    stage_digests: Mapping[str, str], rows: Iterable[list[Any]]
) -> dict[str, dict[bytes, Caller]]:
    """Each stage's callers, from the snapshot's stage key digests and consumer key rows
    ([digest, consumer, apps, stages, expires at, rate count, rate seconds, burst, quota
    count, quota period])."""
    found: dict[str, dict[bytes, Caller]] = {
        str(s): {bytes.fromhex(stage_digests[str(s)]): Caller(stage_consumer(s))} for s in Stage
    }
    for row in rows:
        rate, quota = _limits(row)
        apps = frozenset(str(a) for a in row[2]) if row[2] else None
        expires = None if row[4] is None else float(row[4])
        caller = Caller(str(row[1]), apps, expires, rate, quota, str(row[0]))
        for stage in row[3] or [str(s) for s in Stage]:
            if str(stage) in found:
                found[str(stage)][bytes.fromhex(str(row[0]))] = caller
    return found
