"""Committing an application to a real git repository (dulwich), read back with dulwich."""

from __future__ import annotations

import json
from io import BytesIO
from pathlib import Path

import pytest
from dulwich.patch import write_tree_diff
from dulwich.repo import Repo

from notebook_kit.errors import ConflictError, NotFoundError, ValidationError
from notebook_kit.workspace.workspace import Workspace


def tree_files(repo: Repo, commit_id: bytes) -> dict[str, bytes]:
    """Every file of a commit's tree: path to content."""
    files: dict[str, bytes] = {}
    for entry in repo.object_store.iter_tree_contents(repo[commit_id].tree):
        files[entry.path.decode()] = repo[entry.sha].data
    return files


def history(repo: Repo) -> list[bytes]:
    """Commit ids, newest first."""
    return [entry.commit.id for entry in repo.get_walker()]


def test_commit_creates_repo_and_writes_readable_files(
    sample_workspace: Workspace, tmp_path: Path
) -> None:
    repo_dir = tmp_path / "repos" / "api"
    sha = sample_workspace.commit("restapi_sample", repo_dir, "Add the sample")
    assert len(sha) == 40
    with Repo(str(repo_dir)) as repo:
        assert history(repo) == [sha.encode()]
        assert repo[sha.encode()].message == b"Add the sample"
        files = tree_files(repo, sha.encode())
    ids = sorted(d.id for d in sample_workspace.definitions("restapi_sample"))
    expected = {"restapi_sample/application.json"} | {
        f"restapi_sample/{i}/{name}"
        for i in ids
        for name in ("definition.json", "action.py", "functions.py")
    }
    assert set(files) == expected
    app = json.loads(files["restapi_sample/application.json"])
    assert app == {"id": "restapi_sample", "type": "REST API", "label": "REST API sample"}
    calc = sample_workspace.get("restapi_sample", "calculator")
    meta = json.loads(files["restapi_sample/calculator/definition.json"])
    assert meta["method"] == "POST" and meta["resource"] == "calculator"
    assert meta["requires_auth"] is True
    assert {c["name"] for c in meta["constants"]} == {c.name for c in calc.constants}
    assert "action" not in meta  # code lives in .py files, so a review shows code diffs
    assert files["restapi_sample/calculator/action.py"].decode() == calc.action
    assert files["restapi_sample/calculator/functions.py"].decode() == calc.functions


def test_second_commit_shows_code_diff(sample_workspace: Workspace, tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    first = sample_workspace.commit("restapi_sample", repo_dir, "v1")
    action = sample_workspace.get("restapi_sample", "employee").action
    sample_workspace.edit(
        "restapi_sample", "employee", action=action + "print('looked up', employee_id)\n"
    )
    second = sample_workspace.commit("restapi_sample", repo_dir, "Log lookups")
    with Repo(str(repo_dir)) as repo:
        assert history(repo) == [second.encode(), first.encode()]
        assert [repo[c].message for c in history(repo)] == [b"Log lookups", b"v1"]
        assert repo[second.encode()].parents == [first.encode()]
        out = BytesIO()
        write_tree_diff(
            out, repo.object_store, repo[first.encode()].tree, repo[second.encode()].tree
        )
    diff = out.getvalue().decode()
    assert "restapi_sample/employee/action.py" in diff
    assert "+print('looked up', employee_id)" in diff
    assert "calculator" not in diff


def test_deleted_definition_leaves_the_next_commit(
    sample_workspace: Workspace, tmp_path: Path
) -> None:
    repo_dir = tmp_path / "repo"
    sample_workspace.commit("restapi_sample", repo_dir, "v1")
    sample_workspace.delete("restapi_sample", "calculator-preflight")
    sha = sample_workspace.commit("restapi_sample", repo_dir, "Drop the calculator preflight")
    with Repo(str(repo_dir)) as repo:
        files = tree_files(repo, sha.encode())
    assert not any(p.startswith("restapi_sample/calculator-preflight/") for p in files)
    assert "restapi_sample/calculator/action.py" in files
    assert not (repo_dir / "restapi_sample" / "calculator-preflight").exists()


def test_commit_of_unchanged_content_refused(sample_workspace: Workspace, tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    first = sample_workspace.commit("restapi_sample", repo_dir, "v1")
    with pytest.raises(ConflictError, match="nothing to commit: restapi_sample is unchanged"):
        sample_workspace.commit("restapi_sample", repo_dir, "again")
    with Repo(str(repo_dir)) as repo:
        assert history(repo) == [first.encode()]


@pytest.mark.parametrize("message", ["", "   ", "\n"])
def test_commit_with_empty_message_refused(
    sample_workspace: Workspace, tmp_path: Path, message: str
) -> None:
    repo_dir = tmp_path / "repo"
    with pytest.raises(ValidationError, match="a commit needs a message"):
        sample_workspace.commit("restapi_sample", repo_dir, message)
    assert not repo_dir.exists()


def test_commit_of_unknown_application_refused(workspace: Workspace, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no application 'nope'"):
        workspace.commit("nope", tmp_path / "repo", "x")
    assert not (tmp_path / "repo").exists()


def test_two_applications_share_one_repository(sample_workspace: Workspace, tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    sample_workspace.commit("restapi_sample", repo_dir, "sample")
    sample_workspace.copy("restapi_sample", "calculator", "tools")
    sha = sample_workspace.commit("tools", repo_dir, "tools")
    with Repo(str(repo_dir)) as repo:
        files = tree_files(repo, sha.encode())
    assert "tools/calculator/action.py" in files
    assert "restapi_sample/employee/action.py" in files  # the other app is untouched


def test_commit_refused_when_repository_cannot_be_created(
    sample_workspace: Workspace, tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ValidationError, match="cannot create the repository"):
        sample_workspace.commit("restapi_sample", blocker / "repo", "x")
