"""The Workspace facade: definitions, deploys and snapshots, rollback, quota, keys, sample."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from notebook_kit.domain.models import Constant, Stage
from notebook_kit.errors import (
    ActionSyntaxError,
    ConflictError,
    NotebookKitError,
    NotFoundError,
    QuotaExceededError,
    StoreError,
    ValidationError,
)
from notebook_kit.workspace.workspace import Workspace


def dump(ws: Workspace) -> list[str]:
    """The whole committed content of the workspace store, as SQL."""
    with closing(sqlite3.connect(ws.home / "workspace.sqlite3")) as conn:
        return list(conn.iterdump())


def add(ws: Workspace, app: str = "shop", api_id: str = "item", **overrides: Any) -> Any:
    values: dict[str, Any] = {
        "label": "Get item",
        "method": "GET",
        "resource": "items/{id}",
        "action": "res.body = {'id': req.pathParameters['id']}\n",
    }
    values.update(overrides)
    return ws.create(app, api_id, **values)


@pytest.fixture
def shop(sample_workspace: Workspace) -> Workspace:
    """The sample plus an application 'shop' with two definitions, deployed to dev."""
    add(sample_workspace, content_type="application/json")
    add(
        sample_workspace,
        api_id="order",
        label="Place ORDER",
        method="POST",
        resource="orders",
        constants=[Constant("GREETING", "String", "hi")],
    )
    sample_workspace.deploy("shop", "dev")
    return sample_workspace


# -- every refusal leaves the store as it was ----------------------------------------

Step = Callable[[Workspace], Any]


def _nothing(ws: Workspace) -> None:
    return None


def _add_duplicate_route(ws: Workspace) -> None:
    add(ws, api_id="item2", resource="/items/{id}/")


def _add_second_param_name(ws: Workspace) -> None:
    add(ws, api_id="item2", method="PUT", resource="items/{key}")


def _add_failing_functions(ws: Workspace) -> None:
    add(ws, api_id="boom", resource="boom", functions="raise RuntimeError('no db')\n")


def _other_stage_deployment(ws: Workspace) -> Any:
    prod = next(d for d in ws.deployments("restapi_sample") if d.stage == "prod")
    return ws.rollback("restapi_sample", "dev", to=prod.id)


# (name, setup, refused step, error class, words of the message)
REFUSALS: list[tuple[str, Step, Step, type[NotebookKitError], str]] = [
    ("create duplicate", _nothing, add, ConflictError, "already has a definition 'item'"),
    (
        "create bad resource",
        _nothing,
        lambda ws: add(ws, api_id="new", resource="a/{b"),
        ValidationError,
        "resource segment 2 '{b' has an unclosed brace",
    ),
    (
        "create bad id",
        _nothing,
        lambda ws: add(ws, api_id="no spaces"),
        ValidationError,
        "1 to 64 characters",
    ),
    (
        "create in new app with bad action",
        _nothing,
        lambda ws: add(ws, app="brand_new", action="x = 1\nif x\n    pass\n"),
        ActionSyntaxError,
        "action line 2",
    ),
    (
        "create bad functions",
        _nothing,
        lambda ws: add(ws, api_id="new", functions="def f(:\n"),
        ActionSyntaxError,
        "functions line 1",
    ),
    (
        "create yield in action",
        _nothing,
        lambda ws: add(ws, api_id="new", action="yield 1\n"),
        ActionSyntaxError,
        "cannot 'yield'",
    ),
    (
        "edit to existing id",
        _nothing,
        lambda ws: ws.edit("shop", "item", new_id="order"),
        ConflictError,
        "already has a definition 'order'",
    ),
    (
        "edit bad method",
        _nothing,
        lambda ws: ws.edit("shop", "item", method="PATCH"),
        ValidationError,
        "method 'PATCH'",
    ),
    (
        "edit bad action",
        _nothing,
        lambda ws: ws.edit("shop", "item", action="res.body = (\n"),
        ActionSyntaxError,
        "action line 1",
    ),
    (
        "edit missing definition",
        _nothing,
        lambda ws: ws.edit("shop", "nope", label="x"),
        NotFoundError,
        "no definition 'nope'",
    ),
    (
        "delete missing",
        _nothing,
        lambda ws: ws.delete("shop", "nope"),
        NotFoundError,
        "no definition",
    ),
    (
        "copy onto existing",
        _nothing,
        lambda ws: ws.copy("shop", "item", "shop"),
        ConflictError,
        "already has a definition 'item'",
    ),
    (
        "copy into bad app id",
        _nothing,
        lambda ws: ws.copy("shop", "item", "bad app"),
        ValidationError,
        "application ID 'bad app'",
    ),
    (
        "deploy route conflict",
        _add_duplicate_route,
        lambda ws: ws.deploy("shop", "dev"),
        ConflictError,
        "two definitions answer GET 'items/{id}'",
    ),
    (
        "deploy parameter name conflict",
        _add_second_param_name,
        lambda ws: ws.deploy("shop", "prod"),
        ConflictError,
        "one position takes one parameter name",
    ),
    (
        "deploy functions failing at load",
        _add_failing_functions,
        lambda ws: ws.deploy("shop", "dev"),
        ValidationError,
        "user functions of shop/boom fail to load: RuntimeError: no db",
    ),
    (
        "deploy unknown app",
        _nothing,
        lambda ws: ws.deploy("nope", "dev"),
        NotFoundError,
        "no application 'nope'",
    ),
    (
        "deploy bad stage",
        _nothing,
        lambda ws: ws.deploy("shop", "test"),
        ValidationError,
        "stage must be",
    ),
    (
        "undeploy not deployed",
        _nothing,
        lambda ws: ws.undeploy("shop", "prod"),
        NotFoundError,
        "not deployed to prod",
    ),
    (
        "rollback without earlier",
        _nothing,
        lambda ws: ws.rollback("shop", "dev"),
        NotFoundError,
        "no earlier deployment on dev",
    ),
    (
        "rollback to unknown id",
        _nothing,
        lambda ws: ws.rollback("shop", "dev", to=999),
        NotFoundError,
        "no deployment 999",
    ),
    (
        "rollback to other stage's deployment",
        _nothing,
        _other_stage_deployment,
        NotFoundError,
        "on dev",
    ),
    (
        "bad setting value",
        _nothing,
        lambda ws: ws.set_setting("resource_quota", "-1"),
        ValidationError,
        "setting resource_quota",
    ),
    (
        "unknown setting",
        _nothing,
        lambda ws: ws.set_setting("nope", "1"),
        ValidationError,
        "known settings",
    ),
    (
        "create existing application",
        _nothing,
        lambda ws: ws.create_application("shop"),
        ConflictError,
        "already exists",
    ),
]


@pytest.mark.parametrize(
    ("setup", "refused", "error", "message"),
    [r[1:] for r in REFUSALS],
    ids=[r[0] for r in REFUSALS],
)
def test_refusal_leaves_store_unchanged(
    shop: Workspace, setup: Step, refused: Step, error: type[NotebookKitError], message: str
) -> None:
    setup(shop)
    before, live_before = dump(shop), {s: shop.live(s) for s in Stage}
    with pytest.raises(error) as caught:
        refused(shop)
    assert message in str(caught.value)
    assert dump(shop) == before
    assert {s: shop.live(s) for s in Stage} == live_before


def test_action_syntax_error_carries_line(workspace: Workspace) -> None:
    with pytest.raises(ActionSyntaxError) as caught:
        add(workspace, action="a = 1\nb = 2\nif a\n    pass\n")
    assert caught.value.line == 3 and caught.value.field == "action"
    assert workspace.applications() == []


# -- definitions ---------------------------------------------------------------------


def test_create_makes_application_implicitly(workspace: Workspace) -> None:
    d = add(workspace)
    assert [a.id for a in workspace.applications()] == ["shop"]
    assert workspace.application("shop").type == "REST API"
    assert workspace.get("shop", "item") == d
    assert d.requires_auth is True


def test_edit_changes_id_and_keeps_created_at(shop: Workspace) -> None:
    before = shop.get("shop", "item")
    after = shop.edit("shop", "item", new_id="item_v2", label="Item v2")
    assert (after.id, after.label, after.created_at) == ("item_v2", "Item v2", before.created_at)
    assert after.updated_at >= before.updated_at
    with pytest.raises(NotFoundError):
        shop.get("shop", "item")
    assert shop.get("shop", "item_v2") == after


def test_edit_keeps_content_type_unless_given_and_clears_with_none(shop: Workspace) -> None:
    assert shop.edit("shop", "item", label="L").content_type == "application/json"
    assert shop.edit("shop", "item", content_type=None).content_type is None
    assert shop.get("shop", "item").content_type is None
    assert shop.edit("shop", "item", content_type="text/plain").content_type == "text/plain"


def test_edit_replaces_constants_and_auth(shop: Workspace) -> None:
    edited = shop.edit(
        "shop", "order", constants=[Constant("N", "Integer", 2)], requires_auth=False
    )
    assert edited.constants == (Constant("N", "Integer", 2),)
    assert shop.get("shop", "order").requires_auth is False


def test_delete_removes_definition_but_not_what_is_live(shop: Workspace) -> None:
    shop.delete("shop", "item")
    assert [d.id for d in shop.definitions("shop")] == ["order"]
    assert {d.id for d in shop.live("dev")["shop"]} == {"item", "order"}
    shop.deploy("shop", "dev")
    assert [d.id for d in shop.live("dev")["shop"]] == ["order"]


def test_copy_into_new_application_creates_it(shop: Workspace) -> None:
    copied = shop.copy("shop", "order", "backoffice")
    assert (copied.app, copied.id) == ("backoffice", "order")
    assert shop.application("backoffice").label == "backoffice"
    original = shop.get("shop", "order")
    assert copied.constants == original.constants and copied.action == original.action
    assert shop.copy("shop", "order", "backoffice", new_id="order2").id == "order2"


def test_copy_refused_when_source_missing(shop: Workspace) -> None:
    with pytest.raises(NotFoundError):
        shop.copy("shop", "nope", "other")
    with pytest.raises(NotFoundError):
        shop.application("other")


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("order", ["order"]),
        ("ORDER", ["order"]),
        ("get", ["item"]),
        ("place or", ["order"]),
        ("e", ["item", "order"]),
        ("nothing", []),
        (None, ["item", "order"]),
    ],
)
def test_definitions_filtered_by_label_case_insensitively(
    shop: Workspace, label: str | None, expected: list[str]
) -> None:
    assert sorted(d.id for d in shop.definitions("shop", label)) == expected


def test_definitions_of_unknown_app_refused(workspace: Workspace) -> None:
    with pytest.raises(NotFoundError, match="no application 'nope'"):
        workspace.definitions("nope")


def test_delete_application_removes_definitions_and_live(shop: Workspace) -> None:
    shop.delete_application("shop")
    assert "shop" not in shop.live("dev")
    assert [a.id for a in shop.applications()] == ["restapi_sample"]
    assert shop.store.list_definitions("shop") == []


# -- deploy, snapshots, undeploy, rollback -------------------------------------------


def test_deploy_snapshot_is_immutable(shop: Workspace) -> None:
    live = shop.live("dev")["shop"]
    shop.edit("shop", "item", action="res.body = 'changed'\n", resource="things/{id}")
    assert shop.live("dev")["shop"] == live
    assert shop.deployed_state(shop.get("shop", "item"), "dev") == "changed"
    assert shop.deployed_state(shop.get("shop", "order"), "dev") == "deployed"
    assert shop.deployed_state(shop.get("shop", "order"), "prod") == "not deployed"
    shop.deploy("shop", "dev")
    assert {d.resource for d in shop.live("dev")["shop"]} == {"things/{id}", "orders"}


def test_deploy_to_one_stage_leaves_the_other(shop: Workspace) -> None:
    assert "shop" not in shop.live("prod")
    shop.deploy("shop", "prod")
    assert shop.live("prod")["shop"] == shop.live("dev")["shop"]


def test_deploy_refused_when_application_empty(workspace: Workspace) -> None:
    workspace.create_application("empty")
    with pytest.raises(ValidationError, match="has no definitions to deploy"):
        workspace.deploy("empty", "dev")
    assert workspace.deployments() == []


def test_undeploy_removes_live_and_keeps_history(shop: Workspace) -> None:
    shop.undeploy("shop", "dev")
    assert "shop" not in shop.live("dev")
    history = shop.deployments("shop")
    assert len(history) == 1 and history[0].active is False


def test_rollback_defaults_to_the_one_before(shop: Workspace) -> None:
    first = shop.deployments("shop")[0]
    shop.edit("shop", "item", label="v2")
    second = shop.deploy("shop", "dev")
    assert {d.label for d in shop.live("dev")["shop"]} == {"v2", "Place ORDER"}
    rolled = shop.rollback("shop", "dev")
    assert rolled.id == first.id and rolled.active
    assert {d.label for d in shop.live("dev")["shop"]} == {"Get item", "Place ORDER"}
    active = {d.id: d.active for d in shop.deployments("shop")}
    assert active == {first.id: True, second.id: False}
    assert shop.rollback("shop", "dev", to=second.id).id == second.id
    assert {d.label for d in shop.live("dev")["shop"]} == {"v2", "Place ORDER"}


def test_rollback_after_undeploy_restores_latest(shop: Workspace) -> None:
    latest = shop.deploy("shop", "dev")
    shop.undeploy("shop", "dev")
    assert shop.rollback("shop", "dev").id == latest.id
    assert "shop" in shop.live("dev")


def test_deployments_history_records_stage_host_and_active(shop: Workspace) -> None:
    history = shop.deployments()
    assert [(d.app, str(d.stage)) for d in history] == [
        ("restapi_sample", "dev"),
        ("restapi_sample", "prod"),
        ("shop", "dev"),
    ]
    assert all(d.active and d.host and d.deployed_at.endswith("Z") for d in history)
    assert [d.app for d in shop.deployments("shop")] == ["shop"]


# -- resource counting and the quota ---------------------------------------------------


def test_resources_after_sample_total_5_with_4_for_the_app(sample_workspace: Workspace) -> None:
    expected = {"total": 5, "apps": {"restapi_sample": 4}}
    assert sample_workspace.resources() == {"dev": expected, "prod": expected}


def test_resources_follow_deploys_per_stage(shop: Workspace) -> None:
    # shop: /shop, /items, /{id}, /orders = 4
    assert shop.resources()["dev"] == {"total": 9, "apps": {"restapi_sample": 4, "shop": 4}}
    assert shop.resources()["prod"]["total"] == 5
    shop.undeploy("restapi_sample", "dev")
    assert shop.resources()["dev"] == {"total": 5, "apps": {"shop": 4}}


def test_quota_refuses_deploy_past_it_with_count_and_quota(sample_workspace: Workspace) -> None:
    ws = sample_workspace
    ws.set_setting("resource_quota", "7")
    add(ws, resource="a/b/c")  # shop would use 4: total 9
    before = dump(ws)
    with pytest.raises(QuotaExceededError) as caught:
        ws.deploy("shop", "dev")
    assert "would use 9 resources" in str(caught.value)
    assert "quota is 7" in str(caught.value)
    assert dump(ws) == before
    ws.edit("shop", "item", resource="a")  # total 7: exactly the quota is allowed
    ws.deploy("shop", "dev")
    assert ws.resources()["dev"]["total"] == 7


def test_quota_from_environment_wins(
    sample_workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTEBOOK_KIT_RESOURCE_QUOTA", "5")
    add(sample_workspace, resource="x")
    with pytest.raises(QuotaExceededError, match="would use 7 resources; the stage's quota is 5"):
        sample_workspace.deploy("shop", "prod")


def test_quota_refuses_rollback_past_it(shop: Workspace) -> None:
    shop.edit("shop", "item", resource="x")
    shop.deploy("shop", "dev")  # shop now 3: total 8
    shop.set_setting("resource_quota", "8")
    before = dump(shop)
    with pytest.raises(QuotaExceededError, match="would use 9 resources"):
        shop.rollback("shop", "dev")
    assert dump(shop) == before
    shop.set_setting("resource_quota", None)
    assert shop.setting("resource_quota") is None


# -- keys ------------------------------------------------------------------------------


def test_keys_are_40_alphanumerics_distinct_per_stage(workspace: Workspace) -> None:
    keys = workspace.keys()
    assert set(keys) == {"dev", "prod"}
    for key in keys.values():
        assert len(key) == 40 and key.isascii() and key.isalnum()
    assert keys["dev"] != keys["prod"]


def test_rotate_key_changes_only_that_stage(workspace: Workspace) -> None:
    before = workspace.keys()
    new = workspace.rotate_key("dev")
    after = workspace.keys()
    assert after == {"dev": new, "prod": before["prod"]}
    assert new != before["dev"] and len(new) == 40


# -- the sample --------------------------------------------------------------------------


def test_install_sample_is_idempotent(sample_workspace: Workspace) -> None:
    ws = sample_workspace
    definitions = [d.to_dict() for d in ws.definitions()]
    deployments = ws.deployments()
    before = dump(ws)
    ws.install_sample()
    assert [d.to_dict() for d in ws.definitions()] == definitions
    assert ws.deployments() == deployments
    assert dump(ws) == before
    rows = ws.database.query("SELECT id FROM employee ORDER BY id")
    assert [r["id"] for r in rows] == ["E001", "E002", "E003", "E004", "E005"]


def test_install_sample_restores_an_edited_sample(sample_workspace: Workspace) -> None:
    ws = sample_workspace
    ws.edit("restapi_sample", "calculator", label="mine")
    ws.install_sample()
    assert ws.get("restapi_sample", "calculator").label != "mine"
    assert ws.deployed_state(ws.get("restapi_sample", "calculator"), "prod") == "deployed"


def test_sample_definitions_match_the_spec(sample_workspace: Workspace) -> None:
    shapes = sorted((d.method, d.resource, d.requires_auth) for d in sample_workspace.definitions())
    assert shapes == [
        ("GET", "employee/{id}", True),
        ("OPTIONS", "calculator", False),
        ("OPTIONS", "employee/{id}", False),
        ("POST", "calculator", True),
    ]
    constants = {
        c.name: (c.type, c.value) for d in sample_workspace.definitions() for c in d.constants
    }
    assert constants == {
        "MESSAGE_EMPLOYEE_INTERNAL_SERVER_ERROR": ("String", "System error."),
        "MESSAGE_EMPLOYEE_NOT_FOUND": ("String", "Employee ID %s not found."),
        "MESSAGE_CALC_BAD_REQUEST": ("String", "Input values are incorrect."),
        "MESSAGE_CALC_INTERNAL_SERVER_ERROR": ("String", "System error."),
    }


# -- home and settings -------------------------------------------------------------------


def test_workspace_home_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTEBOOK_KIT_HOME", str(tmp_path / "from_env"))
    ws = Workspace()
    assert ws.home == tmp_path / "from_env"
    assert (tmp_path / "from_env" / "workspace.sqlite3").exists()


def test_settings_default_then_stored(workspace: Workspace) -> None:
    assert workspace.settings()["resource_quota"] is None
    assert workspace.setting("max_body_bytes") == 1_048_576
    workspace.set_setting("max_body_bytes", "2048")
    assert workspace.setting("max_body_bytes") == 2048


def test_workspace_refused_when_home_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for home in (blocker, blocker / "sub"):
        with pytest.raises(StoreError, match="as the workspace directory"):
            Workspace(home)


def test_export_refused_when_output_cannot_be_written(
    sample_workspace: Workspace, tmp_path: Path
) -> None:
    with pytest.raises(ValidationError, match="cannot write"):
        sample_workspace.export_file("restapi_sample", tmp_path / "missing" / "x.json")
