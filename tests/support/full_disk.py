"""A disk that fills up: a small tmpfs mounted in a mount namespace of the test's own
(``unshare --user --map-root-user --mount``: no root needed where the kernel allows user
namespaces), in which a shell script runs. Outside the script the tmpfs does not exist."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Fills what is left of the tmpfs at $DISK but for $1 bytes.
FILL = f"""{sys.executable} - "$@" <<'PY'
import os, sys
st = os.statvfs(os.environ["DISK"])
left = int(sys.argv[1]) if len(sys.argv) > 1 else 0
with open(os.path.join(os.environ["DISK"], "filler"), "ab") as f:
    f.write(b"\\0" * max(0, st.f_bavail * st.f_frsize - left))
PY"""


def can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=10)
    return done.returncode == 0


def run_on_a_small_disk(
    script: str, mount: Path, size_kb: int = 4096, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run bash ``script`` with a ``size_kb`` tmpfs mounted at ``mount`` (``$DISK``) and
    a ``fill [BYTES_LEFT]`` function filling it; skips where namespaces are not allowed."""
    if not can_unshare():
        pytest.skip("this kernel lets no process make a mount namespace of its own")
    mount.mkdir(parents=True, exist_ok=True)
    prologue = (
        f'set -u\nexport DISK={mount}\nmount -t tmpfs -o size={size_kb}k tmpfs "$DISK"\n'
        f"fill() {{\n{FILL}\n}}\n"
    )
    return subprocess.run(
        ["unshare", "-rm", "bash", "-c", prologue + script],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
