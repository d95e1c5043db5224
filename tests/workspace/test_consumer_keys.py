"""``ws.consumers`` on SQLite and PostgreSQL: create, list, add and revoke keys (two-key
rotation), delete, the built-in stage consumers, every change bumping the generation,
refusals that change nothing, and usage rows."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from notebook_kit.domain.consumers import key_digest
from notebook_kit.errors import ConflictError, NotFoundError, ValidationError
from notebook_kit.workspace.workspace import Workspace


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest) -> str:
    """ "" (the SQLite file in the workspace) or a new PostgreSQL store's URL."""
    if request.param == "sqlite":
        return ""
    return str(request.getfixturevalue("fresh_database"))


@pytest.fixture
def ws(tmp_path: Path, store_url: str) -> Workspace:
    workspace = Workspace(tmp_path / "home", store=store_url)
    workspace.create_application("shop")
    workspace.create_application("blog")
    return workspace


def _state(ws: Workspace) -> Any:
    """Everything a consumer command may change."""
    return (
        [c.to_dict() for c in ws.consumers.list()],
        ws.store.consumers.callers(),
        ws.store.generation(),
    )


def _digests(ws: Workspace, name: str) -> set[str]:
    return {row[0] for row in ws.store.consumers.callers() if row[1] == name}


def test_create_returns_the_key_once_and_stores_its_digest(ws: Workspace) -> None:
    before = ws.store.generation()
    new = ws.consumers.create(
        "alice", apps=["shop"], stages=["dev"], rate="10/s", burst=3, quota="100/day"
    )
    assert set(new) == {"name", "key", "prefix", "expires_at"}
    assert new["name"] == "alice" and new["key"].startswith(new["prefix"])
    assert new["expires_at"] is None
    assert ws.store.generation() == before + 1
    assert _digests(ws, "alice") == {key_digest(new["key"])}
    alice = ws.consumers.get("alice")
    assert (alice.apps, alice.stages, alice.builtin) == (("shop",), ("dev",), False)
    assert (alice.rate.text(), alice.rate.burst, alice.quota.text()) == ("10/s", 3, "100/day")  # type: ignore[union-attr]
    assert [k.prefix for k in alice.keys] == [new["prefix"]]
    assert alice.keys[0].last_used_at is None and alice.keys[0].created_at
    assert new["key"] not in str(alice.to_dict())


def test_list_puts_the_builtin_stage_consumers_first(ws: Workspace) -> None:
    ws.consumers.create("zed")
    ws.consumers.create("bob", stages="prod")
    listed = ws.consumers.list()
    assert [c.name for c in listed] == ["stage:dev", "stage:prod", "bob", "zed"]
    stage_keys = ws.keys()
    for builtin in listed[:2]:
        stage = builtin.name.split(":")[1]
        assert builtin.builtin and builtin.stages == (stage,) and not builtin.limited
        assert stage_keys[stage].startswith(builtin.keys[0].prefix)  # type: ignore[index]
    assert ws.consumers.get("stage:prod").builtin


def test_expiring_key(ws: Workspace) -> None:
    new = ws.consumers.create("alice", expires="2099-01-31")
    assert new["expires_at"] == "2099-01-31T00:00:00Z"
    assert ws.consumers.get("alice").keys[0].to_dict()["expires_at"] == "2099-01-31T00:00:00Z"
    row = next(r for r in ws.store.consumers.callers() if r[1] == "alice")
    assert (
        row[4] == datetime(2099, 1, 31, tzinfo=UTC).timestamp()
    )  # what the servers compare with the clock


def test_two_key_rotation(ws: Workspace) -> None:
    first = ws.consumers.create("alice")
    generation = ws.store.generation()
    second = ws.consumers.add_key("alice", expires="30d")
    assert ws.store.generation() == generation + 1
    assert _digests(ws, "alice") == {key_digest(first["key"]), key_digest(second["key"])}
    assert second["expires_at"] is not None
    with pytest.raises(ConflictError, match="already has 2 keys: revoke one first"):
        ws.consumers.add_key("alice")
    assert ws.consumers.revoke_key("alice", first["prefix"]) == first["prefix"]
    assert ws.store.generation() == generation + 2
    assert _digests(ws, "alice") == {key_digest(second["key"])}
    third = ws.consumers.add_key("alice")  # room again
    assert len(ws.consumers.get("alice").keys) == 2
    assert ws.consumers.revoke_key("alice", second["key"])  # the whole key works too
    assert _digests(ws, "alice") == {key_digest(third["key"])}


def test_delete_removes_the_consumer_and_its_keys(ws: Workspace) -> None:
    ws.consumers.create("alice")
    ws.consumers.add_key("alice")
    generation = ws.store.generation()
    ws.consumers.delete("alice")
    assert ws.store.generation() == generation + 1
    assert _digests(ws, "alice") == set()
    assert [c.name for c in ws.consumers.list()] == ["stage:dev", "stage:prod"]
    with pytest.raises(NotFoundError, match="no consumer 'alice'"):
        ws.consumers.get("alice")
    ws.consumers.create("alice")  # the name is free again


