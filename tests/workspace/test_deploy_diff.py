"""``Workspace.diff``: the saved definitions of an application against what a stage serves,
and ``Workspace.invoke_draft``, a test run of a definition that is not saved."""

from __future__ import annotations

import pytest

from notebook_kit import Workspace
from notebook_kit.domain.models import Definition
from notebook_kit.errors import ActionSyntaxError, NotFoundError
from notebook_kit.workspace.diffing import diff_definitions


@pytest.fixture
def demo(workspace: Workspace) -> Workspace:
    workspace.create("demo", "hello", label="Hello", method="GET", resource="hello",
                     action="res.body = {'hello': 1}")  # fmt: skip
    workspace.create("demo", "bye", label="Bye", method="GET", resource="bye",
                     action="res.body = 'bye'")  # fmt: skip
    return workspace


def test_diff_of_undeployed_application_lists_every_definition_as_added(demo: Workspace) -> None:
    diff = demo.diff("demo", "dev")
    assert diff.deployment_id is None
    assert not diff.in_sync
    assert [(c.id, c.kind) for c in diff.changes] == [("bye", "added"), ("hello", "added")]


def test_diff_right_after_deploy_is_in_sync(demo: Workspace) -> None:
    deployment = demo.deploy("demo", "dev")
    diff = demo.diff("demo", "dev")
    assert (diff.deployment_id, diff.in_sync, diff.changes, diff.unchanged) == (
        deployment.id,
        True,
        (),
        2,
    )
    assert demo.diff("demo", "prod").deployment_id is None  # the other stage is its own


def test_diff_shows_added_removed_and_changed_with_unified_action_diff(demo: Workspace) -> None:
    demo.deploy("demo", "dev")
    demo.edit("demo", "hello", action="x = 2\nres.body = {'hello': x}", label="Hi")
    demo.delete("demo", "bye")
    demo.create("demo", "new", label="New", method="POST", resource="new")

    diff = demo.diff("demo", "dev")
    kinds = {c.id: c.kind for c in diff.changes}
    assert kinds == {"hello": "changed", "new": "added", "bye": "removed"}
    hello = next(c for c in diff.changes if c.id == "hello")
    assert [f.name for f in hello.fields] == ["label", "action"]
    label = hello.fields[0]
    assert (label.live, label.saved, label.unified) == ("Hello", "Hi", "")
    action = hello.fields[1].unified.splitlines()
    assert action[:2] == ["--- action (live)", "+++ action (saved)"]
    assert "-res.body = {'hello': 1}" in action
    assert "+x = 2" in action
    assert "+res.body = {'hello': x}" in action
    assert diff.unchanged == 0
    assert diff.to_dict()["changes"][0]["fields"][0]["name"] == "label"


def test_diff_pairs_renamed_definition_with_its_live_self(demo: Workspace) -> None:
    demo.deploy("demo", "prod")
    demo.edit("demo", "hello", new_id="greet")
    diff = demo.diff("demo", "prod")
    assert [(c.id, c.kind, c.live_id) for c in diff.changes] == [("greet", "changed", "hello")]
    assert [(f.name, f.live, f.saved) for f in diff.changes[0].fields] == [("id", "hello", "greet")]


def test_diff_follows_rollback_to_older_deployment(demo: Workspace) -> None:
    first = demo.deploy("demo", "dev")
    demo.edit("demo", "bye", action="res.body = 'later'")
    demo.deploy("demo", "dev")
    assert demo.diff("demo", "dev").in_sync
    demo.rollback("demo", "dev", to=first.id)
    diff = demo.diff("demo", "dev")
    assert diff.deployment_id == first.id
    assert [(c.id, c.kind) for c in diff.changes] == [("bye", "changed")]


def test_diff_of_unknown_application_is_refused(demo: Workspace) -> None:
    with pytest.raises(NotFoundError, match="no application 'nope'"):
        demo.diff("nope", "dev")


def test_diff_definitions_ignores_timestamps() -> None:
    a = Definition("demo", "x", "X", "GET", "x", created_at="2020-01-01T00:00:00.000Z")
    b = Definition("demo", "x", "X", "GET", "x", created_at="2026-01-01T00:00:00.000Z")
    assert diff_definitions([a], [b]) == ([], 1)


def test_invoke_draft_runs_unsaved_source_and_times_whole_run(demo: Workspace) -> None:
    saved = demo.get("demo", "hello")
    draft = saved.with_changes(action="import time\ntime.sleep(0.02)\nres.body = {'draft': True}")
    result = demo.invoke_draft(draft)
    assert result.json() == {"draft": True}
    assert 20 <= result.duration_ms < 2000
    assert demo.invoke("demo", "hello").json() == {"hello": 1}  # the saved one is untouched
    assert demo.get("demo", "hello") == saved


def test_invoke_duration_covers_compile_not_only_the_action(demo: Workspace) -> None:
    # the action alone of a small definition takes microseconds (the "0.0 ms" of old);
    # the duration is the whole run, so time spent loading the user functions counts
    demo.edit("demo", "hello", functions="import time\ntime.sleep(0.03)")
    result = demo.invoke("demo", "hello")
    assert result.json() == {"hello": 1}
    assert result.duration_ms >= 30


def test_invoke_draft_refuses_draft_that_does_not_compile(demo: Workspace) -> None:
    draft = demo.get("demo", "hello").with_changes(action="res.body = (")
    with pytest.raises(ActionSyntaxError):
        demo.invoke_draft(draft)
