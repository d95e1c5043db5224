"""The user directory through ``fn``: users, groups, paging, search, passwords, resets."""

from __future__ import annotations

import re
import sqlite3
import time
from contextlib import closing
from typing import Any

import httpx
import pytest
from support.smtp import SmtpServer, smtp_server  # noqa: F401  (fixture)

from notebook_kit import Workspace
from notebook_kit.builtins.functions import Functions
from notebook_kit.errors import BuiltinError
from notebook_kit.runtime.process.handles import BackgroundServer


@pytest.fixture
def fn(workspace: Workspace) -> Functions:
    return workspace.action_env()["fn"]


def _store_rows(ws: Workspace, sql: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(ws.home / "workspace.sqlite3")) as conn:
        return conn.execute(sql).fetchall()


def test_create_user_returns_user_without_password(fn: Functions, workspace: Workspace) -> None:
    user = fn.createUser({"email": "Ann@Example.org", "name": "Ann Lee", "password": "pw-123456"})
    assert user["email"] == "Ann@Example.org"
    assert user["hasPassword"] is True
    assert "password" not in user and "passwordHash" not in user
    stored = _store_rows(workspace, "SELECT password_hash FROM users")[0][0]
    assert stored.startswith("scrypt$") and "pw-123456" not in stored


def test_same_password_gets_different_salted_hashes(fn: Functions, workspace: Workspace) -> None:
    fn.createUser({"email": "a@x.org", "password": "same-password"})
    fn.createUser({"email": "b@x.org", "password": "same-password"})
    hashes = [r[0] for r in _store_rows(workspace, "SELECT password_hash FROM users")]
    assert hashes[0] != hashes[1]
    assert fn.verifyPassword("A@X.org", "same-password") is True
    assert fn.verifyPassword("a@x.org", "wrong-password") is False
    assert fn.verifyPassword("nobody@x.org", "same-password") is False


@pytest.mark.parametrize("other", ["ann@example.org", "ANN@EXAMPLE.ORG", " Ann@example.org "])
def test_email_unique_case_insensitively(fn: Functions, other: str) -> None:
    fn.createUser({"email": "Ann@Example.org"})
    with pytest.raises(BuiltinError, match="already exists"):
        fn.createUser({"email": other})
    assert fn.getUsers()["total"] == 1


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ({"email": "not-an-email"}, "not a valid email"),
        ({"email": "a@b"}, "not a valid email"),
        ({"email": "a b@c.org"}, "not a valid email"),
        ({"email": "a@c.org\r\nBcc: x@y.org"}, "control characters"),
        ({"email": 42}, "must be text"),
        ({}, "must be text"),
        ({"email": "a@c.org", "password": "short"}, "8 to 1024"),
        ({"email": "a@c.org", "groups": ["missing"]}, "no group"),
        ({"email": "a@c.org", "attributes": {"x": object()}}, "JSON"),
    ],
)
def test_create_user_refuses_bad_input_and_changes_nothing(
    fn: Functions, param: dict[str, Any], message: str
) -> None:
    with pytest.raises(BuiltinError, match=message):
        fn.createUser(param)
    assert fn.getUsers()["total"] == 0


def test_create_user_with_non_dict_param_is_refused(fn: Functions) -> None:
    with pytest.raises(BuiltinError, match="dict"):
        fn.createUser("ann@example.org")  # type: ignore[arg-type]


def test_paging_gives_total_offset_limit(fn: Functions) -> None:
    for i in range(7):
        fn.createUser({"email": f"user{i}@x.org", "name": f"User {i}"})
    page = fn.getUsers(None, {"offset": 2, "limit": 3})
    assert [u["email"] for u in page["users"]] == ["user2@x.org", "user3@x.org", "user4@x.org"]
    assert (page["total"], page["offset"], page["limit"]) == (7, 2, 3)
    assert fn.getUsers(None, {"offset": 6})["users"][0]["email"] == "user6@x.org"
    assert fn.getUsers(None, {"offset": 50})["users"] == []


@pytest.mark.parametrize(
    "option",
    [{"limit": 0}, {"limit": 1001}, {"offset": -1}, {"limit": "5"}, {"offset": True}, "x"],
)
def test_bad_paging_options_are_refused(fn: Functions, option: Any) -> None:
    with pytest.raises(BuiltinError, match="option"):
        fn.getUsers(None, option)


