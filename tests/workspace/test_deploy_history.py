"""Deployment history (issue 10): content-addressed snapshots, retention, rollback within
what is kept, and deploys that publish what is saved when they commit."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from notebook_kit.domain.models import Stage
from notebook_kit.errors import NotFoundError, ValidationError
from notebook_kit.store import Store
from notebook_kit.store.schema import MIGRATIONS
from notebook_kit.store.snapshots import decode_ids, encode_ids
from notebook_kit.workspace.workspace import Workspace

APP = "hist"


def make_app(ws: Workspace, count: int) -> None:
    ws.create_application(APP)
    for n in range(count):
        ws.create(
            APP,
            f"d{n}",
            label=f"d{n}",
            method="GET",
            resource=f"r{n}",
            action=f"res.body = {{'n': {n}}}",
            requires_auth=False,
        )


def rows(ws: Workspace, table: str) -> int:
    with sqlite3.connect(ws.store.path) as conn:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


@pytest.mark.parametrize(
    "ids",
    [[], [7], [1, 2, 3], [3, 4, 5, 9], [1, 2, 10, 3, 4], [5, 4, 3], list(range(1, 10_001))],
)
def test_version_ranges_round_trip(ids: list[int]) -> None:
    assert decode_ids(encode_ids(ids)) == ids


def test_version_ranges_are_short_for_a_redeploy_with_one_change() -> None:
    ids = [*range(1, 5000), 10_001, *range(5001, 10_001)]
    assert encode_ids(ids) == "1-4999,10001,5001-10000"


def test_redeploy_with_one_change_adds_one_version(workspace: Workspace) -> None:
    make_app(workspace, 20)
    workspace.deploy(APP, "dev")
    assert rows(workspace, "definition_versions") == 20
    workspace.edit(APP, "d7", action="res.body = {'n': 'seven'}")
    second = workspace.deploy(APP, "dev")
    assert rows(workspace, "definition_versions") == 21
    workspace.deploy(APP, "prod")  # the same versions on another stage: nothing new
    assert rows(workspace, "definition_versions") == 21
    found = workspace.store.get_deployment(second.id)
    assert found is not None
    snapshot = found[1]
    assert snapshot["application"]["id"] == APP
    assert [d["id"] for d in snapshot["definitions"]] == [
        d.id for d in workspace.store.list_definitions(APP)
    ]
    seven = next(d for d in snapshot["definitions"] if d["id"] == "d7")
    assert seven["action"] == "res.body = {'n': 'seven'}"
    with sqlite3.connect(workspace.store.path) as conn:
        text = conn.execute("SELECT snapshot FROM deployments WHERE id = ?", (second.id,))
        assert "definitions" not in json.loads(text.fetchone()[0])  # stored once, elsewhere


def test_rollback_serves_the_earlier_versions(workspace: Workspace) -> None:
    make_app(workspace, 3)
    workspace.deploy(APP, "dev")
    workspace.edit(APP, "d1", action="res.body = 'new'")
    workspace.deploy(APP, "dev")
    workspace.rollback(APP, "dev")
    live = {d.id: d.action for d in workspace.live("dev")[APP]}
    assert live["d1"] == "res.body = {'n': 1}"


def test_retention_keeps_the_newest_and_the_live_one(workspace: Workspace) -> None:
    make_app(workspace, 2)
    workspace.set_setting("deployments_kept", "3")
    first = workspace.deploy(APP, "dev")
    for n in range(5):
        workspace.edit(APP, "d0", action=f"res.body = {n}")
        workspace.deploy(APP, "dev")
    dev = [d for d in workspace.deployments(APP) if d.stage == Stage.DEV]
    assert len(dev) == 3
    # Versions only the pruned deployments used are gone: 2 kept (d1 + 3 of d0) ...
    assert rows(workspace, "definition_versions") == 4
    with pytest.raises(NotFoundError, match=r"pruned.*deployments_kept.*newest 3"):
        workspace.rollback(APP, "dev", to=first.id)
    # Rollback works within what is kept; pruning never takes the live deployment.
    oldest_kept = dev[0]
    workspace.rollback(APP, "dev", to=oldest_kept.id)
    live = {d.id: d.action for d in workspace.live("dev")[APP]}
    assert live["d0"] == "res.body = 2"
    with workspace.store.transaction():
        assert workspace.store.prune_deployments(APP, Stage.DEV, 1) == 1
    ids = [d.id for d in workspace.deployments(APP) if d.stage == Stage.DEV]
    assert ids == [oldest_kept.id, dev[-1].id]  # the newest, and the live one
    assert {d.id: d.action for d in workspace.live("dev")[APP]} == live


def test_retention_is_per_stage(workspace: Workspace) -> None:
    make_app(workspace, 1)
    workspace.set_setting("deployments_kept", "1")
    workspace.deploy(APP, "prod")
    for _ in range(3):
        workspace.deploy(APP, "dev")
    stages = [d.stage for d in workspace.deployments(APP)]
    assert stages.count(Stage.PROD) == 1 and stages.count(Stage.DEV) == 1


@pytest.mark.parametrize("value", ["0", "-3", "many", "1.5"])
def test_deployments_kept_must_be_a_positive_whole_number(workspace: Workspace, value: str) -> None:
    with pytest.raises(ValidationError, match="deployments_kept"):
        workspace.set_setting("deployments_kept", value)
    assert workspace.setting("deployments_kept") == 50


def test_migration_moves_old_snapshots_into_versions(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path)
    upto = MIGRATIONS.index(next(m for m in MIGRATIONS if "definition_versions" in str(m)))
    for migration in MIGRATIONS[:upto]:
        conn.executescript(str(migration))
    definition = {"app": "a", "id": "x", "method": "GET", "resource": "x", "action": ""}
    old = [
        {"format": 1, "application": {"id": "a"}, "definitions": [definition]},
        {"format": 1, "application": {"id": "a"}, "definitions": [definition, {"id": "y"}]},
    ]
    for snapshot in old:
        conn.execute(
            "INSERT INTO deployments (app_id, stage, deployed_at, host, snapshot) "
            "VALUES ('a', 'dev', 't', 'h', ?)",
            (json.dumps(snapshot),),
        )
    conn.execute(f"PRAGMA user_version = {upto}")
    conn.commit()
    conn.close()
    store = Store(path)
    for number, snapshot in enumerate(old, start=1):
        found = store.get_deployment(number)
        assert found is not None and found[1] == snapshot
    with sqlite3.connect(path) as check:
        assert check.execute("SELECT COUNT(*) FROM definition_versions").fetchone()[0] == 2


# Deploys never go backwards: tests/store/test_store_contract.py runs three deploying processes
# against a running server on both stores.
