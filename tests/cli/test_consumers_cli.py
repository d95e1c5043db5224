"""``notebook-kit consumer ...`` and ``notebook-kit usage`` as a person types them: a key
printed once, lists and usage as text and JSON, and every refusal one line on stderr,
exit 1, with nothing changed in the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.processes import run_cli

from notebook_kit.domain.consumers import key_digest
from notebook_kit.workspace.workspace import Workspace


@pytest.fixture
def ws(home: Path) -> Workspace:
    workspace = Workspace(home)
    workspace.create_application("shop")
    return workspace


def _nk(ws: Workspace, *args: str) -> tuple[int, str, str]:
    result = run_cli(*args, home=ws.home)
    return result.returncode, result.stdout, result.stderr


def _state(ws: Workspace) -> Any:
    return (
        [c.to_dict() for c in ws.consumers.list()],
        ws.store.consumers.callers(),
        ws.store.generation(),
    )


def test_create_prints_the_key_once(ws: Workspace) -> None:
    code, out, err = _nk(
        ws, "consumer", "create", "alice", "--app", "shop", "--stage", "dev", "--rate",
        "10/s", "--burst", "3", "--quota", "1000/day", "--expires", "2099-01-31",
    )  # fmt: skip
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == (
        "created consumer alice: shop on dev; rate 10/s (burst 3), quota 1000/day; its key:"
    )
    key = lines[1]
    assert key.startswith("nk_") and len(key) == 43  # on a line of its own
    assert lines[2] == (
        "keep this key now: it will not be shown again; it expires 2099-01-31T00:00:00Z"
    )
    [row] = [r for r in ws.store.consumers.callers() if r[1] == "alice"]
    assert row[0] == key_digest(key)
    listed = _nk(ws, "consumer", "list")[1]
    assert key not in listed and key[:8] in listed


def test_create_and_key_add_as_json(ws: Workspace) -> None:
    code, out, _ = _nk(ws, "consumer", "create", "bob", "--json")
    assert code == 0
    made = json.loads(out)
    assert set(made) == {"name", "key", "prefix", "expires_at"}
    assert (made["name"], made["expires_at"]) == ("bob", None)
    assert made["key"].startswith(made["prefix"])
    code, out, _ = _nk(ws, "consumer", "key", "add", "bob", "--expires", "30d", "--json")
    assert code == 0
    second = json.loads(out)
    assert second["name"] == "bob" and second["expires_at"].endswith("Z")
    digests = {r[0] for r in ws.store.consumers.callers() if r[1] == "bob"}
    assert digests == {key_digest(made["key"]), key_digest(second["key"])}


def test_list_marks_builtins_and_shows_keys_by_prefix(ws: Workspace) -> None:
    first = ws.consumers.create("alice", apps="shop", rate="600/min", quota="5/week")
    code, out, _ = _nk(ws, "consumer", "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "APPS", "STAGES", "RATE", "QUOTA", "KEYS"]
    assert lines[1].startswith("stage:dev (built-in)") and " dev " in lines[1]
    assert lines[2].startswith("stage:prod (built-in)")
    assert lines[3].split()[:7] == [
        "alice",
        "shop",
        "dev,prod",
        "600/min",
        "burst",
        "600",
        "5/week",
    ]
    assert f"{first['prefix']}… (never used)" in lines[3]
    code, out, _ = _nk(ws, "consumer", "list", "--json")
    rows = json.loads(out)
    assert [(r["name"], r["builtin"]) for r in rows] == [
        ("stage:dev", True),
        ("stage:prod", True),
        ("alice", False),
    ]
    assert rows[2]["keys"][0]["prefix"] == first["prefix"] and first["key"] not in out


def test_rotation_revoke_and_delete(ws: Workspace) -> None:
    first = ws.consumers.create("alice")
    code, out, _ = _nk(ws, "consumer", "key", "add", "alice")
    assert code == 0
    lines = out.splitlines()
    second = lines[1]
    assert lines[0] == f"new key of consumer alice (prefix {second[:8]}):"
    assert lines[2] == "keep this key now: it will not be shown again"
    code, out, _ = _nk(ws, "consumer", "key", "revoke", "alice", first["prefix"])
    assert (code, out) == (0, f"revoked the key {first['prefix']}… of consumer alice\n")
    assert {r[0] for r in ws.store.consumers.callers()} == {key_digest(second)}
    code, out, _ = _nk(ws, "consumer", "delete", "alice")
    assert (code, out) == (0, "deleted consumer alice; its keys no longer work\n")
    assert ws.store.consumers.callers() == []


def test_usage_as_text_and_json(ws: Workspace) -> None:
    ws.consumers.create("alice", quota="10/day")
    ws.consumers.create("bob")
    with ws.store.transaction():
        ws.store.consumers.add_usage(
            [
                ("alice", "shop", "dev", "2026-01-02", 4, 1, 0),
                ("bob", "shop", "prod", "2026-01-02", 2, 0, 2),
            ]
        )
    code, out, _ = _nk(ws, "usage")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "CONSUMER", "APPLICATION", "STAGE", "CALLS", "4XX", "5XX", "QUOTA_USED", "QUOTA_LEFT",
    ]  # fmt: skip
    assert lines[1].split() == ["alice", "shop", "dev", "4", "1", "0", "0", "10"]
    assert lines[2].split() == ["bob", "shop", "prod", "2", "0", "2"]
    code, out, _ = _nk(ws, "usage", "--consumer", "bob", "--json")
    assert json.loads(out) == [
        {
            "consumer": "bob",
            "application": "shop",
            "stage": "prod",
            "calls": 2,
            "4xx": 0,
            "5xx": 2,
            "quota_used": None,
            "quota_left": None,
        }
    ]
    assert _nk(ws, "usage", "--consumer", "carol") == (1, "", "notebook-kit: no consumer 'carol'\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["consumer", "create", "alice"], "consumer 'alice' already exists"),
        (["consumer", "create", "x y"], "consumer name 'x y' is not valid"),
        (["consumer", "create", "n", "--app", "nope"], "no application 'nope'"),
        (["consumer", "create", "n", "--stage", "staging"], "stage must be 'dev' or 'prod'"),
        (["consumer", "create", "n", "--rate", "5/hour"], "rate '5/hour' is not valid"),
        (["consumer", "create", "n", "--rate", "5/s", "--burst", "x"], "burst 'x' is not valid"),
        (["consumer", "create", "n", "--rate", "5/s", "--burst", "6"], "burst 6 is not valid"),
        (["consumer", "create", "n", "--quota", "5/year"], "quota '5/year' is not valid"),
        (["consumer", "create", "n", "--expires", "2001-01-01"], "is in the past"),
        (["consumer", "create", "n", "--expires", "later"], "expiry 'later' is not valid"),
        (["consumer", "key", "add", "alice"], "consumer 'alice' already has 2 keys"),
        (["consumer", "key", "add", "nobody"], "no consumer 'nobody'"),
        (["consumer", "key", "add", "stage:dev"], "'stage:dev' is a stage's own key"),
        (["consumer", "key", "revoke", "alice", "nk_"], "'nk_' starts more than one key"),
        (["consumer", "key", "revoke", "alice", "zzz"], "has no key starting 'zzz'"),
        (["consumer", "key", "revoke", "stage:prod", "abc"], "keys --rotate prod"),
        (["consumer", "delete", "nobody"], "no consumer 'nobody'"),
        (["consumer", "delete", "stage:dev"], "'stage:dev' is a stage's own key"),
    ],
)
def test_refusals_are_one_line_and_change_nothing(
    ws: Workspace, args: list[str], message: str
) -> None:
    ws.consumers.create("alice")
    ws.consumers.add_key("alice")
    before = _state(ws)
    code, out, err = _nk(ws, *args)
    assert (code, out) == (1, "")
    assert err.startswith("notebook-kit: ") and err.count("\n") == 1 and message in err
    assert _state(ws) == before
