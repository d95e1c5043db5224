"""One runner for every way the trusted side runs an action (``ws.invoke``, the Test tab,
examples at deploy and in ``check``, the deploy's load check): each run in a fresh
sandboxed process, ended at its limit whatever it does, so the kernel and the command
line never hang."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.polling import wait_until
from support.processes import run_cli

from notebook_kit.errors import ExampleFailedError, ValidationError
from notebook_kit.workspace.workspace import Workspace

APP = "loops"


@pytest.fixture
def loops(workspace: Workspace) -> Workspace:
    """A definition with a 2 s limit whose saved example loops forever."""
    workspace.create(
        APP,
        "spin",
        label="spin",
        method="GET",
        resource="spin/{n}",
        action="while True:\n    pass\n",
        timeout=2,
    )
    workspace.add_example(
        APP, "spin", "forever", request={"path_parameters": {"n": "1"}}, expect={"status": 200}
    )
    return workspace


def test_ws_invoke_of_a_looping_action_answers_504_at_its_limit(loops: Workspace) -> None:
    began = time.monotonic()
    answer = loops.invoke(APP, "spin", path_parameters={"n": "1"})
    took = time.monotonic() - began
    assert 2.0 <= took < 3.0, took
    assert answer.status == 504
    assert answer.json() == {
        "message": "Endpoint request timed out",
        "action": f"{APP}/spin",
        "timeoutSeconds": 2,
    }
    assert answer.error == "ActionTimeout: timed out after 2 s"
    assert answer.reason == "the action timed out after 2 s"


def test_a_looping_example_makes_deploy_refuse_within_its_limit(loops: Workspace) -> None:
    began = time.monotonic()
    with pytest.raises(ExampleFailedError) as refused:
        loops.deploy(APP, "dev")
    assert time.monotonic() - began < 3.0
    message = str(refused.value)
    assert "example spin/forever fails" in message and "timed out after 2 s" in message
    assert loops.deployments(APP) == []  # nothing changed


def test_the_command_line_never_hangs_on_a_looping_example(loops: Workspace) -> None:
    for args in (("deploy", APP, "--stage", "dev"), ("check", APP)):
        began = time.monotonic()
        done = run_cli(*args, home=loops.home)
        assert time.monotonic() - began < 6.0, args  # the interpreter's start included
        assert done.returncode == 1, done
        said = done.stderr if args[0] == "deploy" else done.stdout  # check reports on stdout
        assert "spin/forever" in said and "the action timed out after 2 s" in said, done
        assert "Traceback" not in done.stderr


def test_user_functions_that_loop_at_load_refuse_the_deploy_within_the_limit(
    workspace: Workspace,
) -> None:
    workspace.create(
        APP,
        "stuck",
        label="stuck",
        method="GET",
        resource="stuck",
        action="res.body = 'x'",
        functions="while True:\n    pass\n",
        timeout=1,
    )
    began = time.monotonic()
    with pytest.raises(ValidationError, match="user functions of loops/stuck did not load: timed"):
        workspace.deploy(APP, "dev")
    assert time.monotonic() - began < 2.5


DEPLOY_AND_SAY_IF_A_ZYGOTE_STARTED = """
import sys
from notebook_kit import Workspace
from notebook_kit.sandbox import processes
ws = Workspace(sys.argv[1])
ws.create("plain", "a", label="a", method="GET", resource="a", action="res.body = 1",
          functions=sys.argv[2])
ws.deploy("plain", "dev")
print(bool(processes._shared))
"""


@pytest.mark.parametrize(
    ("functions", "started"),
    [("", False), ("# only a comment\n", False), ("import math\n", True)],
    ids=["none", "comment", "import"],
)
def test_the_load_check_starts_a_process_only_for_user_functions_that_run_something(
    tmp_path: Path, functions: str, started: bool
) -> None:
    """Loading user functions with no statement cannot fail: a deploy (from the command
    line, say) starts no action process for them."""
    done = subprocess.run(
        [sys.executable, "-c", DEPLOY_AND_SAY_IF_A_ZYGOTE_STARTED, str(tmp_path / "ws"), functions],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(started)]


def test_a_test_run_is_a_fresh_process_each_time(workspace: Workspace, tmp_path: Path) -> None:
    """Nothing one run leaves in its process reaches the next (module state, a patched
    built-in): each runs where nothing ran before."""
    workspace.create(
        APP,
        "count",
        label="count",
        method="GET",
        resource="count",
        action=(
            "import json\njson.runs = getattr(json, 'runs', 0) + 1\nres.body = {'runs': json.runs}"
        ),
    )
    runs = [workspace.invoke(APP, "count").json()["runs"] for _ in range(3)]
    assert runs == [1, 1, 1]


def test_what_a_test_run_starts_ends_with_the_run(workspace: Workspace) -> None:
    """A child the action started (a subprocess, a fork) is killed with the run's
    process: nothing of a test run outlives it."""
    workspace.create(
        APP,
        "kids",
        label="kids",
        method="GET",
        resource="kids",
        action=(
            "import os, subprocess, time\n"
            "spawned = subprocess.Popen(['sleep', '300']).pid\n"
            "forked = os.fork()\n"
            "if forked == 0:\n"
            "    time.sleep(300)\n"
            "    os._exit(0)\n"
            "res.body = {'pids': [spawned, forked]}\n"
        ),
    )
    pids = workspace.invoke(APP, "kids").json()["pids"]
    try:
        wait_until(lambda: not any(_alive(pid) for pid in pids), within=5)
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False
