"""A kernel without Landlock (older than 5.13, or with it switched off), emulated for real:
``notebook-kit serve`` started under a seccomp filter that answers the ``landlock_*``
system calls with ENOSYS, as such a kernel does. The server says at start what is lost,
serves, and still runs actions in processes of their own, filtered (no Unix sockets)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from support.processes import free_port

from notebook_kit.runtime.process.supervisor import sandbox_warning
from notebook_kit.workspace.workspace import Workspace

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="seccomp")

# Installs the filter, then runs the rest of the command line in its place (the filter
# is kept across exec and by every process started from there).
WITHOUT_LANDLOCK = """
import ctypes, os, struct, sys
LANDLOCK_CALLS = (444, 445, 446)  # create_ruleset, add_rule, restrict_self
program = [(0x20, 0, 0, 0)]  # load the call's number
program += [(0x15, len(LANDLOCK_CALLS) - i, 0, nr) for i, nr in enumerate(LANDLOCK_CALLS)]
program += [(0x06, 0, 0, 0x7FFF0000), (0x06, 0, 0, 0x00050000 | 38)]  # allow; ENOSYS
code = b"".join(struct.pack("HBBI", *op) for op in program)
buffer = ctypes.create_string_buffer(code, len(code))
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0  # no_new_privs
fprog = struct.pack("HxxxxxxP", len(program), ctypes.addressof(buffer))
assert libc.prctl(22, 2, fprog, 0, 0) == 0, os.strerror(ctypes.get_errno())
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
"""

ACTION = """\
import os, socket
try:
    socket.socket(socket.AF_UNIX)
    unix = "made"
except OSError as exc:
    unix = f"denied: {exc}"
res.body = {"pid": os.getpid(), "unix": unix}
"""


def test_a_kernel_without_landlock_serves_and_says_what_is_lost(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "workspace")
    ws.create("where", "am", label="where", method="GET", resource="am", action=ACTION,
              requires_auth=False)  # fmt: skip
    ws.deploy("where", "dev")
    port = free_port()
    log = tmp_path / "serve.log"
    command = [sys.executable, "-c", WITHOUT_LANDLOCK, "-m", "notebook_kit", "serve"]
    with log.open("w") as out:
        server = subprocess.Popen(
            [*command, "--port", str(port)],
            env={**os.environ, "NOTEBOOK_KIT_HOME": str(ws.home)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        while "Ctrl+C stops" not in log.read_text():
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        answer = httpx.get(f"http://127.0.0.1:{port}/dev/where/am", timeout=10)
    finally:
        server.terminate()
        server.wait(15)
    text = log.read_text()
    assert sandbox_warning(0) in text  # said once, at start
    assert text.count("no Landlock") == 1
    assert answer.status_code == 200, answer.text
    assert answer.json()["pid"] != server.pid  # its own process still
    assert answer.json()["unix"].startswith("denied")  # the socket filter still holds


def test_the_warning_names_what_each_kernel_lacks() -> None:
    assert sandbox_warning(7) is None and sandbox_warning(6) is None
    assert "not kept from the workspace store" in (sandbox_warning(0) or "")
    assert "truncating files by name" in (sandbox_warning(2) or "")
    older = sandbox_warning(5) or ""
    assert "signals to the server" in older and "truncating" not in older
