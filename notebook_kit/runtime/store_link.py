"""How a worker keeps in touch with the store: change wake-ups, outages, the log backlog.

``StoreLink`` gives the watch loop four things:

- a wake-up (``wake``, an ``asyncio.Event``) set the moment a change commits, on a store
  that can tell (PostgreSQL's NOTIFY, heard by a ``ChangeListener`` blocking in a thread of
  its own, reconnecting with backoff). Polling the generation stays the fallback: a missed
  notification or a dropped listener costs at most one reload interval.
- on a SQLite store, the same wake-up when the store's files are written (``FileWatch``,
  Linux's inotify).
- how long the loop may wait (``tick``): ``FLUSH_SECONDS`` while it has log entries to
  write; with nothing to write, the reload interval (``IDLE_WAKE_SECONDS`` at most), or,
  on a watched SQLite file in a worker of its own, ``WATCHED_IDLE_SECONDS`` (a safety
  net) once ``AFTER_CHANGE_SECONDS`` have passed since the last wake-up: the polls right
  after a change catch a commit whose last step (the WAL index, in shared memory) came
  after its file write woke the loop.
- one warning when the store goes away and one when it is back, however many times the
  loop fails in between (the worker keeps serving what it has: the request path does no
  store query).
- a bounded backlog of request-log entries that could not be written: the oldest are
  dropped past ``limit``, counted, and the count is logged when the store is back.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable
from typing import Any

from ..errors import StoreError
from ..store.store import Store
from .file_watch import FileWatch

__all__ = [
    "AFTER_CHANGE_SECONDS",
    "BACKLOG_LIMIT",
    "FLUSH_SECONDS",
    "IDLE_WAKE_SECONDS",
    "WATCHED_IDLE_SECONDS",
    "StoreLink",
    "flush_quietly",
]

log = logging.getLogger("notebook_kit.runtime")

#: Request-log entries a worker keeps while the store is away (the oldest go first).
BACKLOG_LIMIT = 100_000
# Each SQLite statement of a flush (in a thread) hands the GIL to the busy loop and waits
# to get it back: a few larger flushes cost less CPU than many small ones.
FLUSH_SECONDS = 0.25
IDLE_WAKE_SECONDS = 1.0  # a polled store: the loop wakes at least this often
WATCHED_IDLE_SECONDS = 30.0
AFTER_CHANGE_SECONDS = 1.0
_WAIT_SECONDS = 1.0  # the listener thread checks for a stop this often
_MAX_BACKOFF = 5.0
_SERVER_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


class StoreLink:
    """The watch loop's side of the store: see the module docstring."""

    def __init__(
        self, store: Store, loop: asyncio.AbstractEventLoop, limit: int = BACKLOG_LIMIT
    ) -> None:
        self.wake = asyncio.Event()
        self.limit = limit
        self.backlog: list[Any] = []
        self.dropped = 0
        self.lost = False
        self._store_location = store.location
        self._loop = loop
        self._stop = threading.Event()
        self._listener = store.listener()
        path = store.path
        self.files = FileWatch.start(path, loop, self.wake) if path is not None else None
        # Loop time: poll at the reload interval until then; first for a change made
        # while the server started, before the file watch was in place.
        self._polling_until = loop.time() + AFTER_CHANGE_SECONDS
        self._thread: threading.Thread | None = None
        if self._listener is not None:
            self._thread = threading.Thread(
                target=self._listen, name="notebook-kit-store-listener", daemon=True
            )
            self._thread.start()

    # -- change notifications ----------------------------------------------------------

    def tick(self, busy: bool, interval: float, now: float, alone: bool) -> float:
        """How long the watch loop may wait for ``wake`` now (see the module docstring):
        ``busy``, it has log entries to write; ``interval``, the reload interval;
        ``alone``, the worker switches deployments by itself (no other workers)."""
        files = self.files
        if files is not None:
            files.arm(not busy)  # its own flushes must not wake it
        if busy:
            return min(FLUSH_SECONDS, interval)
        watched = files is not None and files.watching
        if not watched or not alone or self.lost or now < self._polling_until:
            return min(IDLE_WAKE_SECONDS, interval)
        return WATCHED_IDLE_SECONDS

    def woken(self, now: float) -> bool:
        """Whether ``wake`` was set (it is cleared): look at the store now, and poll for
        ``AFTER_CHANGE_SECONDS``."""
        if not self.wake.is_set():
            return False
        self.wake.clear()
        self._polling_until = now + AFTER_CHANGE_SECONDS
        return True

    def _listen(self) -> None:
        # Signals go to the loop's thread: one that arrives while this thread waits in
        # psycopg's C code would otherwise go unhandled (a SIGTERM the server never sees).
        signal.pthread_sigmask(signal.SIG_BLOCK, _SERVER_SIGNALS)
        listener = self._listener
        assert listener is not None
        backoff = 0.1
        try:
            while not self._stop.is_set():
                try:
                    heard = listener.wait(_WAIT_SECONDS)
                except StoreError:
                    self._stop.wait(backoff)  # the watch loop's polling logs the outage
                    backoff = min(backoff * 2, _MAX_BACKOFF)
                    continue
                backoff = 0.1
                if heard and not self._stop.is_set():
                    self._loop.call_soon_threadsafe(self.wake.set)
        except RuntimeError:  # the loop closed under us: the server is stopping
            pass
        finally:
            listener.close()

    def close(self) -> None:
        """Stop listening (the thread ends within a second; it is a daemon meanwhile)."""
        self._stop.set()
        if self.files is not None:
            self.files.close()

    # -- outages and the request-log backlog -------------------------------------------

    def take(self, pending: list[Any]) -> list[Any]:
        """What to write now: the backlog, then ``pending`` (the backlog is emptied)."""
        if not self.backlog:
            return pending
        batch, self.backlog = self.backlog, []
        batch.extend(pending)
        return batch

    def keep(self, unwritten: list[Any]) -> None:
        """Hold entries that could not be written, dropping the oldest past ``limit``."""
        self.backlog[:0] = unwritten
        extra = len(self.backlog) - self.limit
        if extra > 0:
            del self.backlog[:extra]
            self.dropped += extra

    def failed(self, exc: StoreError) -> None:
        """The store did not answer: say so once, until it is back."""
        if not self.lost:
            self.lost = True
            log.warning(
                "lost the store %s (%s); still serving what is live, keeping the request "
                "log in memory (up to %d entries) until it is back",
                self._store_location,
                exc,
                self.limit,
            )

    def answered(self) -> None:
        """The store answered: if it had gone, say it is back (and what the log lost)."""
        if self.lost:
            self.lost = False
            dropped, self.dropped = self.dropped, 0
            log.warning(
                "the store %s is back; caught up%s",
                self._store_location,
                f" ({dropped} request-log entries were dropped meanwhile)" if dropped else "",
            )


def flush_quietly(flush: Callable[[], None]) -> None:
    """Run ``flush`` (a stopping server's last request-log write); a store that is away
    loses those entries, which is logged rather than raised."""
    try:
        flush()
    except StoreError as exc:
        log.warning("could not write the last request-log entries: %s", exc)
