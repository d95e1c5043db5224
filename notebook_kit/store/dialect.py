"""What the two store backends share: store URLs, and SQL written once for both.

The table groups write portable SQL with ``?`` placeholders (what SQLite takes);
``to_pyformat`` rewrites it once per statement text for psycopg (``%s``). A store URL
names where the store lives: none (the SQLite file in the workspace) or
``postgresql://user:password@host:port/database``. Its password never appears in a
message, a repr or a log line: ``mask_url`` hides it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from ..errors import StoreError, ValidationError

__all__ = [
    "ACCEPTED_URLS",
    "DISK_FULL",
    "PG_SCHEMES",
    "READABLE_FROM",
    "UPGRADE_DOC",
    "Additive",
    "StoreDB",
    "check_store_url",
    "mask_url",
    "oldest_reader",
    "scrub",
    "to_pyformat",
    "too_new",
]

_T = TypeVar("_T")

PG_SCHEMES = ("postgresql", "postgres")
#: What a store error says, and only that, when the store's disk has no room for a change.
DISK_FULL = "the store's disk is full"
ACCEPTED_URLS = (
    "postgresql://user:password@host:port/database, or none for the SQLite file in the workspace"
)


class StoreDB(Protocol):
    """The connection a ``Store`` and its table groups use: SQLite's or PostgreSQL's."""

    path: Any  # the SQLite file, or None
    url: str | None  # the PostgreSQL URL (with its password), or None

    @property
    def in_transaction(self) -> bool: ...

    def transaction(self, value: _T, *, durable: bool = True) -> AbstractContextManager[_T]: ...

    def consistent_read(self) -> AbstractContextManager[None]: ...

    def execute(self, sql: str, params: Any = ()) -> Any: ...

    def write(self, sql: str, params: Any = ()) -> Any: ...

    def executemany(self, sql: str, rows: Any) -> None: ...

    def migrate(self) -> None: ...

    def changed(self) -> None: ...

    def reset_ids(self, tables: tuple[str, ...]) -> None: ...

    def close(self) -> None: ...


def check_store_url(url: str) -> str:
    """``url`` if it is a PostgreSQL URL with a host and a database, else a
    ``ValidationError`` naming the accepted forms (the password masked)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (a bad port raises here)
    except ValueError:
        raise ValidationError(
            f"bad store URL {mask_url(url)!r}: use {ACCEPTED_URLS}", field="store"
        ) from None
    if parts.scheme.lower() not in PG_SCHEMES:
        raise ValidationError(
            f"unsupported store URL {mask_url(url)!r}: use {ACCEPTED_URLS}", field="store"
        )
    if not parts.hostname or not parts.path.strip("/"):
        raise ValidationError(
            f"the store URL {mask_url(url)!r} needs a host and a database: use {ACCEPTED_URLS}",
            field="store",
        )
    return url


_PASSWORD = re.compile(r"(?P<head>://[^:/@\s]*:)(?P<password>[^/\s]*)(?P<tail>@)")


def mask_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``."""
    return _PASSWORD.sub(r"\g<head>***\g<tail>", url)


def scrub(message: str, url: str | None) -> str:
    """``message`` without ``url``'s password anywhere in it (a driver may quote it)."""
    if not url:
        return message
    message = message.replace(url, mask_url(url))
    found = _PASSWORD.search(url)
    if found and found["password"]:
        message = message.replace(found["password"], "***")
    return message


def _segments(sql: str) -> Iterator[tuple[bool, str]]:
    """``sql`` cut into (is_quoted, text) pieces: string literals and quoted names apart."""
    i, n, start = 0, len(sql), 0
    while i < n:
        c = sql[i]
        if c in ("'", '"'):
            if start < i:
                yield False, sql[start:i]
            end = i + 1
            while end < n:
                if sql[end] == c:
                    if end + 1 < n and sql[end + 1] == c:  # a doubled quote inside
                        end += 2
                        continue
                    break
                end += 1
            yield True, sql[i : end + 1]
            i = start = end + 1
        else:
            i += 1
    if start < n:
        yield False, sql[start:]


@functools.lru_cache(maxsize=512)
def to_pyformat(sql: str) -> str:
    """``sql`` with each ``?`` outside quotes as ``%s`` and every ``%`` doubled (psycopg's
    placeholders). Cached: the store runs the same few statement texts over and over."""
    return "".join(
        text.replace("%", "%%") if quoted else text.replace("%", "%%").replace("?", "%s")
        for quoted, text in _segments(sql)
    )


#: One schema change: SQL statements (``;``-separated), or a function of the connection for
#: a change SQL cannot make. Each store keeps an append-only tuple of them.
Migration = str | Callable[[Any], None]

#: The ``meta`` row holding the fewest migrations a notebook-kit must know to read the
#: store (written by every migration from this version on; a store without it needs one
#: that knows all it has had).
READABLE_FROM = "readable_from"
#: Where the upgrade steps are written down (named by every refusal of a newer store).
UPGRADE_DOC = "docs/guide/production.md#upgrading"


class Additive(str):
    """A migration an older notebook-kit can read past: it adds what older code neither
    reads nor must write (a table, a column with a default), so a node that does not know
    it may serve the migrated store. Any other migration is one an older node cannot read,
    and it refuses the store (in one line naming the versions) until it is upgraded. Wrap
    a migration's SQL in ``Additive(...)`` only when that holds."""

    __slots__ = ()


def oldest_reader(steps: Sequence[Migration], version: int) -> int:
    """The fewest of ``steps`` a notebook-kit must know to read a store that has had the
    first ``version`` of them: counting down past additive ones."""
    while version > 0 and isinstance(steps[version - 1], Additive):
        version -= 1
    return version


def too_new(version: int, readable_from: int, known: int) -> str:
    """Why a notebook-kit that knows ``known`` migrations refuses a store that has had
    ``version`` of them and needs a reader that knows ``readable_from``."""
    return (
        f"its schema version is {version}, which needs notebook-kit of schema version "
        f"{readable_from} or later, and this one is {known}: upgrade notebook-kit on this "
        f"node (the steps: {UPGRADE_DOC})"
    )


def _readable_from(execute: Callable[[str], Any], version: int) -> int:
    """What a store of ``version`` migrations records as its oldest reader (its version
    where it records none)."""
    row = execute(f"SELECT value FROM meta WHERE key = '{READABLE_FROM}'").fetchone()
    return int(row[0]) if row is not None else version


def apply_migrations(
    steps: Sequence[Migration],
    version: int,
    conn: Any,
    execute: Callable[[str], Any],
    where: str,
) -> bool:
    """Apply ``steps[version:]`` inside the caller's transaction (statements through
    ``execute``, functions on ``conn``); whether any ran. A store of a newer schema than
    ``steps`` (opened by an older notebook-kit) is served as it is when every migration
    this one does not know is additive (its ``readable_from``), else refused, never
    downgraded."""
    if version > len(steps):
        readable_from = _readable_from(execute, version)
        if len(steps) >= readable_from:
            return False
        raise StoreError(too_new(version, readable_from, len(steps)))
    for step in steps[version:]:
        if callable(step):
            step(conn)
            continue
        for statement in step.split(";"):
            if statement.strip():
                execute(statement)
    if version == len(steps):
        return False
    execute(
        f"INSERT INTO meta (key, value) VALUES ('{READABLE_FROM}', "
        f"'{oldest_reader(steps, len(steps))}') "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )
    return True
