"""The real ``notebook-kit`` command in a separate process, and a free port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_cli(
    *args: str,
    home: Path,
    check: bool = False,
    input: str | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the real ``notebook-kit`` command in a separate process (``env`` adds to
    the environment; ``cwd`` is its working directory)."""
    result = subprocess.run(
        [sys.executable, "-m", "notebook_kit", *args],
        env={**os.environ, "NOTEBOOK_KIT_HOME": str(home), **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        input=input,
        timeout=60,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"notebook-kit {' '.join(args)} failed: {result.stderr}")
    return result
