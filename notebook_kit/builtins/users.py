"""The execution environment's user directory: users, groups, passwords, reset tokens.

Kept in the workspace store (tables ``users``, ``user_groups``, ``group_members``,
``password_resets``). Rules:

- An email is unique case-insensitively: ``Ann@X.org`` and ``ann@x.org`` are one user.
  It is stored as first given and looked up by its case-folded form.
- Passwords are stored only as salted ``hashlib.scrypt`` hashes and never returned.
- A reset token is 32 random bytes (URL-safe text), stored only as its SHA-256, valid
  once and until it expires.
- Lists are paged: ``option = {"offset": 0, "limit": 100}`` (limit 1-1000) and answer
  ``{"users"|"groups": [...], "total": n, "offset": o, "limit": l}``.
- ``listUsersByEmail`` matches a case-insensitive *prefix* of the email,
  ``listUsersByName`` a case-insensitive *substring* of the name.

The tables and their SQL are the store's (``store.users``); a change to users runs in
the store's ``transaction()``, like every other change to the workspace.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..domain.clock import iso_time, now
from ..errors import BuiltinError
from ..store.store import Store
from .passwords import hash_password, token_digest, verify_password
from .user_fields import (
    MAX_LIMIT,
    check_attributes,
    check_email,
    check_emails,
    check_group_name,
    check_paging,
    check_param,
    check_password,
    check_text,
)

__all__ = ["UserDirectory"]

_RESET_DEFAULT, _RESET_MAX = 3600, 7 * 24 * 3600
_RESET_SUBJECT = "Password reset"
_RESET_TEXT = (
    "A password reset was asked for {email}.\n\nReset token: {token}\n\n"
    "It can be used once, until {expiresAt}. If you did not ask for it, ignore this mail.\n"
)

Notify = Callable[[str, str, str], bool]


class UserDirectory:
    """Users and groups of one workspace. ``notify(to, subject, text)`` sends a mail and
    returns True, or returns False when mail is not configured."""

    def __init__(self, store: Store, notify: Notify | None = None) -> None:
        self.store = store
        self._notify = notify

    # -- reading -----------------------------------------------------------------------

    def _users(self, option: Any, **matching: str) -> dict[str, Any]:
        """One page of the users that ``matching`` (see ``UserTables.user_rows``) selects."""
        offset, limit = check_paging(option)
        tables = self.store.users
        total = tables.count_users(**matching)
        rows = tables.user_rows(limit=limit, offset=offset, **matching)
        groups = tables.groups_of(r["email_key"] for r in rows)
        users = [self._user_dict(r, groups[r["email_key"]]) for r in rows]
        return {"users": users, "total": total, "offset": offset, "limit": limit}

    @staticmethod
    def _user_dict(row: Any, groups: list[str]) -> dict[str, Any]:
        return {
            "email": row["email"],
            "name": row["name"],
            "groups": groups,
            "attributes": json.loads(row["attributes"]),
            "hasPassword": row["password_hash"] is not None,
            "createdAt": row["created_at"],
            "updatedAt": row["updated_at"],
        }

    def _require_user(self, email: Any) -> Any:
        row = self.store.users.user_row(check_email(email).casefold())
        if row is None:
            raise BuiltinError(f"no user with email {email!r}")
        return row

    def _require_group(self, name: Any) -> str:
        name = check_group_name(name)
        if not self.store.users.group_exists(name):
            raise BuiltinError(f"no group {name!r}")
        return name

    def get_user(self, email: Any) -> dict[str, Any]:
        row = self._require_user(email)
        key = row["email_key"]
        return self._user_dict(row, self.store.users.groups_of([key])[key])

    def get_users(self, group_name: str | None = None, option: Any = None) -> dict[str, Any]:
        if group_name is None:
            return self._users(option)
        return self._users(option, group=self._require_group(group_name))

    def by_email(self, prefix: Any, option: Any = None) -> dict[str, Any]:
        needle = check_text(prefix, "email", 254).strip().casefold()
        return self._users(option, email_key_prefix=needle)

    def by_name(self, part: Any, option: Any = None) -> dict[str, Any]:
        needle = check_text(part, "name", 200).casefold()
        return self._users(option, name_key_part=needle)

    def get_groups(self, option: Any = None) -> dict[str, Any]:
        offset, limit = check_paging(option)
        total = self.store.users.count_groups()
        rows = self.store.users.group_rows(limit=limit, offset=offset)
        groups = [
            {
                "name": r["name"],
                "description": r["description"],
                "userCount": r["users"],
                "createdAt": r["created_at"],
            }
            for r in rows
        ]
        return {"groups": groups, "total": total, "offset": offset, "limit": limit}

    def verify_password(self, email: Any, password: Any) -> bool:
        row = self.store.users.user_row(check_email(email).casefold())
        if row is None or not isinstance(password, str):
            return False
        return verify_password(password, row["password_hash"])

    # -- changing ----------------------------------------------------------------------

    def create_user(self, param: Any) -> dict[str, Any]:
        param = check_param(param, "createUser")
        email = check_email(param.get("email"))
        name = check_text(param.get("name", ""), "name", 200)
        password = param.get("password")
        hashed = hash_password(check_password(password)) if password is not None else None
        attributes = check_attributes(param.get("attributes", {}))
        groups = param.get("groups", [])
        if not isinstance(groups, list):
            raise BuiltinError("groups must be a list of group names")
        stamp = now()
        tables = self.store.users
        with self.store.transaction():
            key = email.casefold()
            if tables.user_exists(key):
                raise BuiltinError(f"a user with email {email!r} already exists")
            checked = [self._require_group(g) for g in groups]
            tables.insert_user(key, email, name, name.casefold(), hashed, attributes, stamp)
            for group in dict.fromkeys(checked):
                tables.add_member(group, key)
        return self.get_user(email)

    def update_user(self, param: Any) -> dict[str, Any]:
        param = check_param(param, "updateUser")
        changes: dict[str, Any] = {}
        if "name" in param:
            changes["name"] = check_text(param["name"], "name", 200)
            changes["name_key"] = changes["name"].casefold()
        if "attributes" in param:
            changes["attributes"] = check_attributes(param["attributes"])
        if param.get("password") is not None:
            changes["password_hash"] = hash_password(check_password(param["password"]))
        new_email = param.get("newEmail")
        if new_email is not None:
            changes["email"] = check_email(new_email)
            changes["email_key"] = changes["email"].casefold()
        with self.store.transaction():
            row = self._require_user(param.get("email"))
            if (
                "email_key" in changes
                and changes["email_key"] != row["email_key"]
                and self.store.users.user_exists(changes["email_key"])
            ):
                raise BuiltinError(f"a user with email {changes['email']!r} already exists")
            changes["updated_at"] = now()
            self.store.users.update_user(row["email_key"], changes)
        return self.get_user(changes.get("email", row["email"]))

    def delete_user(self, email: Any) -> dict[str, Any]:
        with self.store.transaction():
            row = self._require_user(email)
            self.store.users.delete_user(row["email_key"])
        return {"email": row["email"], "deleted": True}

    def create_group(self, param: Any) -> dict[str, Any]:
        param = check_param(param, "createGroup")
        name = check_group_name(param.get("name"))
        description = check_text(param.get("description", ""), "description", 1000)
        stamp = now()
        with self.store.transaction():
            if self.store.users.group_exists(name):
                raise BuiltinError(f"group {name!r} already exists")
            self.store.users.insert_group(name, description, stamp)
        return {"name": name, "description": description, "userCount": 0, "createdAt": stamp}

    def delete_group(self, name: Any) -> dict[str, Any]:
        with self.store.transaction():
            group = self._require_group(name)
            self.store.users.delete_group(group)
        return {"name": group, "deleted": True}

    def add_users(self, param: Any) -> dict[str, Any]:
        param = check_param(param, "addUsers")
        keys = check_emails(param)
        added = []
        with self.store.transaction():
            group = self._require_group(param.get("groupName"))
            rows = [self._require_user(k) for k in keys]
            for row in rows:
                if self.store.users.add_member(group, row["email_key"]):
                    added.append(row["email"])
        return {"groupName": group, "added": added}

    def remove_users(self, param: Any) -> dict[str, Any]:
        param = check_param(param, "removeUsers")
        keys = check_emails(param)
        removed = []
        with self.store.transaction():
            group = self._require_group(param.get("groupName"))
            rows = [self._require_user(k) for k in keys]
            for row in rows:
                if self.store.users.remove_member(group, row["email_key"]):
                    removed.append(row["email"])
        return {"groupName": group, "removed": removed}

    # -- password resets ---------------------------------------------------------------

    def reset_password(self, param: Any) -> dict[str, Any]:
        param = check_param(param, "resetPassword")
        if "token" in param:
            return self._complete_reset(param)
        return self._issue_reset(param)

    def _issue_reset(self, param: Mapping[str, Any]) -> dict[str, Any]:
        lifetime = param.get("expiresIn", _RESET_DEFAULT)
        if isinstance(lifetime, bool) or not isinstance(lifetime, int) or lifetime <= 0:
            raise BuiltinError("expiresIn must be a whole number of seconds > 0")
        lifetime = min(lifetime, _RESET_MAX)
        subject = check_text(param.get("subject", _RESET_SUBJECT), "subject", 200)
        template = param.get("text", _RESET_TEXT)
        if not isinstance(template, str) or "{token}" not in template:
            raise BuiltinError("text must be mail text containing {token}")
        token = secrets.token_urlsafe(32)
        expires = time.time() + lifetime
        with self.store.transaction():
            row = self._require_user(param.get("email"))
            key = row["email_key"]
            self.store.users.delete_resets(key, expired_before=time.time())
            self.store.users.insert_reset(token_digest(token), key, expires, now())
        answer: dict[str, Any] = {"email": row["email"], "expiresAt": iso_time(expires)}
        values = {"{email}": row["email"], "{token}": token, "{expiresAt}": answer["expiresAt"]}
        text = template
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        mailed = self._notify(row["email"], subject, text) if self._notify else False
        answer["mailed"] = mailed
        if not mailed:  # no mail server: the action delivers the token its own way
            answer["token"] = token
        return answer

    def _complete_reset(self, param: Mapping[str, Any]) -> dict[str, Any]:
        token = param.get("token")
        password = check_password(param.get("password"))
        if not isinstance(token, str) or not token:
            raise BuiltinError("token must be the reset token text")
        hashed = hash_password(password)
        with self.store.transaction():
            row = self._require_user(param.get("email"))
            key = row["email_key"]
            expires = self.store.users.reset_expiry(token_digest(token), key)
            if expires is None or expires < time.time():
                raise BuiltinError("the reset token is invalid, used or expired")
            self.store.users.delete_resets(key)
            self.store.users.update_user(key, {"password_hash": hashed, "updated_at": now()})
        return {"email": row["email"], "reset": True}

    # -- whole-directory views ---------------------------------------------------------

    def all_users(self) -> list[dict[str, Any]]:
        """Every user (unpaged), for the pandas view."""
        users: list[dict[str, Any]] = []
        offset = 0
        while True:
            page = self.get_users(None, {"offset": offset, "limit": MAX_LIMIT})
            users.extend(page["users"])
            offset += MAX_LIMIT
            if offset >= page["total"]:
                return users

    def all_groups(self) -> list[dict[str, Any]]:
        """Every group (unpaged), for the pandas view."""
        groups: list[dict[str, Any]] = []
        offset = 0
        while True:
            page = self.get_groups({"offset": offset, "limit": MAX_LIMIT})
            groups.extend(page["groups"])
            offset += MAX_LIMIT
            if offset >= page["total"]:
                return groups
