"""The user directory's tables: ``users``, ``user_groups``, ``group_members``,
``password_resets``.

Only the SQL lives here. What a listing searches, and every rule about users (checks,
passwords, reset tokens, paging limits, messages), is ``builtins.users``'. A user is keyed
by ``email_key`` (the case-folded email) and searched by name through ``name_key``.
Changes must run inside the store's ``transaction()``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .dialect import StoreDB

__all__ = ["UserTables"]

# The columns ``update_user`` may set: its SQL names them, so they must never come from input.
_CHANGEABLE = frozenset(
    ("email", "email_key", "name", "name_key", "password_hash", "attributes", "updated_at")
)


def _like_escape(text: str) -> str:
    """``text`` as a literal inside a LIKE pattern written with ``ESCAPE '\\'``."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _matching(
    group: str | None, email_key_prefix: str | None, name_key_part: str | None
) -> tuple[str, tuple[str, ...]]:
    """The FROM clause of a user listing (as ``u``) and its parameters: every user, or
    those in ``group``, whose key starts with ``email_key_prefix``, whose ``name_key``
    holds ``name_key_part`` (each given filter applies)."""
    sql, conditions, params = "FROM users u", [], []
    if group is not None:
        sql += " JOIN group_members m ON m.email_key = u.email_key"
        conditions.append("m.group_name = ?")
        params.append(group)
    if email_key_prefix is not None:
        conditions.append("u.email_key LIKE ? ESCAPE '\\'")
        params.append(_like_escape(email_key_prefix) + "%")
    if name_key_part is not None:
        conditions.append("u.name_key LIKE ? ESCAPE '\\'")
        params.append("%" + _like_escape(name_key_part) + "%")
    if conditions:
        sql += " WHERE " + " AND ".join(conditions)
    return sql, tuple(params)


