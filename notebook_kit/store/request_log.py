"""The request log and the per-action counters: what the servers answered.

Tables ``request_log_batches`` and ``action_stats`` of the workspace store. The log is
written in batches, one row a flush, so a busy server spends about a microsecond a
request on it; only the newest ``request_log_size`` entries are kept. A server's batch is
stored as its worker made it (``log_batches``: columns, never a pickle, since workers run
action code); rows added by the trusted side itself (``append_requests``) are pickled,
and only those are ever unpickled.
"""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Any

from ..domain.answers import CAUGHT_ERROR, RESPONSE_CONTRACT, TIMEOUT_ERROR
from ..domain.clock import iso_time
from .dialect import StoreDB
from .log_batches import decode_batch, is_batch

__all__ = ["ActionStats", "RequestLog", "action_counters", "consumer_counters"]

# What a batch adds to one action's counters: (stage, app, API ID, requests, errors,
# last status, last request at, last error or None, last error at or None, timeouts).
ActionStats = tuple[str, str, str, int, int, int, str, str | None, str | None, int]


def _consumer_and_record(e: tuple[Any, ...]) -> tuple[Any, Any]:
    """An entry's consumer and recorded request (entries from before consumers held the
    recorded request ninth)."""
    if len(e) > 9:
        return e[8], e[9]
    if len(e) > 8:
        return (None, e[8]) if isinstance(e[8], dict) else (e[8], None)
    return None, None


