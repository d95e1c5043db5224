"""``Workspace.change_stamp()`` moves with every kind of change (from any handle on the
store) and stays put on reads; ``Workspace.draft()`` validates like a save, saving nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from notebook_kit import Workspace
from notebook_kit.errors import ActionSyntaxError, ValidationError

CHANGES: dict[str, Callable[[Workspace], object]] = {
    "create application": lambda ws: ws.create_application("other"),
    "create definition": lambda ws: ws.create(
        "restapi_sample", "ping", label="Ping", method="GET", resource="ping"
    ),
    "edit definition": lambda ws: ws.edit("restapi_sample", "employee", label="Staff"),
    "rename definition": lambda ws: ws.edit("restapi_sample", "employee", new_id="staff"),
    "delete definition": lambda ws: ws.delete("restapi_sample", "calculator"),
    "deploy": lambda ws: ws.deploy("restapi_sample", "dev"),
    "undeploy": lambda ws: ws.undeploy("restapi_sample", "prod"),
    "rollback": lambda ws: ws.rollback("restapi_sample", "dev"),
    "rotate key": lambda ws: ws.rotate_key("dev"),
    "set setting": lambda ws: ws.set_setting("resource_quota", "50"),
    "delete application": lambda ws: ws.delete_application("restapi_sample"),
}


@pytest.mark.parametrize("change", CHANGES, ids=list(CHANGES))
def test_change_stamp_moves_on_every_change_seen_from_another_handle(
    sample_workspace: Workspace, change: str
) -> None:
    if change == "rollback":
        sample_workspace.deploy("restapi_sample", "dev")  # something to roll back to
    watcher = Workspace(sample_workspace.home)
    before = watcher.change_stamp()
    CHANGES[change](sample_workspace)
    assert watcher.change_stamp() != before


def test_change_stamp_stays_put_on_reads(sample_workspace: Workspace) -> None:
    before = sample_workspace.change_stamp()
    sample_workspace.definitions("restapi_sample")
    sample_workspace.listing("restapi_sample")
    sample_workspace.deployments()
    sample_workspace.invoke("restapi_sample", "employee", path_parameters={"id": "1"})
    assert sample_workspace.change_stamp() == before


def test_draft_validates_like_a_save_and_saves_nothing(sample_workspace: Workspace) -> None:
    before = sample_workspace.change_stamp()
    draft = sample_workspace.draft(
        "restapi_sample", "new-one", label="New", method="post", resource="/a/{b}/", timeout="3"
    )
    assert (draft.method, draft.resource, draft.timeout) == ("POST", "a/{b}", 3.0)
    assert sample_workspace.change_stamp() == before
    with pytest.raises(ActionSyntaxError) as refused:
        sample_workspace.draft(
            "restapi_sample", "x", label="X", method="GET", resource="x", action="a = 1\nb = (\n"
        )
    assert (refused.value.field, refused.value.line) == ("action", 2)
    with pytest.raises(ValidationError, match="label must not be empty"):
        sample_workspace.draft("restapi_sample", "x", label=" ", method="GET", resource="x")
