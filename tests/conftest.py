"""Shared fixtures: real workspaces on temp SQLite files, real servers on loopback."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from support.pg import fresh_database, postgres_server, postgres_url  # noqa: F401  (fixtures)
from support.processes import run_cli

from notebook_kit import Workspace
from notebook_kit.runtime.process.handles import BackgroundServer, ServerProcess


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A workspace directory, made (empty) as a user makes one before naming it with
    ``--home``: the CLI refuses a named home that does not exist."""
    path = tmp_path / "workspace"
    path.mkdir(mode=0o700)
    return path


@pytest.fixture
def workspace(home: Path) -> Workspace:
    """An empty workspace in a temporary directory."""
    return Workspace(home)


@pytest.fixture
def sample_workspace(workspace: Workspace) -> Workspace:
    """A workspace with restapi_sample installed and deployed to dev and prod."""
    workspace.install_sample()
    return workspace


@pytest.fixture
def running_server(sample_workspace: Workspace) -> Iterator[BackgroundServer]:
    """The runtime serving ``sample_workspace`` in a background thread on a free port."""
    with BackgroundServer(sample_workspace) as server:
        yield server


@pytest.fixture
def client(running_server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=running_server.url, timeout=10) as http:
        yield http


@pytest.fixture
def keys(sample_workspace: Workspace) -> dict[str, str]:
    return sample_workspace.keys()


@pytest.fixture(scope="module")
def http(served_home: Path) -> Iterator[httpx.Client]:
    """A client of one in-thread server per module over the home the module's
    ``served_home`` fixture builds (the probe, the sample, ...)."""
    with (
        BackgroundServer(Workspace(served_home)) as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def stage_keys(served_home: Path) -> dict[str, str]:
    return Workspace(served_home).keys()


@pytest.fixture
def server_process(sample_workspace: Workspace) -> Iterator[ServerProcess]:
    """A separately running ``notebook-kit serve`` over ``sample_workspace``."""
    server = ServerProcess(sample_workspace.home).start()
    yield server
    server.stop()


@pytest.fixture
def start_server_process(
    sample_workspace: Workspace,
) -> Iterator[Callable[..., ServerProcess]]:
    """Start ``notebook-kit serve`` processes over ``sample_workspace`` on demand
    (``start_server_process(workers=2)``); all are stopped at teardown."""
    started: list[ServerProcess] = []

    def start(workers: int = 1) -> ServerProcess:
        server = ServerProcess(sample_workspace.home, workers=workers).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def cli(sample_workspace: Workspace) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run_cli`` over ``sample_workspace``'s home; fails the test when the command fails."""

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, home=sample_workspace.home, check=True)

    return call


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``--dist loadgroup``), the browser tests share one worker, so
    one JupyterLab and one Chromium serve them all."""
    for item in items:
        if "/tests/browser/" in str(item.path):
            item.add_marker(pytest.mark.xdist_group("browser"))


# NK_TEST_CPU_LOG=FILE: each test's CPU seconds (its own process's and the children it
# reaped) appended to FILE, to find where the suite's time goes (docs/guide/development.md).
_CPU_LOG = os.environ.get("NK_TEST_CPU_LOG")


def _cpu_now() -> float:
    return sum(os.times()[:4])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not _CPU_LOG:
        yield
        return
    began = _cpu_now()
    yield
    with open(_CPU_LOG, "a") as log:
        log.write(f"{_cpu_now() - began:.3f} {item.nodeid}\n")
