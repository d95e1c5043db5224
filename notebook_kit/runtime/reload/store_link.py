"""How the supervisor keeps in touch with the store: change wake-ups and outages.

``StoreLink`` gives the supervisor's follow loop three things:

- a wake-up (``wake``, an ``asyncio.Event``) set the moment a change commits, on a store
  that can tell (PostgreSQL's NOTIFY, heard by a ``ChangeListener`` blocking in a thread of
  its own, reconnecting with backoff). Polling the generation stays the fallback: a missed
  notification or a dropped listener costs at most one reload interval.
- on a SQLite store, the same wake-up when the store's files are written (``FileWatch``,
  Linux's inotify).
- how long the loop may wait (``tick``): the reload interval (``IDLE_WAKE_SECONDS`` at
  most), or, on a watched SQLite file, ``WATCHED_IDLE_SECONDS`` (a safety net) once
  ``AFTER_CHANGE_SECONDS`` have passed since the last wake-up: the polls right after a
  change catch a commit whose last step (the WAL index, in shared memory) came after its
  file write woke the loop. Its own request-log writes wake it too: the supervisor
  writes the log in the same process, so the watch is disarmed while a write is pending.
- one warning when the store goes away and one when it is back, however many times the
  reads and writes fail in between (the workers keep serving what they have: the
  request path does no store query; the log waits in memory, ``log_writer``).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading

from ...errors import StoreError
from ...store.store import Store
from .file_watch import FileWatch

__all__ = ["AFTER_CHANGE_SECONDS", "IDLE_WAKE_SECONDS", "WATCHED_IDLE_SECONDS", "StoreLink"]

log = logging.getLogger("notebook_kit.runtime")

IDLE_WAKE_SECONDS = 1.0  # a polled store: the loop wakes at least this often
WATCHED_IDLE_SECONDS = 30.0
AFTER_CHANGE_SECONDS = 1.0
_WAIT_SECONDS = 1.0  # the listener thread checks for a stop this often
_MAX_BACKOFF = 5.0
_SERVER_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


class StoreLink:
    """The watch loop's side of the store: see the module docstring."""

    def __init__(self, store: Store, loop: asyncio.AbstractEventLoop) -> None:
        self.wake = asyncio.Event()
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

    def tick(self, busy: bool, interval: float, now: float) -> float:
        """How long the follow loop may wait for ``wake`` now (see the module docstring):
        ``busy``, request-log entries are being written; ``interval``, the reload
        interval."""
        files = self.files
        if files is not None:
            files.arm(not busy)  # its own log writes must not wake it
        watched = files is not None and files.watching
        if busy or not watched or self.lost or now < self._polling_until:
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

    # -- outages ---------------------------------------------------------------------

    def failed(self, exc: StoreError) -> None:
        """The store did not answer: say so once, until it is back."""
        if not self.lost:
            self.lost = True
            log.warning(
                "lost the store %s (%s); still serving what is live, keeping the request "
                "log in memory until it is back",
                self._store_location,
                exc,
            )

    def answered(self, dropped: int = 0) -> None:
        """The store answered: if it had gone, say it is back (and what the log lost)."""
        if self.lost:
            self.lost = False
            log.warning(
                "the store %s is back; caught up%s",
                self._store_location,
                f" ({dropped} request-log entries were dropped meanwhile)" if dropped else "",
            )
