"""Hearing about changes as they commit: PostgreSQL's LISTEN on the store's channel.

A ``ChangeListener`` owns one connection of its own (not a thread's store connection) and
blocks in ``wait`` until a change is notified or the timeout passes. It is a wake-up
call, never the only path: a notification can be missed (the connection dropped, the
listener was reconnecting), so readers keep polling the generation as well. After every
(re)connection ``wait`` reports a change at once, since some may have been missed.
"""

from __future__ import annotations

from typing import Any

import psycopg

from ..errors import StoreError
from .dialect import mask_url, scrub
from .postgres import CHANNEL, connect

__all__ = ["ChangeListener"]


class ChangeListener:
    """``LISTEN`` on the store at ``url``; ``wait`` from one thread at a time."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: psycopg.Connection[Any] | None = None

    def __repr__(self) -> str:
        return f"ChangeListener({mask_url(self._url)!r})"

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds: True when a change was notified (or the
        listener has just connected), False when none came. ``StoreError`` when the store
        cannot be reached (call again to reconnect)."""
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            self.close()
            conn = connect(self._url, connect_timeout=max(1, int(timeout)))
            try:
                conn.execute(f"LISTEN {CHANNEL}")
            except psycopg.Error as exc:
                conn.close()
                raise self._error(exc) from None
            self._conn = conn
            return True
        try:
            for _ in conn.notifies(timeout=timeout, stop_after=1):
                return True
        except psycopg.Error as exc:
            self.close()
            raise self._error(exc) from None
        return False

    def _error(self, exc: psycopg.Error) -> StoreError:
        detail = scrub(" ".join(str(exc).split()), self._url)
        return StoreError(f"lost the store {mask_url(self._url)}: {detail}")

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
