"""Many nodes, one store (issue 10): two ``notebook-kit serve`` processes, each with its own
home, sharing one PostgreSQL store; an undeploy, rollback, key rotation or setting change
made by the CLI from a third home is live on both within a second, and stays.

A deploy reaching two nodes, and a node riding out a PostgreSQL restart, are tested in
``test_propagation.py``; deploys through the front door in ``test_front_door.py``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from support.pg import PostgresServer
from support.polling import wait_until
from support.processes import run_cli

from notebook_kit.builtins.sql_db import SqlDatabase
from notebook_kit.runtime.process.handles import ServerProcess

pytestmark = (
    pytest.mark.serial
)  # changes live on both nodes within a second: run alone (scripts/test.sh)

APP = "nodes"
URL = f"/dev/{APP}/rev"


@dataclass
class Nodes:
    """Two serve processes and a third home the CLI works from."""

    cli_home: Path
    servers: list[ServerProcess]
    clients: list[httpx.Client]
    key: str

    def cli(self, *args: str) -> str:
        return run_cli(*args, home=self.cli_home, check=True).stdout

    def keys(self) -> dict[str, str]:
        return dict(line.split() for line in self.cli("keys").splitlines() if line.strip())

    def all(self, check: Callable[[httpx.Client], bool]) -> bool:
        return all(check(client) for client in self.clients)


def _revision(client: httpx.Client, key: str) -> int | None:
    """The revision a node serves with ``key`` (None: not served, or refused)."""
    response = client.get(URL, headers={"x-api-key": key})
    return response.json()["rev"] if response.status_code == 200 else None


@pytest.fixture
def nodes(tmp_path: Path, fresh_database: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Nodes]:
    """Revision 0 then 1 of ``nodes/rev`` deployed to dev (so there is one to roll back to),
    and two nodes with separate homes over one PostgreSQL store."""
    # The nodes and the CLI are child processes: they inherit the store from here.
    monkeypatch.setenv("NOTEBOOK_KIT_STORE", fresh_database)
    homes = [tmp_path / "cli", tmp_path / "node1", tmp_path / "node2"]
    for home in homes:
        home.mkdir()
    action = tmp_path / "rev.py"
    action.write_text('res.body = {"rev": const.REV}\n')
    create = ["create", APP, "rev", "--label", "Revision", "--method", "get"]
    create += ["--resource", "rev", "--action-file", str(action), "--const", "REV:Integer=0"]
    run_cli(*create, home=homes[0], check=True)
    run_cli("deploy", APP, "--stage", "dev", home=homes[0], check=True)
    run_cli("edit", APP, "rev", "--const", "REV:Integer=1", home=homes[0], check=True)
    run_cli("deploy", APP, "--stage", "dev", home=homes[0], check=True)
    servers = [ServerProcess(home) for home in homes[1:]]
    clients: list[httpx.Client] = []
    try:
        for server in servers:
            server.start()
            clients.append(httpx.Client(base_url=server.url, timeout=5))
        # separate homes, one store: no node has a store file of its own
        assert not any((home / "workspace.sqlite3").exists() for home in homes)
        nodes = Nodes(homes[0], servers, clients, "")
        nodes.key = nodes.keys()["dev"]
        assert nodes.all(lambda c: _revision(c, nodes.key) == 1)
        yield nodes
    finally:
        for client in clients:
            client.close()
        for server in servers:
            server.stop()


def _undeploy(nodes: Nodes) -> Callable[[httpx.Client], bool]:
    nodes.cli("undeploy", APP, "--stage", "dev")
    return lambda client: client.get(URL, headers={"x-api-key": nodes.key}).status_code == 404


def _rollback(nodes: Nodes) -> Callable[[httpx.Client], bool]:
    nodes.cli("rollback", APP, "--stage", "dev")
    return lambda client: _revision(client, nodes.key) == 0


def _rotate_key(nodes: Nodes) -> Callable[[httpx.Client], bool]:
    old = nodes.key
    nodes.cli("keys", "--rotate", "dev")
    new = nodes.keys()["dev"]
    assert new != old

    def rotated(client: httpx.Client) -> bool:
        refused = client.get(URL, headers={"x-api-key": old}).status_code == 403
        return refused and _revision(client, new) == 1

    return rotated


def _setting(nodes: Nodes) -> Callable[[httpx.Client], bool]:
    nodes.cli("settings", "set", "max_body_bytes", "100")

    def limited(client: httpx.Client) -> bool:
        response = client.request("GET", URL, headers={"x-api-key": nodes.key}, content=b"x" * 200)
        return response.status_code == 413

    return limited


@pytest.mark.parametrize(
    "change", [_undeploy, _rollback, _rotate_key, _setting], ids=lambda c: c.__name__[1:]
)
def test_a_change_from_the_cli_is_live_on_both_nodes_within_a_second(
    nodes: Nodes, change: Callable[[Nodes], Callable[[httpx.Client], bool]]
) -> None:
    check = change(nodes)  # returns once the CLI has committed the change
    wait_until(lambda: nodes.all(check), within=1.0)
    # and it stays: no node flaps back to what it served before
    for _ in range(10):
        assert nodes.all(check)


def test_a_changed_database_url_reaches_both_nodes_at_the_next_deploy(
    nodes: Nodes, postgres_server: PostgresServer
) -> None:
    """The actions' ``db`` of running nodes follows ``database_url`` from each node's own
    SQLite file to a PostgreSQL database, and on to another, once the application is
    deployed again (they kept the old one, even after a redeploy, until restarted)."""
    urls = []
    for name in ("first", "second"):
        url = postgres_server.create_database().replace("postgresql://", "postgresql+psycopg://")
        SqlDatabase(url).execute(f"CREATE TABLE place AS SELECT '{name}' AS name")
        urls.append(url)
    action = nodes.cli_home / "place.py"
    action.write_text('res.body = db.query("SELECT name FROM place")[0]\n')
    create = ["create", APP, "place", "--label", "Place", "--method", "get"]
    nodes.cli(*create, "--resource", "place", "--action-file", str(action))
    headers = {"x-api-key": nodes.key}

    def place(client: httpx.Client) -> str | None:
        response = client.get(f"/dev/{APP}/place", headers=headers)
        return response.json().get("name") if response.status_code == 200 else None

    nodes.cli("deploy", APP, "--stage", "dev")  # each node's own SQLite file: no table
    wait_until(
        lambda: nodes.all(lambda c: c.get(f"/dev/{APP}/place", headers=headers).status_code == 500)
    )
    for url, name in zip(urls, ("first", "second"), strict=True):
        nodes.cli("settings", "set", "database_url", url)
        nodes.cli("deploy", APP, "--stage", "dev")
        wait_until(lambda name=name: nodes.all(lambda c: place(c) == name), within=1.0)
        for _ in range(5):  # every worker, inline and in its action processes
            assert nodes.all(lambda c, name=name: place(c) == name)
