"""``notebook-kit commit`` as a newcomer uses it (issue 9): relative and absolute
repository paths, a repository with other staged work, the author from git config or
``--author``. Real git repositories (dulwich), real CLI processes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from dulwich import porcelain
from dulwich.repo import Repo
from support.processes import run_cli

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


def git(repo_dir: Path, *args: str) -> str:
    """The real git binary in ``repo_dir``."""
    result = subprocess.run(
        ["git", "-C", str(repo_dir), *args], capture_output=True, text=True, check=True
    )
    return result.stdout


def test_other_staged_work_stays_staged_and_out_of_the_commit(
    demo_home: Path, tmp_path: Path
) -> None:
    """As ``git commit -- demo/``: the commit holds exactly the application's files; the
    user's staged additions, changes and deletions elsewhere stay staged, untouched."""
    repo_dir = tmp_path / "repo"
    repo_dir.mkdir()
    git(repo_dir, "init", "-q")
    git(repo_dir, "config", "user.name", "Ann")
    git(repo_dir, "config", "user.email", "ann@example.org")
    for name in ("keep.txt", "change.txt", "gone.txt"):
        (repo_dir / name).write_text(f"{name} v1\n")
    git(repo_dir, "add", ".")
    git(repo_dir, "commit", "-q", "-m", "the user's files")
    ok(run_cli("commit", "demo", "--repo", str(repo_dir), "--message", "v1", home=demo_home))
    (repo_dir / "notes.txt").write_text("mine, not ready\n")
    (repo_dir / "change.txt").write_text("change.txt v2, staged\n")
    git(repo_dir, "add", "notes.txt", "change.txt")
    git(repo_dir, "rm", "-q", "gone.txt")
    (repo_dir / "keep.txt").write_text("keep.txt, changed but not staged\n")
    staged_before = git(repo_dir, "diff", "--cached", "--raw", "--", ":!demo")
    Workspace(demo_home).edit("demo", "hello", action="res.body = 'hello'\n")
    Workspace(demo_home).create(
        "demo", "bye", label="Bye", method="GET", resource="bye", action="res.body = 'bye'\n"
    )

    out = ok(run_cli("commit", "demo", "--repo", str(repo_dir), "--message", "v2", home=demo_home))

    assert "committed demo to" in out
    changed = git(repo_dir, "show", "--name-status", "--format=", "HEAD").split("\n")
    assert sorted(line for line in changed if line) == [
        "A\tdemo/bye/action.py",
        "A\tdemo/bye/definition.json",
        "A\tdemo/bye/functions.py",
        "M\tdemo/hello/action.py",
    ]
    assert set(git(repo_dir, "status", "--porcelain").splitlines()) == {
        "A  notes.txt",
        "D  gone.txt",
        "M  change.txt",
        " M keep.txt",
    }
    # The index entries of the other paths are what the user staged, byte for byte.
    assert git(repo_dir, "diff", "--cached", "--raw", "--", ":!demo") == staged_before
    assert git(repo_dir, "show", "HEAD:change.txt") == "change.txt v1\n"
    assert git(repo_dir, "show", "HEAD:gone.txt") == "gone.txt v1\n"
    assert (repo_dir / "keep.txt").read_text() == "keep.txt, changed but not staged\n"
    # Committing the user's work afterwards takes exactly what they staged.
    git(repo_dir, "commit", "-q", "-m", "the user's work")
    assert git(repo_dir, "status", "--porcelain") == " M keep.txt\n"


def test_other_staged_work_does_not_count_as_a_change(demo_home: Path, tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    ok(run_cli("commit", "demo", "--repo", str(repo_dir), "--message", "v1", home=demo_home))
    (repo_dir / "notes.txt").write_text("mine\n")
    git(repo_dir, "add", "notes.txt")
    line = refused(
        run_cli("commit", "demo", "--repo", str(repo_dir), "--message", "v2", home=demo_home)
    )
    assert "nothing to commit: demo is unchanged" in line
    assert git(repo_dir, "status", "--porcelain") == "A  notes.txt\n"
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
