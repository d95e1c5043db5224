"""``notebook-kit commit`` as a newcomer uses it (issue 9): relative and absolute
repository paths, a repository with other staged work, the author from git config or
``--author``. Real git repositories (dulwich), real CLI processes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import run_cli
from dulwich import porcelain
from dulwich.repo import Repo

from notebook_kit.errors import ValidationError
from notebook_kit.workspace.workspace import Workspace

DEFAULT_AUTHOR = b"notebook-kit <notebook-kit@localhost>"


@pytest.fixture
def demo_home(workspace: Workspace) -> Path:
    workspace.create(
        "demo", "hello", label="Hello", method="GET", resource="hello", action="res.body = 'hi'\n"
    )
    return workspace.home


@pytest.fixture
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A HOME without ~/.gitconfig, so only the repository's config can name a user."""
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    env = {"HOME": str(user_home), "XDG_CONFIG_HOME": str(user_home / ".config")}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(key, raising=False)
    return env


def tree_paths(repo_dir: Path) -> set[str]:
    with Repo(str(repo_dir)) as repo:
        tree = repo[repo.head()].tree
        return {e.path.decode() for e in repo.object_store.iter_tree_contents(tree)}


DEMO_FILES = {
    "demo/application.json",
    "demo/hello/definition.json",
    "demo/hello/action.py",
    "demo/hello/functions.py",
}


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def refused(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("notebook-kit: "), result.stderr
    return lines[0]


def test_relative_repo_from_another_directory(demo_home: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    out = ok(run_cli("commit", "demo", "--repo", "r6", "--message", "x", home=demo_home, cwd=cwd))
    assert "committed demo to r6" in out
    repo_dir = cwd / "r6"
    assert tree_paths(repo_dir) == DEMO_FILES
    assert not (repo_dir / "r6").exists()
    with Repo(str(repo_dir)) as repo:
        assert porcelain.status(repo).untracked == []
    # The same relative path again: unchanged, so refused, and still nothing untracked.
    line = refused(
        run_cli("commit", "demo", "--repo", "r6", "--message", "y", home=demo_home, cwd=cwd)
    )
    assert "nothing to commit: demo is unchanged" in line


def test_absolute_repo(demo_home: Path, tmp_path: Path) -> None:
    repo_dir = tmp_path / "abs" / "repo"
    ok(run_cli("commit", "demo", "--repo", str(repo_dir), "--message", "x", home=demo_home))
    assert tree_paths(repo_dir) == DEMO_FILES


def test_other_staged_work_is_refused_not_swept_in(demo_home: Path, tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    ok(run_cli("commit", "demo", "--repo", str(repo_dir), "--message", "v1", home=demo_home))
    (repo_dir / "notes.txt").write_text("mine, not ready\n")
    with Repo(str(repo_dir)) as repo:
        porcelain.add(repo, paths=[str(repo_dir / "notes.txt")])
        head = repo.head()
    Workspace(demo_home).edit("demo", "hello", action="res.body = 'hello'\n")
    line = refused(
        run_cli("commit", "demo", "--repo", str(repo_dir), "--message", "v2", home=demo_home)
    )
    assert "other staged changes" in line and "notes.txt" in line
    with Repo(str(repo_dir)) as repo:
        assert repo.head() == head  # nothing committed
        assert porcelain.status(repo).staged["add"] == [b"notes.txt"]  # still the user's
    assert tree_paths(repo_dir) == DEMO_FILES


def test_author_from_repository_config(
    demo_home: Path, tmp_path: Path, no_user_config: dict[str, str]
) -> None:
    repo_dir = tmp_path / "repo"
    with porcelain.init(str(repo_dir)) as repo:
        config = repo.get_config()
        config.set((b"user",), b"name", b"Ada Lovelace")
        config.set((b"user",), b"email", b"ada@example.org")
        config.write_to_path()
    ok(run_cli("commit", "demo", "--repo", str(repo_dir), "--message", "x", home=demo_home))
    with Repo(str(repo_dir)) as repo:
        head = repo[repo.head()]
        assert head.author == head.committer == b"Ada Lovelace <ada@example.org>"


def test_author_from_user_config_else_default(
    demo_home: Path, tmp_path: Path, no_user_config: dict[str, str]
) -> None:
    first = Workspace(demo_home).commit("demo", tmp_path / "one", "x")
    with Repo(str(tmp_path / "one")) as repo:
        assert repo[first.encode()].author == DEFAULT_AUTHOR
    gitconfig = Path(no_user_config["HOME"]) / ".gitconfig"
    gitconfig.write_text("[user]\n\tname = Grace Hopper\n\temail = grace@example.org\n")
    second = Workspace(demo_home).commit("demo", tmp_path / "two", "x")
    with Repo(str(tmp_path / "two")) as repo:
        assert repo[second.encode()].author == b"Grace Hopper <grace@example.org>"


def test_author_option_overrides(
    demo_home: Path, tmp_path: Path, no_user_config: dict[str, str]
) -> None:
    repo_dir = tmp_path / "repo"
    args = ("commit", "demo", "--repo", str(repo_dir), "--message", "x")
    ok(run_cli(*args, "--author", "Linus T <lt@example.org>", home=demo_home))
    with Repo(str(repo_dir)) as repo:
        head = repo[repo.head()]
        assert head.author == b"Linus T <lt@example.org>"
        assert head.committer == DEFAULT_AUTHOR


@pytest.mark.parametrize("bad", ["Linus", "<lt@example.org>", "Linus <>", "a <b> c"])
def test_bad_author_is_one_line_and_commits_nothing(
    demo_home: Path, tmp_path: Path, bad: str
) -> None:
    repo_dir = tmp_path / "repo"
    args = ("commit", "demo", "--repo", str(repo_dir), "--message", "x", "--author", bad)
    line = refused(run_cli(*args, home=demo_home))
    assert "Name <email>" in line
    assert not repo_dir.exists()
    with pytest.raises(ValidationError, match="Name <email>"):
        Workspace(demo_home).commit("demo", repo_dir, "x", author=bad)
