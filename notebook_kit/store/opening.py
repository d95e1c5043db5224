"""Choosing the store: the SQLite file in the workspace, or a PostgreSQL URL."""

from __future__ import annotations

from pathlib import Path

from ..errors import ValidationError
from .dialect import ACCEPTED_URLS, PG_SCHEMES, check_store_url, mask_url
from .store import Store

__all__ = ["SQLITE_FILE", "STORE_ENV", "open_store"]

#: The default store's file name inside the workspace directory.
SQLITE_FILE = "workspace.sqlite3"
#: The environment variable naming the store when no URL is given.
STORE_ENV = "NOTEBOOK_KIT_STORE"


def open_store(url: str | None, home: Path) -> Store:
    """The store ``url`` names: None or "" is the SQLite file in ``home`` (created on first
    use); ``postgresql://user:password@host:port/database`` is a shared PostgreSQL store
    (migrated on first use). Anything else: a ``ValidationError`` naming both forms; an
    unreachable server or a refused login: a ``StoreError`` (the password never shown)."""
    if not url:
        return Store(home / SQLITE_FILE)
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme not in PG_SCHEMES:
        raise ValidationError(
            f"unsupported store URL {mask_url(url)!r}: use {ACCEPTED_URLS}", field="store"
        )
    from .postgres import PgConnection  # psycopg loads only for a PostgreSQL store

    return Store(db=PgConnection(check_store_url(url)))
