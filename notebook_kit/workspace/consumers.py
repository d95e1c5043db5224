"""Consumers: the core's side (docs/consumers.md).

``Consumers`` makes and lists consumers and their keys, revokes keys, deletes consumers
and reads usage. Every change bumps the generation, so every server (every node of a
shared PostgreSQL store) refuses a revoked key or a deleted consumer as soon as it follows
the change (well within a second). A key is returned once, when it is made, and stored
only as its SHA-256.

The stage keys of the spec are the built-in consumers ``stage:dev`` and ``stage:prod``:
listed with the others, without limits, their key rotated with ``rotate_key``.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from ..domain.consumers import (
    KEY_PREFIX_LENGTH,
    STAGE_CONSUMER,
    Consumer,
    ConsumerKey,
    check_consumer_name,
    check_scope,
    key_digest,
    new_consumer_key,
    parse_expiry,
    parse_quota,
    parse_rate,
    period_bounds,
    stage_consumer,
)
from ..domain.models import Stage
from ..errors import ConflictError, NotFoundError, ValidationError
from ..store.store import Store

__all__ = ["MAX_KEYS", "Consumers", "NewKey"]

MAX_KEYS = 2  # a consumer holds at most two keys: the one in use and the next (rotation)


class NewKey(dict[str, Any]):
    """A key just made: ``name`` (the consumer), ``key`` (shown this once), ``prefix``,
    ``expires_at``. A dict, so it prints and serialises as JSON as it is."""


def _scope(values: Iterable[str] | str | None) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str):
        return [values]
    return [str(v) for v in values]


class Consumers:
    """The consumers of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- reads ----------------------------------------------------------------------------

    def list(self) -> builtins.list[Consumer]:
        """Every consumer, the two built-in stage consumers first."""
        keys = self.store.api_keys()
        builtin = [
            Consumer(
                stage_consumer(stage),
                stages=(str(stage),),
                keys=(ConsumerKey(keys[stage][:KEY_PREFIX_LENGTH], ""),),
                builtin=True,
            )
            for stage in Stage
        ]
        return builtin + self.store.consumers.all()

    def get(self, name: str) -> Consumer:
        found = next((c for c in self.list() if c.name == name), None)
        if found is None:
            raise NotFoundError(f"no consumer {name!r}")
        return found

    # -- changes --------------------------------------------------------------------------

    def create(
        self,
        name: str,
        apps: Iterable[str] | str | None = None,
        stages: Iterable[str] | str | None = None,
        rate: str | None = None,
        burst: int | str | None = None,
        quota: str | None = None,
        expires: str | None = None,
    ) -> NewKey:
        """A new consumer and its first key (returned once)."""
        check_consumer_name(name)
        app_ids, stage_names = _scope(apps), _scope(stages)
        check_scope(app_ids, stage_names)
        consumer = Consumer(
            name,
            tuple(app_ids),
            tuple(str(Stage.parse(s)) for s in stage_names),
            parse_rate(rate, burst),
            parse_quota(quota),
        )
        expires_at = parse_expiry(expires, time.time())
        with self.store.transaction():
            for app in app_ids:
                if self.store.get_application(app) is None:
                    raise NotFoundError(f"no application {app!r}")
            if self.store.consumers.get(name) is not None:
                raise ConflictError(f"consumer {name!r} already exists")
            self.store.consumers.put(consumer)
            key = self._add_key(name, expires_at)
        return key

    def add_key(self, name: str, expires: str | None = None) -> NewKey:
        """Another key for ``name`` (at most two at once: revoke the old one after)."""
        self._check_user(name)
        expires_at = parse_expiry(expires, time.time())
        with self.store.transaction():
            found = self.store.consumers.get(name)
            if found is None:
                raise NotFoundError(f"no consumer {name!r}")
            if len(found.keys) >= MAX_KEYS:
                raise ConflictError(
                    f"consumer {name!r} already has {MAX_KEYS} keys: revoke one first "
                    f"(notebook-kit consumer key revoke {name} PREFIX)"
                )
            return self._add_key(name, expires_at)

    def _add_key(self, name: str, expires_at: float | None) -> NewKey:
        key = new_consumer_key()
        prefix = key[:KEY_PREFIX_LENGTH]
        self.store.consumers.add_key(name, key_digest(key), prefix, expires_at)
        self.store.bump_generation()
        return NewKey(name=name, key=key, prefix=prefix, expires_at=_iso(expires_at))

    def revoke_key(self, name: str, prefix: str) -> str:
        """Revoke ``name``'s key that starts with ``prefix``; returns its prefix."""
        self._check_user(name)
        if not prefix:
            raise ValidationError("give the start of the key to revoke (as listed)")
        with self.store.transaction():
            if self.store.consumers.get(name) is None:
                raise NotFoundError(f"no consumer {name!r}")
            found = self.store.consumers.key_digests(name, prefix)
            if not found:
                raise NotFoundError(f"consumer {name!r} has no key starting {prefix!r}")
            if len(found) > 1:
                raise ValidationError(f"{prefix!r} starts more than one key of {name!r}")
            self.store.consumers.delete_key(found[0])
            self.store.bump_generation()
        return prefix

    def delete(self, name: str) -> None:
        """Delete ``name`` and its keys (its usage stays in the counts)."""
        self._check_user(name)
        with self.store.transaction():
            if self.store.consumers.get(name) is None:
                raise NotFoundError(f"no consumer {name!r}")
            self.store.consumers.delete(name)
            self.store.bump_generation()

    def _check_user(self, name: str) -> None:
        if name.startswith(STAGE_CONSUMER):
            raise ValidationError(
                f"{name!r} is a stage's own key: rotate it with `notebook-kit keys --rotate "
                f"{name[len(STAGE_CONSUMER) :]}`"
            )

    # -- limits (the servers' side) ---------------------------------------------------------

    def take(self, name: str, want: int) -> dict[str, Any]:
        """Units of ``name``'s limits for a server's worker (``store.consumers.take``),
        in one write transaction: every node's takes together never pass a limit."""
        with self.store.transaction(durable=False):
            return self.store.consumers.take(name, want, time.time())

    def give_back(self, name: str, period: str | None, tick: int | None, units: int) -> None:
        """Units taken and not spent."""
        with self.store.transaction(durable=False):
            self.store.consumers.give_back(name, period, tick, units)

    # -- usage ----------------------------------------------------------------------------

    def quotas(self) -> dict[str, tuple[int, int]]:
        """(used, left) of each consumer's quota in its current period (consumers
        without a quota are not in it)."""
        taken = self.store.consumers.quota_used()
        at = time.time()
        found = {}
        for c in self.store.consumers.all():
            if c.quota is not None:
                used = taken.get((c.name, c.quota.key(at)), 0)
                found[c.name] = (used, c.quota.count - used)
        return found

    def usage(self, consumer: str | None = None) -> builtins.list[dict[str, Any]]:
        """Per consumer, application and stage: calls, 4xx, 5xx (every day counted), and
        the consumer's quota used and left in the current period (None without one)."""
        if consumer is not None:
            self.get(consumer)
        quotas = self.quotas()
        rows: builtins.list[dict[str, Any]] = []
        for name, app, stage, calls, client, server in self.store.consumers.usage():
            if consumer is not None and name != consumer:
                continue
            used, left = quotas.get(name, (None, None))
            rows.append(
                {
                    "consumer": name,
                    "application": app,
                    "stage": stage,
                    "calls": calls,
                    "4xx": client,
                    "5xx": server,
                    "quota_used": used,
                    "quota_left": left,
                }
            )
        return rows

    def daily(self, name: str) -> builtins.list[dict[str, Any]]:
        """One consumer's calls per UTC day (for a chart)."""
        self.get(name)
        return [
            {"day": day, "calls": calls, "4xx": client, "5xx": server}
            for day, calls, client, server in self.store.consumers.daily_usage(name)
        ]

    def quota_reset(self, name: str) -> str | None:
        """When ``name``'s quota period ends (UTC, ISO), or None without a quota."""
        quota = self.get(name).quota
        return None if quota is None else _iso(period_bounds(quota.period, time.time())[1])


def _iso(at: float | None) -> str | None:
    if at is None:
        return None
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
