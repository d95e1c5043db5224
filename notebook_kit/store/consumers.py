"""Consumers in the store: tables ``consumers``, ``consumer_keys`` (digests, never keys),
``consumer_quota`` (units taken per quota period), ``consumer_ticks`` (units taken per
rate tick) and ``consumer_usage`` (calls per consumer, application, stage and UTC day).

``take`` is how every node's limits stay exact: one write transaction (the store's writers
are serialised on both backends) reads what the consumer took in its quota period and in
the rate window, and grants what is left, at most what was asked. Units a worker took
but did not spend go back with ``give_back``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from ..domain.clock import now
from ..domain.consumers import (
    TICKS_PER_WINDOW,
    Consumer,
    ConsumerKey,
    Quota,
    Rate,
    period_bounds,
)
from .dialect import StoreDB

__all__ = ["ConsumerTables", "Grant", "UsageRow"]

# What a take grants: units, how long they may be spent (seconds), the quota period and
# rate tick they count in, the quota left after it and the seconds to its reset (None
# without a quota), the rate's units left in the window, and when refused (0 units) the
# seconds to wait.
Grant = dict[str, Any]
# (consumer, app, stage, day, calls, 4xx, 5xx): what one flush adds.
UsageRow = tuple[str, str, str, str, int, int, int]

_HOLD_SECONDS = 1.0  # units of a quota-only consumer are spent within this, or given back
_AHEAD_DIVISOR = 256  # a take adds left/256 units ahead of the calls waiting (none below 256)
_AHEAD_MAX = 1024

_SELECT = (
    "SELECT name, apps, stages, rate_count, rate_seconds, burst, quota_count, quota_period, "
    "created_at FROM consumers"
)


def _consumer(row: Any, keys: list[ConsumerKey]) -> Consumer:
    rate = None if row[3] is None else Rate(int(row[3]), int(row[4]), int(row[5]))
    quota = None if row[6] is None else Quota(int(row[6]), str(row[7]))
    return Consumer(
        row[0], tuple(json.loads(row[1])), tuple(json.loads(row[2])), rate, quota,
        tuple(keys), row[8],
    )  # fmt: skip


class ConsumerTables:
    """Reads and writes of the consumers' tables (writes inside a transaction)."""

    def __init__(self, db: StoreDB) -> None:
        self._db = db

    # -- consumers and keys ---------------------------------------------------------------

    def get(self, name: str) -> Consumer | None:
        row = self._db.execute(f"{_SELECT} WHERE name = ?", (name,)).fetchone()
        return None if row is None else _consumer(row, self._keys(name))

    def all(self) -> list[Consumer]:
        keys: dict[str, list[ConsumerKey]] = {}
        for r in self._db.execute(
            "SELECT consumer, prefix, created_at, expires_at, last_used_at FROM consumer_keys "
            "ORDER BY created_at, prefix"
        ):
            keys.setdefault(r[0], []).append(ConsumerKey(r[1], r[2], r[3], r[4]))
        rows = self._db.execute(f"{_SELECT} ORDER BY name").fetchall()
        return [_consumer(r, keys.get(r[0], [])) for r in rows]

    def _keys(self, name: str) -> list[ConsumerKey]:
        rows = self._db.execute(
            "SELECT prefix, created_at, expires_at, last_used_at FROM consumer_keys "
            "WHERE consumer = ? ORDER BY created_at, prefix",
            (name,),
        )
        return [ConsumerKey(r[0], r[1], r[2], r[3]) for r in rows]

    def put(self, c: Consumer) -> None:
        """Insert ``c`` (its keys are added with ``add_key``)."""
        at = now()
        rate, quota = c.rate, c.quota
        self._db.write(
            "INSERT INTO consumers (name, apps, stages, rate_count, rate_seconds, burst, "
            "quota_count, quota_period, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                c.name, json.dumps(list(c.apps)), json.dumps(list(c.stages)),
                None if rate is None else rate.count, None if rate is None else rate.seconds,
                None if rate is None else rate.burst, None if quota is None else quota.count,
                None if quota is None else quota.period, at, at,
            ),
        )  # fmt: skip

    def delete(self, name: str) -> None:
        for table in ("consumer_keys", "consumer_quota", "consumer_ticks"):
            self._db.write(f"DELETE FROM {table} WHERE consumer = ?", (name,))
        self._db.write("DELETE FROM consumers WHERE name = ?", (name,))

    def add_key(self, name: str, digest: str, prefix: str, expires_at: float | None) -> None:
        self._db.write(
            "INSERT INTO consumer_keys (digest, consumer, prefix, created_at, expires_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (digest, name, prefix, now(), expires_at),
        )

    def key_digests(self, name: str, prefix: str) -> list[str]:
        """The digests of ``name``'s keys that start with ``prefix``."""
        rows = self._db.execute(
            "SELECT digest, prefix FROM consumer_keys WHERE consumer = ?", (name,)
        ).fetchall()
        return [r[0] for r in rows if r[1].startswith(prefix) or prefix.startswith(r[1])]

    def delete_key(self, digest: str) -> None:
        self._db.write("DELETE FROM consumer_keys WHERE digest = ?", (digest,))

    def callers(self) -> list[list[Any]]:
        """Every key as the servers need it: [digest, consumer, apps, stages, expires at,
        rate count, rate seconds, burst, quota count, quota period]."""
        rows = self._db.execute(
            "SELECT k.digest, c.name, c.apps, c.stages, k.expires_at, c.rate_count, "
            "c.rate_seconds, c.burst, c.quota_count, c.quota_period "
            "FROM consumer_keys k JOIN consumers c ON c.name = k.consumer ORDER BY k.digest"
        )
        return [
            [r[0], r[1], json.loads(r[2]), json.loads(r[3]), *(r[i] for i in range(4, 10))]
            for r in rows
        ]

    def touch(self, last_used: dict[str, str]) -> None:
        """Record when keys (by digest) were last used."""
        self._db.executemany(
            "UPDATE consumer_keys SET last_used_at = ? WHERE digest = ? "
            "AND (last_used_at IS NULL OR last_used_at < ?)",
            [(at, digest, at) for digest, at in last_used.items()],
        )

    # -- limits ---------------------------------------------------------------------------

    def take(self, name: str, want: int, at: float) -> Grant:
        """Grant ``name`` up to ``want`` units (plus a few ahead when much is left) at
        ``at`` (epoch seconds): what its quota period and rate window have left. Inside a
        write transaction. An unknown consumer is granted nothing, for an hour."""
        row = self._db.execute(f"{_SELECT} WHERE name = ?", (name,)).fetchone()
        if row is None:
            return {"units": 0, "retry": 3600.0, "gone": True}
        consumer = _consumer(row, [])
        policies = [p.policy() for p in (consumer.rate,) if p is not None]
        if consumer.quota is not None:
            policies.append(consumer.quota.policy(at))
        grant: Grant = {
            "units": 0,
            "hold": _HOLD_SECONDS,
            "period": None,
            "tick": None,
            "policy": ", ".join(policies),
        }
        left = want + _AHEAD_MAX * _AHEAD_DIVISOR  # room enough for the most taken ahead
        wait = 0.0
        quota, rate = consumer.quota, consumer.rate
        quota_used = 0
        if quota is not None:
            period = quota.key(at)
            found = self._db.execute(
                "SELECT used FROM consumer_quota WHERE consumer = ? AND period = ?", (name, period)
            ).fetchone()
            quota_used = 0 if found is None else int(found[0])
            _, end = period_bounds(quota.period, at)
            grant.update(period=period, quota_left=quota.count - quota_used, reset=end - at)
            left = min(left, quota.count - quota_used)
            if left <= 0:
                wait = end - at
        window_used = tick_used = 0
        if rate is not None:
            length = rate.tick_seconds
            tick = math.floor(at / length)
            rows = self._db.execute(
                "SELECT tick, used FROM consumer_ticks WHERE consumer = ? AND tick >= ?",
                (name, tick - TICKS_PER_WINDOW),
            ).fetchall()
            window_used = sum(int(r[1]) for r in rows)
            tick_used = sum(int(r[1]) for r in rows if int(r[0]) == tick)
            rate_left = min(rate.count - window_used, rate.burst - tick_used)
            tick_end = (tick + 1) * length
            grant.update(tick=tick, hold=tick_end - at, rate_left=rate.count - window_used)
            if rate_left <= 0:
                wait = max(wait, tick_end - at)
            left = min(left, rate_left)
        if left <= 0:
            grant["retry"] = max(wait, 0.001)
            return grant
        units = min(left, want + min(_AHEAD_MAX, left // _AHEAD_DIVISOR))
        grant["units"] = units
        if quota is not None:
            self._add("consumer_quota", "period", name, grant["period"], units)
            grant["quota_left"] -= units
        if rate is not None:
            self._add("consumer_ticks", "tick", name, grant["tick"], units)
            grant["rate_left"] -= units
            self._db.write(
                "DELETE FROM consumer_ticks WHERE consumer = ? AND tick < ?",
                (name, grant["tick"] - TICKS_PER_WINDOW),
            )
        return grant

    def _add(self, table: str, column: str, name: str, value: Any, units: int) -> None:
        self._db.write(
            f"INSERT INTO {table} (consumer, {column}, used) VALUES (?, ?, ?) "
            f"ON CONFLICT (consumer, {column}) DO UPDATE SET used = {table}.used + ?",
            (name, value, units, units),
        )

    def give_back(self, name: str, period: str | None, tick: int | None, units: int) -> None:
        """Units of a take that were not spent (inside a write transaction)."""
        if units <= 0:
            return
        if period is not None:
            self._db.write(
                "UPDATE consumer_quota SET used = CASE WHEN used > ? THEN used - ? ELSE 0 END "
                "WHERE consumer = ? AND period = ?",
                (units, units, name, period),
            )
        if tick is not None:
            self._db.write(
                "UPDATE consumer_ticks SET used = CASE WHEN used > ? THEN used - ? ELSE 0 END "
                "WHERE consumer = ? AND tick = ?",
                (units, units, name, tick),
            )

    def quota_used(self) -> dict[tuple[str, str], int]:
        """(consumer, period) -> units taken."""
        rows = self._db.execute("SELECT consumer, period, used FROM consumer_quota")
        return {(r[0], r[1]): int(r[2]) for r in rows}

    # -- usage ----------------------------------------------------------------------------

    def add_usage(self, rows: Iterable[UsageRow]) -> None:
        rows = list(rows)
        if not rows:  # most flushes: calls made with no key
            return
        self._db.executemany(
            "INSERT INTO consumer_usage (consumer, app_id, stage, day, calls, client_errors, "
            "server_errors) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (consumer, app_id, stage, day) DO UPDATE SET "
            "calls = consumer_usage.calls + excluded.calls, "
            "client_errors = consumer_usage.client_errors + excluded.client_errors, "
            "server_errors = consumer_usage.server_errors + excluded.server_errors",
            rows,
        )

    def usage(self, since_day: str | None = None) -> list[tuple[str, str, str, int, int, int]]:
        """(consumer, app, stage, calls, 4xx, 5xx) summed over the days from ``since_day``."""
        where, params = ("WHERE day >= ?", (since_day,)) if since_day else ("", ())
        rows = self._db.execute(
            "SELECT consumer, app_id, stage, SUM(calls), SUM(client_errors), "
            f"SUM(server_errors) FROM consumer_usage {where} "
            "GROUP BY consumer, app_id, stage ORDER BY consumer, app_id, stage",
            params,
        )
        return [(r[0], r[1], r[2], int(r[3]), int(r[4]), int(r[5])) for r in rows]

    def daily_usage(self, name: str) -> list[tuple[str, int, int, int]]:
        """(day, calls, 4xx, 5xx) of one consumer, oldest first."""
        rows = self._db.execute(
            "SELECT day, SUM(calls), SUM(client_errors), SUM(server_errors) FROM consumer_usage "
            "WHERE consumer = ? GROUP BY day ORDER BY day",
            (name,),
        )
        return [(r[0], int(r[1]), int(r[2]), int(r[3])) for r in rows]
