"""Committing an application to a git repository, as files a review can read.

Layout, one folder per application::

    <app>/application.json
    <app>/<api_id>/definition.json   metadata and constants
    <app>/<api_id>/action.py         the action source
    <app>/<api_id>/functions.py      the user functions
    <app>/<api_id>/examples.json     its examples (only when it has some)
    <app>/<api_id>/contract.json     its contract (only when it declares one)
    <app>/schedules.json             its schedules (only when it has some)

Uses dulwich, so no git binary is needed.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from dulwich import porcelain
from dulwich.errors import NotGitRepository
from dulwich.index import commit_tree
from dulwich.repo import Repo

from ..domain.examples import Example
from ..domain.models import Application, Definition
from ..domain.schedules import Schedule
from ..errors import ConflictError, StoreError, ValidationError

__all__ = ["commit_application"]

_AUTHOR = b"notebook-kit <notebook-kit@localhost>"
_IDENTITY = re.compile(r"[^<>\n]*[^<>\s] <[^<>\s]+>")
_META_FIELDS = ("id", "label", "method", "resource", "content_type", "requires_auth", "constants")


def _write_tree(
    root: Path,
    app: Application,
    definitions: list[Definition],
    examples: list[Example],
    schedules: list[Schedule],
) -> None:
    folder = root / app.id
    if folder.exists():
        shutil.rmtree(folder)  # what was deleted from the app disappears from the commit
    folder.mkdir(parents=True)
    (folder / "application.json").write_text(json.dumps(app.to_dict(), indent=2) + "\n")
    if schedules:
        rows = [{k: v for k, v in s.to_dict().items() if k != "app"} for s in schedules]
        (folder / "schedules.json").write_text(json.dumps(rows, indent=2) + "\n")
    for d in definitions:
        target = folder / d.id
        target.mkdir()
        meta = {k: v for k, v in d.to_dict().items() if k in _META_FIELDS}
        (target / "definition.json").write_text(json.dumps(meta, indent=2) + "\n")
        (target / "action.py").write_text(
            d.action if d.action.endswith("\n") or not d.action else d.action + "\n"
        )
        (target / "functions.py").write_text(d.functions)
        own = [
            {k: v for k, v in e.to_dict().items() if k not in ("app", "api_id")}
            for e in examples
            if e.api_id == d.id
        ]
        if own:
            (target / "examples.json").write_text(json.dumps(own, indent=2) + "\n")
        if not d.contract.is_empty:
            contract = json.dumps(d.contract.to_dict(), indent=2)
            (target / "contract.json").write_text(contract + "\n")


def _identity(value: str) -> bytes:
    """``Name <email>`` checked, as git wants it."""
    if not _IDENTITY.fullmatch(value.strip()):
        raise ValidationError(
            f"the author must look like 'Name <email>', not {value!r}", field="author"
        )
    return value.strip().encode()


def _configured_identity(repo: Repo) -> bytes | None:
    """``user.name``/``user.email`` from the repository's config, then the user's."""
    config = repo.get_config_stack()
    try:
        name = config.get((b"user",), b"name")
        email = config.get((b"user",), b"email")
    except KeyError:
        return None
    if not name.strip() or not email.strip():
        return None
    return name.strip() + b" <" + email.strip() + b">"


def _commit_tree(repo: Repo, prefix: str) -> tuple[bytes, bytes | None]:
    """The tree to commit, as ``git commit -- <prefix>`` makes it: the last commit's
    tree with the paths under ``prefix`` taken from the index, every other path as it was
    committed (whatever else is staged stays staged, out of this commit). Returns it
    with the last commit's tree (None before the first commit)."""
    git: Any = repo  # dulwich's annotations vary between releases
    try:
        head_tree: bytes | None = git[git.head()].tree
    except KeyError:  # no commit yet
        head_tree = None
    start = [] if head_tree is None else git.object_store.iter_tree_contents(head_tree)
    blobs = {e.path: (e.sha, e.mode) for e in start if not e.path.startswith(prefix.encode())}
    for path, entry in git.open_index().items():
        if path.startswith(prefix.encode()):
            blobs[path] = (entry.sha, entry.mode)
    tree = commit_tree(git.object_store, [(p, sha, mode) for p, (sha, mode) in blobs.items()])
    return bytes(tree), head_tree


def _do_commit(repo: Repo, tree: bytes, message: bytes, author: bytes, committer: bytes) -> bytes:
    """Commit ``tree`` on the current branch, hooks and all."""
    git: Any = repo
    fields = {"message": message, "author": author, "committer": committer, "tree": tree}
    if hasattr(git, "get_worktree"):  # dulwich 0.23 moved commits to the worktree
        return bytes(git.get_worktree().commit(**fields))
    return bytes(git.do_commit(**fields))


def commit_application(
    repo_path: str | Path,
    app: Application,
    definitions: list[Definition],
    examples: list[Example],
    message: str,
    author: str | None = None,
    schedules: list[Schedule] | None = None,
) -> str:
    """Write the application (its ``schedules`` too) into the repository (created when
    missing) and commit it.

    A relative ``repo_path`` is relative to the current directory. The commit holds only
    the application's folder, as ``git commit -- <app>/`` would: other changes staged in
    the repository are neither committed nor unstaged. The author is ``author``
    (``Name <email>``), else ``user.name``/``user.email`` from the repository's or the
    user's git config, else ``notebook-kit <notebook-kit@localhost>``.

    Returns the new commit's hex id. Refuses an empty message or a commit that would
    change nothing.
    """
    if not message.strip():
        raise ValidationError("a commit needs a message", field="message")
    chosen = _identity(author) if author is not None else None
    root = Path(repo_path).absolute()
    try:
        repo = Repo(str(root))
    except NotGitRepository:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValidationError(
                f"cannot create the repository {root}: {exc.strerror}", field="repo"
            ) from None
        repo = porcelain.init(str(root))
    prefix = f"{app.id}/"
    with repo:
        _write_tree(root, app, definitions, examples, schedules or [])
        porcelain.add(repo, paths=[str(root / app.id)])
        # Files of definitions that no longer exist must leave the index too.
        index = repo.open_index()
        stale = [
            p for p in index if p.startswith(prefix.encode()) and not (root / p.decode()).exists()
        ]
        if stale:
            porcelain.remove(repo, paths=[str(root / p.decode()) for p in stale], cached=True)
        tree, head_tree = _commit_tree(repo, prefix)
        if tree == head_tree:
            raise ConflictError(f"nothing to commit: {app.id} is unchanged since the last commit")
        committer = _configured_identity(repo) or _AUTHOR
        try:
            sha = _do_commit(repo, tree, message.encode(), chosen or committer, committer)
        except Exception as exc:  # dulwich raises several unrelated types
            raise StoreError(f"git commit failed: {exc}") from exc
    return sha.decode() if isinstance(sha, bytes) else str(sha)
