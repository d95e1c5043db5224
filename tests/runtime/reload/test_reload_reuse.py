"""Reloads rebuild only what changed (issue 10): a redeploy with one change compiles one
action, an unchanged application keeps its route subtree, an unchanged stage its table."""

from __future__ import annotations

import hashlib

from support.live import LocalLive

from notebook_kit.workspace.workspace import Workspace

APP = "reuse"


def make_app(ws: Workspace, app: str, count: int) -> None:
    ws.create_application(app)
    for n in range(count):
        ws.create(
            app,
            f"d{n}",
            label=f"d{n}",
            method="GET",
            resource=f"r{n}/{{id}}",
            action=f"res.body = {{'n': {n}, 'id': req.pathParameters['id']}}",
            requires_auth=False,
        )


def subtree(runtime: LocalLive, stage: str, app: str) -> object:
    return runtime.live.stages[stage].table._root.literals[app]


def test_redeploy_with_one_change_compiles_one_action(workspace: Workspace) -> None:
    make_app(workspace, APP, 30)
    make_app(workspace, "other", 5)
    workspace.deploy(APP, "dev")
    workspace.deploy("other", "dev")
    runtime = LocalLive(workspace)
    assert runtime.builder.compiled == 35
    other_routes = subtree(runtime, "dev", "other")
    prod_table = runtime.live.stages["prod"]

    workspace.edit(APP, "d3", action="res.body = 'three'")
    workspace.deploy(APP, "dev")
    assert runtime.refresh()
    assert runtime.builder.compiled == 36  # the changed definition only
    assert subtree(runtime, "dev", "other") is other_routes  # untouched application
    assert runtime.live.stages["prod"] is prod_table  # untouched stage
    match = runtime.live.stages["dev"].table.match("GET", [APP, "r3", "7"])
    assert match is not None and match.endpoint is not None
    assert match.endpoint.definition.action == "res.body = 'three'"
    assert match.params == {"id": "7"}


def test_rollback_and_a_second_stage_reuse_nothing_they_should_not(workspace: Workspace) -> None:
    make_app(workspace, APP, 4)
    workspace.deploy(APP, "dev")
    runtime = LocalLive(workspace)
    workspace.deploy(APP, "prod")  # same versions, other stage: its own namespaces
    assert runtime.refresh()
    assert runtime.builder.compiled == 8
    dev = runtime.live.stages["dev"].table.match("GET", [APP, "r0", "1"])
    prod = runtime.live.stages["prod"].table.match("GET", [APP, "r0", "1"])
    assert dev is not None and prod is not None
    assert dev.endpoint is not prod.endpoint

    workspace.edit(APP, "d0", action="res.body = 'new'")
    workspace.deploy(APP, "dev")
    assert runtime.refresh()
    workspace.rollback(APP, "dev")
    assert runtime.refresh()
    back = runtime.live.stages["dev"].table.match("GET", [APP, "r0", "1"])
    assert back is not None and back.endpoint is not None
    assert back.endpoint.definition.action.startswith("res.body = {'n': 0")


def test_key_rotation_rebuilds_only_that_stage(workspace: Workspace) -> None:
    make_app(workspace, APP, 2)
    workspace.deploy(APP, "dev")
    workspace.deploy(APP, "prod")
    runtime = LocalLive(workspace)
    dev_table, prod_table = runtime.live.stages["dev"], runtime.live.stages["prod"]
    key = workspace.rotate_key("prod")
    assert runtime.refresh()
    assert runtime.live.stages["dev"] is dev_table
    assert runtime.live.stages["prod"] is not prod_table
    assert hashlib.sha256(key.encode()).digest() in runtime.live.stages["prod"].callers
    assert runtime.builder.compiled == 4  # nothing compiled again


def test_undeploy_drops_the_application(workspace: Workspace) -> None:
    make_app(workspace, APP, 2)
    workspace.deploy(APP, "dev")
    runtime = LocalLive(workspace)
    workspace.undeploy(APP, "dev")
    assert runtime.refresh()
    assert runtime.live.stages["dev"].table.match("GET", [APP, "r0", "1"]) is None
    assert runtime.live.stages["dev"].published == {}


def test_the_builtins_are_made_at_the_build_and_the_code_at_its_first_call(
    workspace: Workspace,
) -> None:
    """A worker makes the built-ins (their imports take a tenth of a second) when it
    builds under new settings, off the loop, and again only when the settings change;
    a definition's own code first runs at its first call."""
    make_app(workspace, APP, 2)
    workspace.deploy(APP, "dev")
    runtime = LocalLive(workspace)
    made: list[object] = []
    names = runtime.builder._env
    runtime.builder._env = lambda settings: made.append(settings) or names(settings)
    workspace.set_setting("http_timeout", "3")
    workspace.deploy(APP, "dev")
    assert runtime.refresh()
    assert len(made) == 1  # at the build, before any call
    match = runtime.live.stages["dev"].table.match("GET", [APP, "r1", "7"])
    assert match is not None and match.endpoint is not None
    assert match.endpoint.run is None  # no code of the definition has run
    workspace.deploy(APP, "prod")
    assert runtime.refresh()
    assert len(made) == 1  # the same settings: the same built-ins