class UserTables:
    """Reads and writes of the user directory's tables (``store.users``)."""

    def __init__(self, db: StoreDB) -> None:
        self._db = db

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        rows: list[Any] = self._db.execute(sql, params).fetchall()
        return rows

    # -- users -------------------------------------------------------------------------

    def count_users(
        self,
        *,
        group: str | None = None,
        email_key_prefix: str | None = None,
        name_key_part: str | None = None,
    ) -> int:
        """How many users match (see ``user_rows``)."""
        source, params = _matching(group, email_key_prefix, name_key_part)
        return int(self._rows(f"SELECT COUNT(*) {source}", params)[0][0])

    def user_rows(
        self,
        *,
        limit: int,
        offset: int = 0,
        group: str | None = None,
        email_key_prefix: str | None = None,
        name_key_part: str | None = None,
    ) -> list[Any]:
        """One page of ``users`` rows in ``email_key`` order: all, or the members of
        ``group``, or those whose email key starts with ``email_key_prefix``, or whose
        ``name_key`` contains ``name_key_part`` (matched literally: % and _ are not
        wildcards)."""
        source, params = _matching(group, email_key_prefix, name_key_part)
        return self._rows(
            f"SELECT u.* {source} ORDER BY u.email_key LIMIT ? OFFSET ?", (*params, limit, offset)
        )

    def user_row(self, email_key: str) -> Any | None:
        rows = self._rows("SELECT * FROM users WHERE email_key = ?", (email_key,))
        return rows[0] if rows else None

    def user_exists(self, email_key: str) -> bool:
        return bool(self._rows("SELECT 1 FROM users WHERE email_key = ?", (email_key,)))

    def groups_of(self, email_keys: Iterable[str]) -> dict[str, list[str]]:
        """Each given user's group names, in name order."""
        groups: dict[str, list[str]] = {key: [] for key in email_keys}
        if groups:
            marks = ", ".join("?" for _ in groups)
            for row in self._rows(
                f"SELECT email_key, group_name FROM group_members WHERE email_key IN ({marks}) "
                "ORDER BY group_name",
                tuple(groups),
            ):
                groups[row["email_key"]].append(row["group_name"])
        return groups

    def insert_user(
        self,
        email_key: str,
        email: str,
        name: str,
        name_key: str,
        password_hash: str | None,
        attributes: str,
        created_at: str,
    ) -> None:
        self._db.write(
            "INSERT INTO users (email_key, email, name, name_key, password_hash, "
            "attributes, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (email_key, email, name, name_key, password_hash, attributes, created_at, created_at),
        )

    def update_user(self, email_key: str, changes: Mapping[str, Any]) -> None:
        """Set ``changes`` (column to value) on one user; a new ``email_key`` carries the
        user's groups and reset tokens with it."""
        unknown = set(changes) - _CHANGEABLE
        if unknown or not changes:
            raise ValueError(f"update_user: columns {sorted(unknown)} of {sorted(changes)}")
        assignments = ", ".join(f"{column} = ?" for column in changes)
        self._db.write(
            f"UPDATE users SET {assignments} WHERE email_key = ?", (*changes.values(), email_key)
        )

    def delete_user(self, email_key: str) -> None:
        """The user, their group memberships and their reset tokens."""
        self._db.write("DELETE FROM group_members WHERE email_key = ?", (email_key,))
        self._db.write("DELETE FROM password_resets WHERE email_key = ?", (email_key,))
        self._db.write("DELETE FROM users WHERE email_key = ?", (email_key,))

    # -- groups ------------------------------------------------------------------------

    def count_groups(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM user_groups")[0][0])

    def group_rows(self, *, limit: int, offset: int = 0) -> list[Any]:
        """One page of groups in name order: name, description, created_at, and
        ``users``, the number of members."""
        return self._rows(
            "SELECT g.name, g.description, g.created_at, COUNT(m.email_key) AS users "
            "FROM user_groups g LEFT JOIN group_members m ON m.group_name = g.name "
            "GROUP BY g.name, g.description, g.created_at ORDER BY g.name LIMIT ? OFFSET ?",
            (limit, offset),
        )

    def group_exists(self, name: str) -> bool:
        return bool(self._rows("SELECT 1 FROM user_groups WHERE name = ?", (name,)))

    def insert_group(self, name: str, description: str, created_at: str) -> None:
        self._db.write(
            "INSERT INTO user_groups (name, description, created_at) VALUES (?, ?, ?)",
            (name, description, created_at),
        )

    def delete_group(self, name: str) -> None:
        """The group and its memberships (not its members)."""
        self._db.write("DELETE FROM group_members WHERE group_name = ?", (name,))
        self._db.write("DELETE FROM user_groups WHERE name = ?", (name,))

    def add_member(self, group: str, email_key: str) -> bool:
        """Put the user in the group; False if they were in it already."""
        cursor = self._db.write(
            "INSERT INTO group_members (group_name, email_key) VALUES (?, ?) "
            "ON CONFLICT (group_name, email_key) DO NOTHING",
            (group, email_key),
        )
        return bool(cursor.rowcount > 0)

    def remove_member(self, group: str, email_key: str) -> bool:
        """Take the user out of the group; False if they were not in it."""
        cursor = self._db.write(
            "DELETE FROM group_members WHERE group_name = ? AND email_key = ?", (group, email_key)
        )
        return bool(cursor.rowcount > 0)

    # -- password resets ---------------------------------------------------------------

    def reset_expiry(self, token_hash: str, email_key: str) -> float | None:
        """When the user's reset token with this hash expires (epoch seconds), if it exists."""
        rows = self._rows(
            "SELECT expires_at FROM password_resets WHERE token_hash = ? AND email_key = ?",
            (token_hash, email_key),
        )
        return float(rows[0][0]) if rows else None

    def insert_reset(
        self, token_hash: str, email_key: str, expires_at: float, created_at: str
    ) -> None:
        self._db.write(
            "INSERT INTO password_resets (token_hash, email_key, expires_at, created_at) "
            "VALUES (?, ?, ?, ?)",
            (token_hash, email_key, expires_at, created_at),
        )

    def delete_resets(self, email_key: str, *, expired_before: float | None = None) -> None:
        """The user's reset tokens, and with ``expired_before`` everyone's that expire
        before it (epoch seconds)."""
        if expired_before is None:
            self._db.write("DELETE FROM password_resets WHERE email_key = ?", (email_key,))
        else:
            self._db.write(
                "DELETE FROM password_resets WHERE email_key = ? OR expires_at < ?",
                (email_key, expired_before),
            )
