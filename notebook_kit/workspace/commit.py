"""Committing an application to a git repository, as files a review can read.

Layout, one folder per application::

    <app>/application.json
    <app>/<api_id>/definition.json   metadata and constants
    <app>/<api_id>/action.py         the action source
    <app>/<api_id>/functions.py      the user functions
    <app>/<api_id>/examples.json     its examples (only when it has some)

Uses dulwich, so no git binary is needed.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from dulwich import porcelain
from dulwich.errors import NotGitRepository
from dulwich.repo import Repo

from ..domain.examples import Example
from ..domain.models import Application, Definition
from ..errors import ConflictError, StoreError, ValidationError

__all__ = ["commit_application"]

_AUTHOR = b"notebook-kit <notebook-kit@localhost>"
_IDENTITY = re.compile(r"[^<>\n]*[^<>\s] <[^<>\s]+>")
_META_FIELDS = ("id", "label", "method", "resource", "content_type", "requires_auth", "constants")


def _write_tree(
    root: Path, app: Application, definitions: list[Definition], examples: list[Example]
) -> None:
    folder = root / app.id
    if folder.exists():
        shutil.rmtree(folder)  # what was deleted from the app disappears from the commit
    folder.mkdir(parents=True)
    (folder / "application.json").write_text(json.dumps(app.to_dict(), indent=2) + "\n")
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


def _staged_elsewhere(repo: Repo, prefix: str) -> list[str]:
    """Paths the user staged outside the application's folder."""
    staged = porcelain.status(repo, untracked_files="no").staged
    paths = {
        (p.decode() if isinstance(p, bytes) else str(p))
        for kind in ("add", "delete", "modify")
        for p in staged[kind]
    }
    return sorted(p for p in paths if not p.startswith(prefix))


def commit_application(
    repo_path: str | Path,
    app: Application,
    definitions: list[Definition],
    examples: list[Example],
    message: str,
    author: str | None = None,
) -> str:
    """Write the application into the repository (created when missing) and commit it.

    A relative ``repo_path`` is relative to the current directory. The commit holds only
    the application's folder: when other changes are staged in the repository, it is
    refused (naming them) rather than sweeping them in. The author is ``author``
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
        others = _staged_elsewhere(repo, prefix)
        if others:
            shown = ", ".join(others[:5]) + (
                f" and {len(others) - 5} more" if len(others) > 5 else ""
            )
            raise ConflictError(
                f"{root} has other staged changes ({shown}); commit or unstage them first"
            )
        _write_tree(root, app, definitions, examples)
        porcelain.add(repo, paths=[str(root / app.id)])
        # Files of definitions that no longer exist must leave the index too.
        index = repo.open_index()
        stale = [
            p for p in index if p.startswith(prefix.encode()) and not (root / p.decode()).exists()
        ]
        if stale:
            porcelain.remove(repo, paths=[str(root / p.decode()) for p in stale], cached=True)
        status = porcelain.status(repo, untracked_files="no")
        staged = status.staged
        if not any(staged[k] for k in ("add", "delete", "modify")):
            raise ConflictError(f"nothing to commit: {app.id} is unchanged since the last commit")
        committer = _configured_identity(repo) or _AUTHOR
        try:
            sha = porcelain.commit(
                repo, message=message.encode(), author=chosen or committer, committer=committer
            )
        except Exception as exc:  # dulwich raises several unrelated types
            raise StoreError(f"git commit failed: {exc}") from exc
    return sha.decode() if isinstance(sha, bytes) else str(sha)
