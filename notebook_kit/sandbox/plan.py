"""What a sandboxed process may touch: worked out on the trusted side, applied inside.

A process that runs action code may **read** the Python installation, the folders on its
import path, notebook_kit's own code and the system's shared files (``/usr``, ``/lib``,
``/etc``: libraries, TLS roots, DNS settings), and **read and write** only the
environment database's folder, the files root and a private temporary folder. The
workspace store (``workspace.sqlite3`` and its ``-wal``/``-shm``), the serve logs and
records, and everything else in the workspace folder stay out of reach: the environment
database lives in a folder of its own, ``<home>/environment/``, because SQLite creates
its ``-wal`` beside it and a right to create files in the workspace folder would be a
right to replace the store.

A folder the process must read that holds the workspace (the workspace inside the
virtual environment, say) is refused: ``SandboxError`` names it. A folder on the import
path that holds it (the current directory, when the workspace is below it) is left out.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..builtins.environment import environment_folder, sqlite_file_of
from ..builtins.storage import resolve_root
from ..errors import SandboxError

__all__ = ["PLAN_SETTINGS", "SandboxPlan", "plan_for"]

_SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/etc", "/sys/devices/system/cpu")
_DEVICES_READ = ("/dev/urandom", "/dev/random", "/dev/zero", "/proc/self")
_DEVICES_WRITE = ("/dev/null",)
_PACKAGE = Path(__file__).resolve().parent.parent  # notebook_kit/


@dataclass(frozen=True)
class SandboxPlan:
    """The paths of a sandboxed process: ``home`` (the workspace, never readable), what
    it reads, what it writes, its temporary folder, and the memory limit of one action
    call in MiB (None: no limit)."""

    home: str
    readable: tuple[str, ...]
    writable: tuple[str, ...]
    tmp: str
    memory_mb: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "home": self.home,
            "readable": list(self.readable),
            "writable": list(self.writable),
            "tmp": self.tmp,
            "memory_mb": self.memory_mb,
        }

    def discard(self) -> None:
        """Remove the temporary folder (and what the processes left in it)."""
        shutil.rmtree(self.tmp, ignore_errors=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SandboxPlan:
        return cls(
            str(data["home"]),
            tuple(str(p) for p in data["readable"]),
            tuple(str(p) for p in data["writable"]),
            str(data["tmp"]),
            None if data.get("memory_mb") is None else int(data["memory_mb"]),
        )


def _contains(folder: str, path: Path) -> bool:
    try:
        return path.is_relative_to(Path(folder).resolve())
    except OSError:
        return False


def _existing(paths: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for path in paths:
        if path and os.path.exists(path) and path not in seen:
            seen.append(path)
    return seen


# The settings a plan is made of: a change of one needs new processes confined anew.
PLAN_SETTINGS = ("files_root", "database_url", "action_memory_limit")


def plan_for(
    home: Path, settings: Mapping[str, Any], tmp: Path | None = None, memory_mb: int | None = None
) -> SandboxPlan:
    """The plan for action processes over the workspace at ``home`` with ``settings``
    (``files_root``, ``database_url``); ``tmp`` is made (0700) when not given."""
    home = home.resolve()
    environment = environment_folder(home)
    environment.mkdir(mode=0o700, exist_ok=True)
    files = resolve_root(home, settings.get("files_root"))
    files.mkdir(mode=0o700, parents=True, exist_ok=True)
    writable = [str(environment), str(files)]
    database = sqlite_file_of(settings.get("database_url"))
    if database is not None:
        folder = database.resolve().parent
        if _contains(str(folder), home):
            raise SandboxError(
                f"database_url names {database}, in a folder that holds the workspace "
                f"{home}: action processes could then change the store; move the "
                f"database to a folder of its own"
            )
        writable.append(str(folder))
    if tmp is None:
        tmp = Path(tempfile.mkdtemp(prefix="notebook-kit-sandbox-"))
    writable.append(str(tmp))
    needed = _existing(
        [
            sys.prefix,
            sys.base_prefix,
            sys.exec_prefix,
            sys.base_exec_prefix,
            *(sysconfig.get_paths().get(k, "") for k in ("stdlib", "platstdlib", "purelib")),
            str(_PACKAGE),
        ]
    )
    for path in needed:
        if _contains(path, home):
            raise SandboxError(
                f"the workspace {home} lies inside {path}, which action processes must "
                f"read (Python and notebook_kit live there): use a workspace folder "
                f"outside it (--home, NOTEBOOK_KIT_HOME)"
            )
    optional = [p for p in _existing(sys.path) if not _contains(p, home)]
    system = [p for p in _existing(_SYSTEM) if not _contains(p, home)]
    readable = _existing([*needed, *optional, *system, *_DEVICES_READ])
    return SandboxPlan(
        str(home),
        tuple(readable),
        tuple(_existing([*writable, *_DEVICES_WRITE])),
        str(tmp),
        memory_mb,
    )
