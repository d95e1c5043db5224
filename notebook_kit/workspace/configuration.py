"""A workspace's own configuration: its home directory, its settings and its API keys.

Each change that alters what servers do (a setting, a key) bumps the store's generation in
the same transaction, so every server picks it up on its next reload check.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..builtins.storage import check_files_root
from ..domain.models import Stage
from ..domain.settings import find_setting, parse_value
from ..errors import NotFoundError, StoreError
from ..store.store import Store, new_api_key

__all__ = ["make_home", "require_home", "rotate_key", "save_setting"]


def make_home(home: Path) -> Path:
    """Create ``home`` if missing, readable by its owner only."""
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(home, 0o700)
    except OSError as exc:
        raise StoreError(f"cannot use {home} as the workspace directory: {exc.strerror}") from None
    return home


def require_home(home: Path) -> Path:
    """``home`` if it is an existing directory; else NotFoundError, and nothing is made.
    What a face checks before ``Workspace(home)`` when the user named the home, so a
    mistyped path is refused rather than becoming a new, empty workspace."""
    home = home.expanduser()
    if not home.is_dir():
        what = "is not a directory" if home.exists() else "does not exist"
        raise NotFoundError(f"the workspace directory {home} {what}")
    return home


def save_setting(store: Store, home: Path, name: str, value: str | None) -> None:
    """Store a setting (``None`` goes back to the default). Checked before it is saved."""
    setting = find_setting(name)
    if value is not None:
        parse_value(setting, value)
        if name == "files_root":  # a root holding the store would serve its keys
            check_files_root(home, value)
    with store.transaction():
        store.set_setting(name, value)
        store.bump_generation()


def rotate_key(store: Store, stage: Stage) -> str:
    """A new key for ``stage``; the old one is refused from the next reload on."""
    key = new_api_key()
    with store.transaction():
        store.set_api_key(stage, key)
        store.bump_generation()
    return key
