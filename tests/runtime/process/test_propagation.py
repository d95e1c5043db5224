"""Propagation over a shared PostgreSQL store: real ``notebook-kit --store URL serve``
processes, deploys from other processes, and a PostgreSQL restart under a running node."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.pg import PostgresServer
from support.polling import wait_until
from support.processes import run_cli

from notebook_kit.errors import StoreError
from notebook_kit.runtime.process.handles import ServerProcess
from notebook_kit.runtime.process.log_writer import LogWriter
from notebook_kit.runtime.reload.store_link import StoreLink
from notebook_kit.store.log_batches import encode_batch
from notebook_kit.workspace.workspace import Workspace


def _hello(ws: Workspace, answer: str) -> None:
    """An unauthenticated GET /dev/hello/hi answering ``answer``, deployed to dev."""
    if not ws.store.get_application("hello"):
        ws.create("hello", "hi", label="Hi", method="GET", resource="hi", requires_auth=False)
    ws.edit("hello", "hi", action=f"res.body = {answer!r}")
    ws.deploy("hello", "dev")


def _answer(server: ServerProcess) -> str:
    return httpx.get(f"{server.url}/dev/hello/hi", timeout=5).text


@pytest.fixture
def shared(tmp_path: Path, fresh_database: str) -> Iterator[tuple[str, Workspace]]:
    """A store URL with hello deployed ("v1"), and the deploying workspace (this process)."""
    ws = Workspace(tmp_path / "deployer", store=fresh_database)
    _hello(ws, "v1")
    yield fresh_database, ws


def test_two_nodes_with_their_own_homes_serve_a_deploy_within_a_second(
    tmp_path: Path, shared: tuple[str, Workspace]
) -> None:
    url, ws = shared
    # Polling alone would take 30 s: only the notification can make it in time.
    ws.set_setting("reload_interval", "30")
    # The second node runs two Sanic worker processes: each must get the store URL.
    nodes = [ServerProcess(tmp_path / f"node{n}", store=url, workers=n).start() for n in (1, 2)]
    try:
        assert [_answer(node) for node in nodes] == ["v1", "v1"]
        keys = ws.keys()
        assert Workspace(tmp_path / "node1", store=url).keys() == keys
        delays = []
        for version in ("v2", "v3", "v4"):
            _hello(ws, version)
            delays += [wait_until(lambda n=node, v=version: _answer(n) == v) for node in nodes]
        assert max(delays) < 1.0, delays
        assert not (tmp_path / "node1" / "workspace.sqlite3").exists()
    finally:
        for node in nodes:
            node.stop()


def test_the_cli_store_option_deploys_to_the_shared_store(
    tmp_path: Path, shared: tuple[str, Workspace]
) -> None:
    url, ws = shared
    node = ServerProcess(tmp_path / "node", store=url).start()
    try:
        other = tmp_path / "cli-home"
        other.mkdir()
        action = tmp_path / "action.js"
        action.write_text("res.body = 'from cli'")
        edit = ["--store", url, "edit", "hello", "hi", "--action-file", str(action)]
        run_cli(*edit, home=other, check=True)
        run_cli("--store", url, "deploy", "hello", "--stage", "dev", home=other, check=True)
        wait_until(lambda: _answer(node) == "from cli")
        rotated = run_cli("--store", url, "keys", "--rotate", "prod", home=other, check=True)
        assert f"prod {ws.keys()['prod']}" in rotated.stdout
    finally:
        node.stop()


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test's own: it is stopped and started again."""
    server = PostgresServer()
    try:
        yield server
    finally:
        server.remove()


def test_a_node_keeps_serving_through_a_postgres_restart_and_catches_up(
    tmp_path: Path, own_server: PostgresServer
) -> None:
    url = own_server.create_database()
    ws = Workspace(tmp_path / "deployer", store=url)
    _hello(ws, "before")
    node = ServerProcess(tmp_path / "node", store=url).start()
    try:
        assert _answer(node) == "before"
        own_server.stop()
        answers = []
        until = time.monotonic() + 1.5
        while time.monotonic() < until:  # the store is away: the node still answers
            answers.append(_answer(node))
            time.sleep(0.05)
        assert set(answers) == {"before"} and len(answers) > 5
        assert own_server.start() == ""
        _hello(ws, "after")  # this process reconnects too
        wait_until(lambda: _answer(node) == "after", within=6.0)
        log = node.log_path.read_text()
        assert log.count("lost the store") == 1, log
        assert log.count("is back; caught up") == 1, log
        assert "Traceback" not in log, log
        # The requests answered while the store was away reached its request log.
        wait_until(lambda: len(ws.request_log()) >= len(answers) + 2, within=2.0)
    finally:
        node.stop()


def _batch(count: int) -> bytes:
    entry = (1.0, 2.0, "dev", ("GET", "/dev/a/b"), 200, ("dev", "a", "b"), None, 1, None)
    return encode_batch([entry] * count)


def test_the_backlog_keeps_the_newest_and_the_outage_is_logged_once_each_way(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """While the store is away the supervisor keeps the workers' batches, up to a limit
    (the oldest go first), says so once, and once when the store is back."""
    loop = asyncio.new_event_loop()
    try:
        ws = Workspace(tmp_path / "h")
        link = StoreLink(ws.store, loop)
        asyncio.set_event_loop(loop)
        writer = LogWriter(ws, link, ws.settings, lambda: False, limit=3)
        with caplog.at_level("WARNING", logger="notebook_kit.runtime"):
            for count in (2, 2, 1):
                writer.add(_batch(count), [])
                link.failed(StoreError("gone"))
            assert writer.dropped == 2  # the oldest batch went
            assert writer.write()  # the store answers again: what was kept is written
            writer._answered()
            writer._answered()
        link.close()
    finally:
        loop.close()
    assert len(ws.request_log()) == 3
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2, messages
    assert "lost the store" in messages[0] and "gone" in messages[0]
    assert "is back" in messages[1] and "2 request-log entries were dropped" in messages[1]
