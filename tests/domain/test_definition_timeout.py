"""A definition's own time limit (issue 11): validated, stored, exported, set from the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.processes import run_cli

from notebook_kit.domain.exchange import from_document, to_document
from notebook_kit.errors import ValidationError
from notebook_kit.workspace.workspace import Workspace


def make(workspace: Workspace, **extra: object) -> None:
    workspace.create(
        "t", "hello", label="hello", method="GET", resource="hello", action="", **extra
    )


@pytest.mark.parametrize("bad", [0, -1, 3601, "soon", True])
def test_timeout_is_a_positive_number_up_to_an_hour(workspace: Workspace, bad: object) -> None:
    with pytest.raises(ValidationError) as refused:
        make(workspace, timeout=bad)
    assert refused.value.field == "timeout"


def test_timeout_is_stored_and_reset(workspace: Workspace) -> None:
    make(workspace, timeout=2.5)
    assert Workspace(workspace.home).get("t", "hello").timeout == 2.5
    workspace.edit("t", "hello", label="other")
    assert workspace.get("t", "hello").timeout == 2.5  # untouched by other edits
    workspace.edit("t", "hello", timeout=None)
    assert workspace.get("t", "hello").timeout is None


def test_export_carries_timeout_and_old_files_import(workspace: Workspace) -> None:
    make(workspace, timeout=3)
    document = to_document(workspace.application("t"), workspace.definitions("t"))
    assert document["definitions"][0]["timeout"] == 3
    assert from_document(document)[1][0].timeout == 3
    del document["definitions"][0]["timeout"]  # an export from before the field
    assert from_document(document)[1][0].timeout is None
    workspace.edit("t", "hello", timeout=None)
    unset = to_document(workspace.application("t"), workspace.definitions("t"))
    assert "timeout" not in unset["definitions"][0]


def test_cli_create_and_edit_timeout(home: Path, tmp_path: Path) -> None:
    action = tmp_path / "a.py"
    action.write_text("res.body = 1\n")
    args = ("create", "t", "x", "--label", "x", "--method", "GET", "--resource", "x")
    run_cli(*args, "--action-file", str(action), "--timeout", "4", home=home, check=True)
    assert Workspace(home).get("t", "x").timeout == 4
    run_cli("edit", "t", "x", "--timeout", "default", home=home, check=True)
    assert Workspace(home).get("t", "x").timeout is None
    refused = run_cli("edit", "t", "x", "--timeout", "0", home=home)
    assert refused.returncode != 0
    assert "timeout" in refused.stderr
