"""Keep action code away from the workspace store's files in a server process.

Closing any descriptor of a file drops every POSIX lock the process holds on it, so an
action that opens and closes ``workspace.sqlite3`` (or its ``-wal``/``-shm``/``-journal``)
with ``sqlite3`` or ``open`` would silently break the runtime's own store connection
(it would stop following key rotations and deploys). SQLite's ``EXCLUSIVE`` locking mode
is no answer: the store is shared by the CLI, notebooks and every server worker.

``protect_store(path)`` installs, once per process, an audit hook (PEP 578) that refuses
``open``/``os.open`` and ``sqlite3.connect`` of a protected file while an action's code
(``<action ...>``/``<functions ...>`` frames) is on the calling thread's stack and the
store package's code is not (built-ins that use the store keep working). The hook
costs a type check and a string comparison per file open; the stack is walked only for a
protected file name. It is a guard against accidents and the obvious, not a sandbox: an
action can start a thread whose target is C code, or use the store's own classes (see
docs/trust-model.md).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

__all__ = ["protect_store"]

_SUFFIXES = ("", "-wal", "-shm", "-journal")
_ACTION_FILES = ("<action ", "<functions ")
_STORE_CODE = os.sep + os.path.join("notebook_kit", "store") + os.sep  # the store package

_protected: set[str] = set()  # real paths
_names: set[str] = set()  # their base names: the cheap first test
_lock = threading.Lock()
_installed = False


def protect_store(store_path: Path) -> None:
    """Refuse action code opening ``store_path`` and its companion files (idempotent)."""
    global _installed
    real = os.path.realpath(store_path)
    with _lock:
        for suffix in _SUFFIXES:
            _protected.add(real + suffix)
            _names.add(os.path.basename(real) + suffix)
        if not _installed:
            sys.addaudithook(_audit)
            _installed = True


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" and event != "sqlite3.connect":
        return
    target = args[0] if args else None
    if isinstance(target, Path):
        target = str(target)
    elif isinstance(target, bytes):
        target = os.fsdecode(target)
    if not isinstance(target, str) or os.path.basename(target) not in _names:
        return
    if os.path.realpath(target) not in _protected or not _from_action():
        return
    raise PermissionError(f"actions may not open the workspace store ({target})")


def _from_action() -> bool:
    """Whether an action's code, and not the store's connection code, is on this stack."""
    frame = sys._getframe(2)
    seen_action = False
    while frame is not None:
        filename = frame.f_code.co_filename
        if _STORE_CODE in filename:
            return False
        if filename.startswith(_ACTION_FILES):
            seen_action = True
        frame = frame.f_back  # type: ignore[assignment]
    return seen_action
