"""A canary across nodes: two ``notebook-kit serve`` processes with their own homes over one
PostgreSQL store split prod's callers the same way (the split is part of what is live, so
it propagates like a deploy), and ``promote`` or ``rollback`` from a third home ends it on
both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.polling import stays, wait_until
from support.processes import run_cli

from notebook_kit.domain.canary import caller_bucket, caller_identity
from notebook_kit.runtime.process.handles import ServerProcess

APP = "nodes"
URL = f"/prod/{APP}/rev"
CALLERS = [f"node-caller-{n}" for n in range(60)]
PERCENT = 30


@pytest.fixture
def nodes(
    tmp_path: Path, fresh_database: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, list[httpx.Client]]]:
    """Revision 0 live on prod, two nodes serving it, and the CLI's home."""
    monkeypatch.setenv("NOTEBOOK_KIT_STORE", fresh_database)
    homes = [tmp_path / "cli", tmp_path / "node1", tmp_path / "node2"]
    for home in homes:
        home.mkdir()
    action = tmp_path / "rev.py"
    action.write_text('res.body = {"rev": const.REV}\n')
    create = ["create", APP, "rev", "--label", "Revision", "--method", "get", "--no-auth"]
    create += ["--resource", "rev", "--action-file", str(action), "--const", "REV:Integer=0"]
    run_cli(*create, home=homes[0], check=True)
    run_cli("deploy", APP, "--stage", "prod", home=homes[0], check=True)
    servers = [ServerProcess(home) for home in homes[1:]]
    clients: list[httpx.Client] = []
    try:
        for server in servers:
            server.start()
            clients.append(httpx.Client(base_url=server.url, timeout=5))
        yield homes[0], clients
    finally:
        for client in clients:
            client.close()
        for server in servers:
            server.stop()


def _sides(client: httpx.Client) -> dict[str, int | None]:
    """The revision each caller gets from one node."""
    found: dict[str, int | None] = {}
    for caller in CALLERS:
        answer = client.get(URL, headers={"x-api-key": caller})
        found[caller] = answer.json()["rev"] if answer.status_code == 200 else None
    return found


@pytest.mark.parametrize("end", ["promote", "rollback"])
def test_both_nodes_split_the_same_way_and_the_end_reaches_both(
    nodes: tuple[Path, list[httpx.Client]], end: str
) -> None:
    cli_home, clients = nodes
    run_cli("edit", APP, "rev", "--const", "REV:Integer=1", home=cli_home, check=True)
    started = run_cli("deploy", APP, "--stage", "prod", "--canary", str(PERCENT), home=cli_home)
    assert started.returncode == 0 and "as a canary" in started.stdout, started.stderr
    expected = {
        c: 1 if caller_bucket(caller_identity(c, "127.0.0.1")) < PERCENT else 0 for c in CALLERS
    }
    assert 0 < sum(expected.values()) < len(CALLERS)  # both sides have callers
    wait_until(lambda: all(_sides(c) == expected for c in clients), within=2.0)
    stays(lambda: all(_sides(c) == expected for c in clients), 0.5)  # and it holds

    args = ["promote", APP] if end == "promote" else ["rollback", APP, "--stage", "prod"]
    run_cli(*args, home=cli_home, check=True)
    rev = 1 if end == "promote" else 0
    everyone = dict.fromkeys(CALLERS, rev)
    wait_until(lambda: all(_sides(c) == everyone for c in clients), within=2.0)
    status = run_cli("canary", APP, home=cli_home, check=True)
    assert status.stdout.startswith(f"no canary of {APP} on prod")