def _create(ws: Workspace, **kwargs: Any) -> None:
    ws.consumers.create(kwargs.pop("name", "newbie"), **kwargs)


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (lambda ws: _create(ws, name="alice"), ConflictError, "already exists"),
        (lambda ws: _create(ws, name="bad name"), ValidationError, "consumer name"),
        (lambda ws: _create(ws, name="stage:dev"), ValidationError, "consumer name"),
        (lambda ws: _create(ws, apps=["nope"]), NotFoundError, "no application 'nope'"),
        (lambda ws: _create(ws, apps=["shop", "shop"]), ValidationError, "named twice"),
        (lambda ws: _create(ws, stages=["staging"]), ValidationError, "stage must be"),
        (lambda ws: _create(ws, rate="10/h"), ValidationError, "rate '10/h'"),
        (lambda ws: _create(ws, rate="10/s", burst=11), ValidationError, "burst 11"),
        (lambda ws: _create(ws, burst=2), ValidationError, "a burst needs a rate"),
        (lambda ws: _create(ws, quota="10/year"), ValidationError, "quota '10/year'"),
        (lambda ws: _create(ws, expires="2001-01-01"), ValidationError, "in the past"),
        (lambda ws: _create(ws, expires="soon"), ValidationError, "expiry 'soon'"),
        (lambda ws: ws.consumers.add_key("alice"), ConflictError, "already has 2 keys"),
        (lambda ws: ws.consumers.add_key("nobody"), NotFoundError, "no consumer"),
        (lambda ws: ws.consumers.add_key("alice", "0d"), ValidationError, "positive"),
        (lambda ws: ws.consumers.add_key("stage:dev"), ValidationError, "stage's own key"),
        (lambda ws: ws.consumers.revoke_key("alice", "nk_"), ValidationError, "more than one"),
        (lambda ws: ws.consumers.revoke_key("alice", "zz"), NotFoundError, "no key starting"),
        (lambda ws: ws.consumers.revoke_key("alice", ""), ValidationError, "start of the key"),
        (lambda ws: ws.consumers.revoke_key("nobody", "nk_"), NotFoundError, "no consumer"),
        (lambda ws: ws.consumers.revoke_key("stage:prod", "x"), ValidationError, "keys --rotate"),
        (lambda ws: ws.consumers.delete("nobody"), NotFoundError, "no consumer 'nobody'"),
        (lambda ws: ws.consumers.delete("stage:dev"), ValidationError, "stage's own key"),
        (lambda ws: ws.consumers.usage("nobody"), NotFoundError, "no consumer 'nobody'"),
    ],
)
def test_refusals_change_nothing(ws: Workspace, change: Any, error: Any, message: str) -> None:
    ws.consumers.create("alice", apps=["shop"], quota="5/day")
    ws.consumers.add_key("alice")
    before = _state(ws)
    with pytest.raises(error, match=message):
        change(ws)
    assert _state(ws) == before


def test_usage_rows_sum_days_and_show_the_current_quota(ws: Workspace) -> None:
    ws.consumers.create("alice", quota="100/day")
    ws.consumers.create("bob")
    with ws.store.transaction():
        ws.store.consumers.add_usage(
            [
                ("alice", "shop", "dev", "2026-01-01", 5, 1, 0),
                ("alice", "shop", "dev", "2026-01-02", 2, 0, 1),
                ("alice", "blog", "prod", "2026-01-02", 1, 0, 0),
                ("bob", "shop", "dev", "2026-01-02", 3, 3, 0),
                ("stage:dev", "shop", "dev", "2026-01-02", 9, 0, 0),
            ]
        )
        ws.store.consumers.add_usage([("alice", "shop", "dev", "2026-01-02", 1, 0, 0)])
        ws.store.consumers.take("alice", 7, time.time())
    rows = ws.consumers.usage()
    assert [(r["consumer"], r["application"], r["stage"]) for r in rows] == [
        ("alice", "blog", "prod"),
        ("alice", "shop", "dev"),
        ("bob", "shop", "dev"),
        ("stage:dev", "shop", "dev"),
    ]
    assert rows[1] == {
        "consumer": "alice",
        "application": "shop",
        "stage": "dev",
        "calls": 8,
        "4xx": 1,
        "5xx": 1,
        "quota_used": 7,
        "quota_left": 93,
    }
    assert (rows[2]["quota_used"], rows[2]["quota_left"]) == (None, None)
    assert [r["calls"] for r in ws.consumers.usage("bob")] == [3]
    assert ws.consumers.daily("alice") == [
        {"day": "2026-01-01", "calls": 5, "4xx": 1, "5xx": 0},
        {"day": "2026-01-02", "calls": 4, "4xx": 0, "5xx": 1},
    ]
    assert ws.consumers.quota_reset("bob") is None
    assert ws.consumers.quota_reset("alice").endswith("T00:00:00Z")  # type: ignore[union-attr]