def test_search_email_is_prefix_and_name_is_substring(fn: Functions) -> None:
    fn.createUser({"email": "ann.lee@x.org", "name": "Ann Lee"})
    fn.createUser({"email": "bob@x.org", "name": "Bob Annersen"})
    fn.createUser({"email": "carl@ann.org", "name": "Carl 100%_Real"})
    assert [u["email"] for u in fn.listUsersByEmail("ANN")["users"]] == ["ann.lee@x.org"]
    assert fn.listUsersByEmail("x.org")["total"] == 0  # a prefix, not a substring
    by_name = fn.listUsersByName("ann")
    assert [u["email"] for u in by_name["users"]] == ["ann.lee@x.org", "bob@x.org"]
    assert [u["email"] for u in fn.listUsersByName("%_")["users"]] == ["carl@ann.org"]
    assert fn.listUsersByName("_")["total"] == 1  # LIKE wildcards are literal
    assert fn.listUsersByName("ann", {"limit": 1})["total"] == 2


def test_groups_membership_and_paged_group_listing(fn: Functions) -> None:
    fn.createGroup({"name": "staff", "description": "Everyone"})
    fn.createGroup({"name": "admins"})
    fn.createUser({"email": "a@x.org", "groups": ["staff"]})
    fn.createUser({"email": "b@x.org"})
    assert fn.addUsers({"groupName": "staff", "emails": ["A@x.org", "b@x.org"]}) == {
        "groupName": "staff",
        "added": ["b@x.org"],
    }
    assert [u["email"] for u in fn.getUsers("staff")["users"]] == ["a@x.org", "b@x.org"]
    assert fn.getUsers("admins")["total"] == 0
    groups = fn.getGroups()
    assert [(g["name"], g["userCount"]) for g in groups["groups"]] == [("admins", 0), ("staff", 2)]
    assert fn.getGroups({"limit": 1})["groups"][0]["name"] == "admins"
    assert fn.removeUsers({"groupName": "staff", "emails": ["b@x.org"]})["removed"] == ["b@x.org"]
    assert fn.getUsers("staff")["total"] == 1
    assert fn.getUsers()["users"][0]["groups"] == ["staff"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda fn: fn.addUsers({"groupName": "staff", "emails": ["a@x.org", "no@x.org"]}),
            "no user",
        ),
        (lambda fn: fn.addUsers({"groupName": "nope", "emails": ["a@x.org"]}), "no group"),
        (lambda fn: fn.addUsers({"groupName": "staff", "emails": []}), "emails"),
        (lambda fn: fn.createGroup({"name": "staff"}), "already exists"),
        (lambda fn: fn.createGroup({"name": "bad name!"}), "group name"),
        (lambda fn: fn.getUsers("nope"), "no group"),
        (lambda fn: fn.deleteUser("no@x.org"), "no user"),
        (lambda fn: fn.updateUser({"email": "no@x.org", "name": "x"}), "no user"),
    ],
)
def test_group_refusals_change_nothing(fn: Functions, call: Any, message: str) -> None:
    fn.createGroup({"name": "staff"})
    fn.createUser({"email": "a@x.org"})
    with pytest.raises(BuiltinError, match=message):
        call(fn)
    assert fn.getUsers("staff")["total"] == 0
    assert fn.getGroups()["total"] == 1


def test_delete_user_removes_memberships_in_same_transaction(
    fn: Functions, workspace: Workspace
) -> None:
    fn.createGroup({"name": "staff"})
    fn.createUser({"email": "a@x.org", "groups": ["staff"]})
    fn.resetPassword({"email": "a@x.org"})
    assert fn.deleteUser("A@X.ORG") == {"email": "a@x.org", "deleted": True}
    assert _store_rows(workspace, "SELECT * FROM group_members") == []
    assert _store_rows(workspace, "SELECT * FROM password_resets") == []
    assert fn.getGroups()["groups"][0]["userCount"] == 0


def test_update_user_changes_name_email_and_password(fn: Functions) -> None:
    fn.createGroup({"name": "staff"})
    fn.createUser({"email": "a@x.org", "name": "A", "groups": ["staff"]})
    user = fn.updateUser(
        {"email": "a@x.org", "name": "Ann", "newEmail": "ann@x.org", "password": "new-pass-1"}
    )
    assert (user["email"], user["name"], user["groups"]) == ("ann@x.org", "Ann", ["staff"])
    assert fn.verifyPassword("ann@x.org", "new-pass-1")
    fn.createUser({"email": "b@x.org"})
    with pytest.raises(BuiltinError, match="already exists"):
        fn.updateUser({"email": "b@x.org", "newEmail": "ANN@x.org"})


