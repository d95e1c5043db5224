"""The supervisor's reads of what is live (``runtime.reload.feed``): the code an action
process asks for stays answerable while the workers still serve it."""

from __future__ import annotations

from notebook_kit.runtime.reload.feed import Feed
from notebook_kit.workspace.workspace import Workspace


def _live_version(feed: Feed) -> tuple[int, int]:
    read = feed.read()
    (head,) = read.deployments.values()
    return read.generation, head["versions"][0]


def test_code_of_the_generation_served_until_the_commit_is_still_answered(
    workspace: Workspace,
) -> None:
    """A call routed just before a deploy went live asks for the code it was routed to
    after the supervisor read the deploy: answered until the workers moved past it."""
    workspace.create("app", "x", label="x", method="GET", resource="x", action="res.body = 1")
    workspace.deploy("app", "dev")
    feed = Feed(workspace)
    served, old = _live_version(feed)
    workspace.edit("app", "x", action="res.body = 2")
    workspace.deploy("app", "dev")
    newer, new = _live_version(feed)
    assert new != old
    assert feed.definition(old, "app") is not None  # the workers serve it until the commit
    assert feed.definition(old, "other") is None  # never another application's code
    feed.committed(served)  # the workers are told: move on from ``served``
    assert feed.definition(old, "app") is not None  # a call read just before may still ask
    workspace.edit("app", "x", action="res.body = 3")
    workspace.deploy("app", "dev")
    _, newest = _live_version(feed)
    feed.committed(newer)
    assert feed.definition(old, "app") is None  # two commits on: nobody serves it
    assert feed.definition(new, "app") is not None
    assert feed.definition(newest, "app") is not None
