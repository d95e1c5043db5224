"""The tour in docs/tour.md works as written: its blocks, run in order as a newcomer runs
them (the first in a fresh bash, in a fresh home, with this environment's notebook-kit),
print exactly what the tour shows, and nothing on stderr.

In a block, a line starting with ``# `` (or a bare ``#``) is the output of the command
before it; ``...`` in such a line matches anything. The server listens on port 8000, as
the tour says: the blocks run in a private network namespace when one can be made (so
nothing else on the machine can hold the port), else only if port 8000 is free.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TOUR = REPO / "docs" / "tour.md"
INSTALL = "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[notebook]'"
SEPARATOR = "@@@ block "


def tour_blocks() -> list[tuple[str, list[str], list[str]]]:
    """The tour's fenced blocks in order: (language, code lines, expected output lines)."""
    blocks = re.findall(r"^```(bash|python)\n(.*?)^```$", TOUR.read_text(), re.M | re.S)
    parsed = []
    for language, text in blocks:
        code, expected = [], []
        for line in text.splitlines():
            if line == "#" or line.startswith("# "):
                expected.append(line[2:])
            else:
                code.append(line)
        parsed.append((language, code, expected))
    return parsed


def matches(expected: str, line: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, line) is not None


def _runner() -> list[str]:
    """How to run the driver script: in a network namespace of its own if possible."""
    if shutil.which("unshare") and shutil.which("ip"):
        probe = ["unshare", "-n", "ip", "link", "set", "lo", "up"]
        if subprocess.run(probe, capture_output=True, timeout=30).returncode == 0:
            return ["unshare", "-n", "bash", "-c", 'ip link set lo up && exec bash "$0"']
    try:
        socket.create_server(("127.0.0.1", 8000)).close()
    except OSError:
        pytest.skip("port 8000 is taken here and no network namespace can be made")
    return ["bash"]


def _stop_leftovers(workspace: Path) -> None:
    """Kill a detached server a failed run left behind."""
    for record in workspace.glob("serve-*.pid"):
        with contextlib.suppress(ValueError, KeyError, ProcessLookupError):
            os.kill(json.loads(record.read_text())["pid"], signal.SIGKILL)


def test_the_site_home_shows_the_tour_first_block() -> None:
    """docs/index.md shows the tour's first block as tour.md has it (tested below)."""
    first = re.search(r"^```bash\n.*?^```$", TOUR.read_text(), re.M | re.S)
    assert first is not None
    assert first.group(0) in (REPO / "docs" / "index.md").read_text()


def test_the_readme_shows_the_tour_first_block() -> None:
    """The README's tour is the tour's first block as tour.md has it (tested below)."""
    first = re.search(r"^```bash\n.*?^```$", TOUR.read_text(), re.M | re.S)
    assert first is not None
    assert first.group(0) in (REPO / "README.md").read_text()


def test_the_python_api_reference_shows_the_tour_python_block() -> None:
    """docs/reference/api.md's example is the tour's Python block (tested below), so it
    follows the command line's demo/hello without colliding with it."""
    python = re.search(r"^```python\n.*?^```$", TOUR.read_text(), re.M | re.S)
    assert python is not None and 'ws.create("demo", "greet"' in python.group(0)
    assert python.group(0) in (REPO / "docs" / "reference" / "api.md").read_text()


def test_the_tour_blocks_work_in_order_as_written(tmp_path: Path) -> None:
    if shutil.which("curl") is None:
        pytest.skip("the tour calls the server with curl (scripts/test.sh installs it)")
    blocks = tour_blocks()
    assert [language for language, _, _ in blocks] == ["bash", "bash", "python", "python", "bash"]
    first = blocks[0][1]
    assert first[0] == INSTALL  # installed here already: this environment is on PATH
    blocks[0] = ("bash", first[1:], blocks[0][2])

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    driver = []
    for number, (language, code, _) in enumerate(blocks):
        script = work.parent / f"block{number}.{'sh' if language == 'bash' else 'py'}"
        script.write_text("\n".join(code) + "\n")
        run = "bash" if language == "bash" else "python"
        driver.append(f"echo '{SEPARATOR}{number}'")
        driver.append(f"{run} {script} 2> {work.parent / f'block{number}.err'}")
    (tmp_path / "driver.sh").write_text("\n".join(driver) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTEBOOK_KIT_")}
    env.update(
        HOME=str(home),
        VIRTUAL_ENV=sys.prefix,
        PATH=f"{Path(sys.prefix) / 'bin'}{os.pathsep}{os.environ['PATH']}",
    )
    try:
        result = subprocess.run(
            [*_runner(), str(tmp_path / "driver.sh")],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        _stop_leftovers(home / ".notebook_kit")
    assert result.returncode == 0, result.stderr

    outputs = re.split(rf"^{SEPARATOR}\d+\n", result.stdout, flags=re.M)[1:]
    assert len(outputs) == len(blocks), result.stdout
    for number, ((_, _, expected), output) in enumerate(zip(blocks, outputs, strict=True)):
        errors = (tmp_path / f"block{number}.err").read_text()
        assert errors == "", f"block {number} wrote on stderr:\n{errors}"
        lines = output.splitlines()
        assert len(lines) == len(expected), (number, lines)
        for want, got in zip(expected, lines, strict=True):
            assert matches(want, got), f"block {number}: expected {want!r}, got {got!r}"
    assert not list((home / ".notebook_kit").glob("serve-*.pid"))  # stop ended the server