def test_reset_token_is_one_time_and_stored_hashed(fn: Functions, workspace: Workspace) -> None:
    fn.createUser({"email": "a@x.org", "password": "old-password"})
    issued = fn.resetPassword({"email": "a@x.org"})
    assert issued["mailed"] is False and len(issued["token"]) >= 40
    assert issued["token"] not in str(_store_rows(workspace, "SELECT * FROM password_resets"))
    done = {"email": "a@x.org", "token": issued["token"], "password": "new-password"}
    assert fn.resetPassword(done) == {"email": "a@x.org", "reset": True}
    assert fn.verifyPassword("a@x.org", "new-password")
    with pytest.raises(BuiltinError, match="invalid, used or expired"):
        fn.resetPassword({**done, "password": "third-password"})
    assert fn.verifyPassword("a@x.org", "new-password")


def test_reset_token_expires_and_wrong_token_is_refused(
    fn: Functions, workspace: Workspace
) -> None:
    fn.createUser({"email": "a@x.org", "password": "old-password"})
    token = fn.resetPassword({"email": "a@x.org", "expiresIn": 1})["token"]
    with pytest.raises(BuiltinError, match="invalid"):
        fn.resetPassword({"email": "a@x.org", "token": token + "x", "password": "new-password"})
    with closing(sqlite3.connect(workspace.store.path)) as conn, conn:  # age it, not sleep
        conn.execute("UPDATE password_resets SET expires_at = ?", (time.time() - 1,))
    with pytest.raises(BuiltinError, match="expired"):
        fn.resetPassword({"email": "a@x.org", "token": token, "password": "new-password"})
    assert fn.verifyPassword("a@x.org", "old-password")


def test_reset_token_is_mailed_when_smtp_is_set(
    fn: Functions,
    workspace: Workspace,
    smtp_server: SmtpServer,  # noqa: F811
) -> None:
    smtp_server.settings(workspace)
    fn.createUser({"email": "a@x.org"})
    issued = fn.resetPassword(
        {"email": "a@x.org", "subject": "Your code", "text": "Go to https://app/reset?t={token}"}
    )
    assert issued["mailed"] is True and "token" not in issued
    [mail] = smtp_server.received
    assert mail.rcpt_tos == ["a@x.org"] and mail.message["Subject"] == "Your code"
    token = re.search(r"t=(\S+)", mail.message.get_content()).group(1)
    fn.resetPassword({"email": "a@x.org", "token": token, "password": "from-the-mail"})
    assert fn.verifyPassword("a@x.org", "from-the-mail")


def test_users_and_groups_frames(fn: Functions, workspace: Workspace) -> None:
    fn.createGroup({"name": "staff"})
    fn.createUser({"email": "a@x.org", "name": "A", "groups": ["staff"], "password": "pw-123456"})
    users = workspace.users_frame()
    assert list(users["email"]) == ["a@x.org"] and users["groups"][0] == ["staff"]
    assert "password" not in " ".join(users.columns).lower().replace("haspassword", "")
    assert list(workspace.groups_frame()["userCount"]) == [1]


def test_deployed_action_creates_and_lists_users_over_http(workspace: Workspace) -> None:
    workspace.create(
        "dir",
        "signup",
        label="sign up",
        method="POST",
        resource="users",
        requires_auth=False,
        action=(
            "import json\n"
            "try:\n"
            "    res.body = fn.createUser(json.loads(req.body))\n"
            "    res.statusCode = 201\n"
            "except fn.BuiltinError as exc:\n"
            "    res.statusCode, res.body = 400, {'message': str(exc)}\n"
        ),
    )
    workspace.create(
        "dir",
        "list",
        label="list",
        method="GET",
        resource="users",
        requires_auth=False,
        action="res.body = fn.listUsersByName(req.queryStringParameters.get('q', ''))",
    )
    workspace.create(
        "dir",
        "boom",
        label="uncaught",
        method="DELETE",
        resource="users",
        requires_auth=False,
        action="fn.deleteUser('nobody@x.org')",
    )
    workspace.deploy("dir", "dev")
    with BackgroundServer(workspace) as server, httpx.Client(base_url=server.url) as http:
        made = http.post("/dev/dir/users", json={"email": "ann@x.org", "name": "Ann"})
        again = http.post("/dev/dir/users", json={"email": "ANN@x.org"})
        listed = http.get("/dev/dir/users", params={"q": "AN"})
        boom = http.delete("/dev/dir/users")
    assert made.status_code == 201 and made.json()["email"] == "ann@x.org"
    assert again.status_code == 400 and "already exists" in again.json()["message"]
    assert listed.json()["total"] == 1
    assert boom.status_code == 500 and "BuiltinError" in boom.json()["error"]
