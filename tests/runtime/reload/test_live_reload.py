"""Deploys made by other processes reach a separately running ``notebook-kit serve`` live
(issue 2 §4): within a second, on every worker, and with an atomic switch.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest
from support.polling import stays, wait_until
from support.tree import worker_pids

from notebook_kit.workspace.workspace import Workspace

pytestmark = (
    pytest.mark.serial
)  # deploys live within a second, requests under load: run alone (scripts/test.sh)

APP = "live"

Cli = Callable[..., subprocess.CompletedProcess[str]]


class Served(Protocol):
    """What the ``server_process`` fixtures hand out (conftest's ServerProcess)."""

    url: str
    process: Any


def version_action(version: int) -> str:
    return f'import os\nres.body = {{"version": {version}, "pid": os.getpid()}}\n'


def write_action(directory: Path, version: int) -> str:
    path = directory / f"action_v{version}.py"
    path.write_text(version_action(version))
    return str(path)


def fetch(url: str) -> tuple[int, int | None]:
    """One request on a fresh connection: the status and the version it served."""
    response = httpx.get(url, timeout=5)
    if response.status_code != 200:
        return response.status_code, None
    return 200, response.json()["version"]


@pytest.fixture
def live_url(server_process: Served) -> str:
    return f"{server_process.url}/dev/{APP}/v"


def create_live_app(cli: Cli, tmp_path: Path) -> None:
    cli(
        "create",
        APP,
        "v",
        "--label",
        "versioned",
        "--method",
        "GET",
        "--resource",
        "v",
        "--no-auth",
        "--action-file",
        write_action(tmp_path, 1),
    )


def test_deploy_from_cli_is_live_in_server_process_within_a_second(
    server_process: Served,
    cli: Cli,
    live_url: str,
    tmp_path: Path,
) -> None:
    create_live_app(cli, tmp_path)
    stays(lambda: fetch(live_url) == (404, None), 0.5)  # created, not deployed: not live
    cli("deploy", APP, "--stage", "dev")
    wait_until(lambda: fetch(live_url) == (200, 1))
    assert fetch(f"{server_process.url}/prod/{APP}/v") == (404, None)


def test_edit_without_deploy_keeps_old_behaviour_until_redeploy(
    cli: Cli,
    live_url: str,
    tmp_path: Path,
    sample_workspace: Workspace,
) -> None:
    create_live_app(cli, tmp_path)
    cli("deploy", APP, "--stage", "dev")
    wait_until(lambda: fetch(live_url) == (200, 1))
    cli("edit", APP, "v", "--action-file", write_action(tmp_path, 2))
    assert 'version": 2' in Workspace(sample_workspace.home).get(APP, "v").action
    stays(lambda: fetch(live_url) == (200, 1), 3 * sample_workspace.setting("reload_interval"))
    cli("deploy", APP, "--stage", "dev")
    wait_until(lambda: fetch(live_url) == (200, 2))


def test_undeploy_and_rollback_are_live_within_a_second(
    cli: Cli,
    live_url: str,
    tmp_path: Path,
    sample_workspace: Workspace,
) -> None:
    create_live_app(cli, tmp_path)
    cli("deploy", APP, "--stage", "dev")
    cli("edit", APP, "v", "--action-file", write_action(tmp_path, 2))
    cli("deploy", APP, "--stage", "dev")
    wait_until(lambda: fetch(live_url) == (200, 2))

    other = Workspace(sample_workspace.home)  # another process's view would do the same
    other.rollback(APP, "dev")
    wait_until(lambda: fetch(live_url) == (200, 1))

    cli("undeploy", APP, "--stage", "dev")
    wait_until(lambda: fetch(live_url) == (404, None))

    history = json.loads(cli("deployments", "--app", APP, "--json").stdout)
    latest = max(d["id"] for d in history if d["stage"] == "dev")
    cli("rollback", APP, "--stage", "dev", "--to", str(latest))
    wait_until(lambda: fetch(live_url) == (200, 2))


def test_deploy_reaches_every_worker_within_a_second(
    start_server_process: Callable[..., Served],
    cli: Cli,
    tmp_path: Path,
) -> None:
    create_live_app(cli, tmp_path)
    cli("deploy", APP, "--stage", "dev")
    server = start_server_process(workers=2)
    url = f"{server.url}/dev/{APP}/v"

    def batch() -> list[tuple[int, int, int]]:
        """Eight concurrent requests, each on a fresh connection: (status, version, pid)."""

        def one(_: int) -> tuple[int, int, int]:
            response = httpx.get(url, timeout=5)
            data = response.json()
            return response.status_code, data.get("version", 0), data.get("pid", 0)

        with ThreadPoolExecutor(8) as pool:
            return list(pool.map(one, range(8)))

    assert server.process is not None
    workers = worker_pids(server.process.pid)
    assert len(workers) == 2

    def pids_serving(version: int, deadline: float) -> set[int]:
        """Batches until both workers answered themselves (a call answers from its worker
        once the action runs inline there: after its first fast calls in action
        processes); every answer must be ``version``."""
        seen: set[int] = set()
        while len(seen) < 2 and time.monotonic() < deadline:
            answers = batch()
            assert all(a[:2] == (200, version) for a in answers), answers
            seen.update(a[2] for a in answers if a[2] in workers)
        return seen

    assert len(pids_serving(1, time.monotonic() + 15)) == 2  # both workers up, on version 1

    cli("edit", APP, "v", "--action-file", write_action(tmp_path, 2))
    cli("deploy", APP, "--stage", "dev")
    wait_until(lambda: all(a[:2] == (200, 2) for a in batch()))
    assert len(pids_serving(2, time.monotonic() + 10)) == 2


def test_redeploy_under_load_never_fails_a_request(
    server_process: Served,
    sample_workspace: Workspace,
    keys: dict[str, str],
) -> None:
    """While a client hammers the calculator, the app is redeployed again and again: every
    answer is right, and the served version only moves forward (tables swap whole)."""
    sample_workspace.set_setting("reload_interval", "0.05")  # many swaps in the window
    sample_workspace.set_setting("deployments_kept", "1000")  # every redeploy stays countable
    url = f"{server_process.url}/dev/restapi_sample/calculator"
    cases = [
        (b'{"arg1": 0.1, "arg2": 0.2, "operation": "plus"}', 200, b"0.3"),
        (b'{"arg1": 1.5, "arg2": 1.5, "operation": "minus"}', 200, b"0"),
        (b'{"arg1": 99999999, "arg2": 1e-7, "operation": "plus"}', 200, b"99999999.0000001"),
        (b'{"arg1": "1", "arg2": 2, "operation": "plus"}', 400, b"Input values are incorrect."),
    ]
    failures: list[str] = []
    versions: list[int] = []
    stop = threading.Event()

    def hammer() -> None:
        with httpx.Client(timeout=5, headers={"x-api-key": keys["dev"]}) as client:
            until = time.monotonic() + 2.0
            while time.monotonic() < until and len(versions) < 4000 and not stop.is_set():
                body, status, expected = cases[len(versions) % len(cases)]
                try:
                    response = client.post(url, content=body)
                except httpx.HTTPError as exc:
                    failures.append(f"{type(exc).__name__}: {exc}")
                    versions.append(-1)
                    continue
                if (response.status_code, response.content) != (status, expected):
                    failures.append(f"{response.status_code} {response.content!r}")
                versions.append(int(response.headers.get("x-redeploy", "0")))

    deployer = Workspace(sample_workspace.home)  # another Workspace object than the fixture's
    action = deployer.get("restapi_sample", "calculator").action
    deployments_before = len(deployer.deployments("restapi_sample"))
    thread = threading.Thread(target=hammer)
    thread.start()
    redeploys = 0
    try:
        while thread.is_alive():
            redeploys += 1
            marked = f'{action}res.headers["X-Redeploy"] = "{redeploys}"\n'
            deployer.edit("restapi_sample", "calculator", action=marked)
            deployer.deploy("restapi_sample", "dev")
            time.sleep(0.06)
    finally:
        stop.set()
        thread.join()
    assert failures == []
    assert len(versions) >= 300
    assert len(deployer.deployments("restapi_sample")) == deployments_before + redeploys
    served = sorted(set(versions))
    assert len(served) >= 5, served  # the load really ran across many swaps
    assert versions == sorted(versions)  # never back to an older table