def _as_columns(offset: float, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """A stored batch as (at, stage, method, path, status, ms, deployment, consumer,
    request, error) rows (``request``: the recorded request, or None; ``error``: why the
    call gave no answer of its own, or what its answer broke, or None)."""
    if rows and len(rows[0]) >= 7:  # runtime entries: see append_requests
        return [
            (
                offset + e[0],
                e[2],
                e[3][0],
                e[3][1],
                e[4],
                (e[1] - e[0]) * 1000,
                e[7] if len(e) > 7 else None,  # the deployment that answered
                *_consumer_and_record(e),
                e[6],
            )
            for e in rows
        ]
    return [
        (offset + row[0] if offset else row[0], *row[1:6], None, None, None, None) for row in rows
    ]


# A runtime's log entry: started and ended (perf_counter times), stage, (method, path),
# status, the (stage, app, API ID) of the action that ran or None, its error or None,
# the ID of the deployment that answered or None (entries written before canaries stop
# at the error).
_ran_action = itemgetter(5)
_ANSWERED = (RESPONSE_CONTRACT, CAUGHT_ERROR)
_failed = itemgetter(6)


def action_counters(entries: list[tuple[Any, ...]], wall: float) -> list[ActionStats]:
    """Per action that ran: (stage, app, API ID, requests, errors, last status, last
    request at, last error, last error at), from a batch of log entries; ``wall`` turns
    their clock readings into epoch seconds.

    Every step is a C-level loop (map, filter, zip, Counter): this touches every request a
    worker answered since its last flush. Entries are keyed by their own (stage, app, API
    ID) objects, which a stage shares between all requests to one path.
    """
    counts = Counter(map(_ran_action, entries))
    last = dict(zip(map(_ran_action, entries), entries, strict=True))
    last.pop(None, None)
    # requests whose action raised or timed out (an answer outside its declared response,
    # or after a built-in's error the action caught, is noted in the log, but the action
    # answered: not an error)
    failed = [e for e in filter(_failed, entries) if not e[6].startswith(_ANSWERED)]
    timed_out = [e for e in failed if e[6].startswith(TIMEOUT_ERROR)] if failed else []
    timeout_counts = Counter(map(_ran_action, timed_out))
    error_counts = Counter(map(_ran_action, failed))
    error_counts.subtract(timeout_counts)  # errors: the action raised
    last_error = dict(zip(map(_ran_action, failed), failed, strict=True))
    return [
        (
            *key,
            counts[key],
            error_counts[key],
            entry[4],
            iso_time(wall + entry[0]),
            error[6][:2000] if error else None,
            iso_time(wall + error[0]) if error else None,
            timeout_counts[key],
        )
        for key, entry in last.items()
        for error in (last_error.get(key),)
    ]


_by_consumer = itemgetter(8, 3, 2, 4)  # consumer, (method, path), stage, status


def consumer_counters(
    entries: list[tuple[Any, ...]], wall: float
) -> list[tuple[str, str, str, str, int, int, int]]:
    """Per (consumer, application, stage, UTC day): calls, 4xx, 5xx, from the entries of a
    batch that name a consumer (the application is the path's). One C-level count over the
    batch (its entries share their path and stage objects), then a step per distinct
    (consumer, path, stage, status); a batch spans a quarter of a second, so its day is
    read per entry only when it straddles midnight."""
    if not entries:
        return []
    first = iso_time(wall + entries[0][0])[:10]
    if iso_time(wall + entries[-1][0])[:10] == first:
        counted = Counter(map(_by_consumer, entries))
        keyed = [(first, key, n) for key, n in counted.items()]
    else:
        keyed = [(iso_time(wall + e[0])[:10], _by_consumer(e), 1) for e in entries]
    rows: dict[tuple[str, str, str, str], list[int]] = {}
    for day, (consumer, key, stage, status), n in keyed:
        if consumer is None:
            continue
        parts = key[1].split("/", 3)
        row = rows.setdefault((consumer, parts[2] if len(parts) > 2 else "", stage, day), [0, 0, 0])
        row[0] += n
        if 400 <= status < 500:
            row[1] += n
        elif status >= 500:
            row[2] += n
    return [(*k, *v) for k, v in rows.items()]  # type: ignore[misc]


_COLUMNS = (
    "id",
    "at",
    "stage",
    "method",
    "path",
    "status",
    "duration_ms",
    "deployment",
    "consumer",
    "request",
    "error",
)


def _batch(blob: bytes) -> tuple[float, list[tuple[Any, ...]]]:
    """A stored batch's clock offset and entries (a malformed worker batch: none)."""
    if is_batch(blob):
        try:
            return decode_batch(blob)
        except ValueError:
            return 0.0, []
    offset, rows = pickle.loads(blob)  # written by ``append_requests`` (trusted) only
    return offset, rows


def _numbered(blob: bytes, upto: int) -> list[tuple[Any, ...]]:
    """A stored batch's rows, each led by its entry number."""
    offset, rows = _batch(blob)
    first = int(upto) - len(rows) + 1
    return [(first + i, *row) for i, row in enumerate(_as_columns(offset, rows))]


def _as_dicts(entries: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    rows = [dict(zip(_COLUMNS, entry, strict=True)) for entry in entries]
    for row in rows:
        if isinstance(row["at"], float):
            row["at"] = iso_time(row["at"])
    return rows


#: Trimming the log: every batch whose entries all come before the newest ``keep``.
TRIM_SQL = "DELETE FROM request_log_batches WHERE upto <= ?"
#: The running count so far (``upto`` only grows: its index's last entry).
LAST_SQL = "SELECT COALESCE(MAX(upto), 0) FROM request_log_batches"


class RequestLog:
    """Reads and writes of the request log and the per-action counters."""

    def __init__(self, db: StoreDB) -> None:
        self._db = db

    def append_requests(
        self,
        rows: Sequence[tuple[Any, ...]],
        keep: int,
        stats: Iterable[ActionStats] = (),
        at_offset: float = 0.0,
    ) -> None:
        """Add request-log rows (at, stage, method, path, status, ms); keep the newest ``keep``.

        ``at`` is seconds since the epoch (or ISO text); with ``at_offset``, it is a clock
        reading that the offset turns into epoch seconds when the log is read (so a busy
        server need not touch every row).

        A row may also be the runtime's own entry, stored as it is and turned into the
        columns above only when read: (started, ended, stage, (method, path), status, ran,
        error, deployment, consumer, request), two clock readings; the eighth item (the ID
        of the deployment that answered), the ninth (the consumer's name) and the tenth
        (the recorded request) are optional (before consumers, the ninth was the request).

        ``stats`` adds to the per-action counters: (stage, app, api_id, requests, errors,
        last status, last request at, last error or None, last error at or None[,
        timeouts]).
        """
        db = self._db
        # Not waited onto the disk: a server writes these ten times a second, and an
        # fsync each time cost more CPU than the writes. A crash of the process loses
        # none of them; a power cut may lose the last ones (the store stays consistent).
        with db.transaction(self, durable=False):
            self._add_stats(stats)
            rows = rows[-keep:] if keep > 0 else []
            upto = db.execute(LAST_SQL).fetchone()[0] + len(rows)
            db.write(
                "INSERT INTO request_log_batches (entries, rows, upto) VALUES (?, ?, ?)",
                (len(rows), pickle.dumps((at_offset, rows), protocol=5), upto),
            )
            # Drop the batches that hold only entries older than the newest ``keep``: an
            # index range, so the cost does not grow with the log (see TRIM_SQL).
            db.write(TRIM_SQL, (upto - keep,))

    def append_batch(
        self, batch: bytes, count: int, keep: int, stats: Iterable[ActionStats]
    ) -> None:
        """Add a server's batch of ``count`` entries (``log_batches``, its offset set) as
        it is, with its per-action counters; keep the newest ``keep`` entries."""
        db = self._db
        with db.transaction(self, durable=False):  # see append_requests
            self._add_stats(stats)
            upto = db.execute(LAST_SQL).fetchone()[0] + count
            db.write(
                "INSERT INTO request_log_batches (entries, rows, upto) VALUES (?, ?, ?)",
                (count, batch, upto),
            )
            db.write(TRIM_SQL, (upto - keep,))

    def _add_stats(self, stats: Iterable[ActionStats]) -> None:
        self._db.executemany(
            "INSERT INTO action_stats (stage, app_id, api_id, requests, errors, "
            "last_status, last_request_at, last_error, last_error_at, timeouts) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (stage, app_id, api_id) DO UPDATE SET "
            "requests = action_stats.requests + excluded.requests, "
            "errors = action_stats.errors + excluded.errors, "
            "timeouts = action_stats.timeouts + excluded.timeouts, "
            "last_status = excluded.last_status, "
            "last_request_at = excluded.last_request_at, "
            "last_error = COALESCE(excluded.last_error, action_stats.last_error), "
            "last_error_at = COALESCE(excluded.last_error_at, action_stats.last_error_at)",
            stats,
        )

    def request_log(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The newest ``limit`` logged requests (all that are kept if None), oldest first.

        Each row: ``id`` (the entry's number: the log's running count, so it never changes
        while the entry is kept), at, stage, method, path, status, duration_ms and
        ``deployment`` (the deployment that answered, or None), ``request`` (the
        recorded request, ``recording.record_request``, or None) and ``error`` (why the
        call gave no answer of its own, or how it broke its contract; None)."""
        entries: list[Any] = []
        batches = self._db.execute("SELECT rows, upto FROM request_log_batches ORDER BY id DESC")
        for blob, upto in batches:
            entries[:0] = _numbered(blob, upto)
            if limit is not None and len(entries) >= limit:
                break
        if limit is not None:
            entries = entries[-limit:] if limit > 0 else []
        return _as_dicts(entries)

    def request_log_entry(self, entry_id: int) -> dict[str, Any] | None:
        """The kept entry numbered ``entry_id`` (as ``request_log``), or None."""
        row = self._db.execute(
            "SELECT rows, upto FROM request_log_batches WHERE upto >= ? ORDER BY upto LIMIT 1",
            (entry_id,),
        ).fetchone()
        if row is None:
            return None
        found = [e for e in _numbered(row[0], row[1]) if e[0] == entry_id]
        return _as_dicts(found)[0] if found else None

    def outcomes_since(self, after: int) -> list[tuple[int, float, int | None]]:
        """(status, milliseconds, deployment) of each kept entry numbered above ``after``,
        oldest first: what judging a canary needs, read without building rows (about
        10,000 entries in a few milliseconds)."""
        found: list[tuple[int, float, int | None]] = []
        batches = self._db.execute(
            "SELECT rows, upto FROM request_log_batches WHERE upto > ? ORDER BY id", (after,)
        )
        for blob, upto in batches:
            _, rows = _batch(blob)
            newer = rows[max(0, after - (int(upto) - len(rows))) :]
            if newer and len(newer[0]) >= 7:  # runtime entries
                found += [(e[4], (e[1] - e[0]) * 1000, e[7] if len(e) > 7 else None) for e in newer]
            else:
                found += [(row[4], row[5], None) for row in newer]
        return found

    def action_stats(self) -> dict[tuple[str, str, str], dict[str, Any]]:
        """Per (stage, app, api_id): requests, errors, last status / request / error."""
        rows = self._db.execute("SELECT * FROM action_stats")
        return {
            (r["stage"], r["app_id"], r["api_id"]): {
                "requests": r["requests"],
                "errors": r["errors"],
                "timeouts": r["timeouts"],
                "lastStatus": r["last_status"],
                "lastRequestAt": r["last_request_at"],
                "lastError": r["last_error"],
                "lastErrorAt": r["last_error_at"],
            }
            for r in rows
        }
