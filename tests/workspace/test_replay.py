"""Record and replay: a stage that records keeps each call's headers (credentials redacted)
and body (cut to record_max_bytes) in the request log, served by a real server; a recorded
call replays on the deployment that answered it and on another version, the two answers
diffed; refusals are clear and change nothing. The CLI too."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.live import LocalLive
from support.polling import wait_until
from support.processes import run_cli
from support.raw_http import read_until_closed

from notebook_kit.domain.recording import REDACTED
from notebook_kit.errors import NotFoundError, ValidationError
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.runtime.serve.hooks import Hooks
from notebook_kit.workspace.workspace import Workspace

APP = "echo"


def _echo(workspace: Workspace) -> Workspace:
    """echo/say (POST say/{word}) live on dev and prod: it answers what it was sent."""
    workspace.create(
        APP,
        "say",
        label="Say",
        method="POST",
        resource="say/{word}",
        action=(
            "res.body = {'word': req.pathParameters['word'], 'q': req.queryStringParameters,"
            " 'tag': req.headers.get('x-tag'), 'key': req.headers.get('x-api-key'),"
            " 'body': req.body.decode() if isinstance(req.body, bytes) else req.body}"
        ),
    )
    workspace.deploy(APP, "dev")
    workspace.deploy(APP, "prod")
    return workspace


@pytest.fixture
def echo(workspace: Workspace) -> Workspace:
    return _echo(workspace)


def _call(ws: Workspace, stage: str, body: bytes = b"hello", **headers: str) -> int:
    """One real call to ``stage``; the number of its log entry."""
    sent = {"x-api-key": ws.keys()[stage], "X-Tag": "t1", "Cookie": "s=1", **headers}
    before = len(ws.request_log())
    with BackgroundServer(ws) as server, httpx.Client(base_url=server.url) as client:
        answer = client.post(f"/{stage}/{APP}/say/hi?n=1", headers=sent, content=body)
        assert answer.status_code == 200, answer.text
        wait_until(lambda: len(ws.request_log()) > before)  # written by the server
    return int(ws.request_log()[-1]["id"])


def test_nothing_is_recorded_by_default(echo: Workspace) -> None:
    entry = _call(echo, "dev")
    assert echo.store.request_log_entry(entry)["request"] is None  # type: ignore[index]
    assert echo.request_log()[-1]["recorded"] is False
    with pytest.raises(ValidationError, match=r"not recorded \(turn record_requests_dev on"):
        echo.replay(entry)
    assert all(stage.hooks is None for stage in LocalLive(echo).live.stages.values())


def test_a_recording_stage_keeps_headers_redacted_and_the_body_cut(echo: Workspace) -> None:
    echo.set_setting("record_requests_dev", "true")
    echo.set_setting("record_max_bytes", "4")
    runtime = LocalLive(echo)
    assert runtime.live.stages["dev"].hooks is not None
    assert runtime.live.stages["prod"].hooks is None  # prod does not record
    entry = _call(echo, "dev", body=b"hello world", Authorization="Bearer x")
    request = echo.store.request_log_entry(entry)["request"]  # type: ignore[index]
    headers = {name.lower(): value for name, value in request["headers"]}
    assert headers["x-tag"] == "t1"
    assert headers["x-api-key"] == headers["cookie"] == headers["authorization"] == REDACTED
    assert echo.keys()["dev"] not in json.dumps(request, default=str)
    assert (request["method"], request["path"], request["query"]) == (
        "POST",
        f"/dev/{APP}/say/hi",
        "n=1",
    )
    assert (request["body"], request["body_size"], request["truncated"]) == (b"hell", 11, True)
    assert echo.request_log()[-1]["recorded"] is True
    prod = _call(echo, "prod")
    assert echo.store.request_log_entry(prod)["request"] is None  # type: ignore[index]


@pytest.fixture
def recorded(echo: Workspace) -> Iterator[tuple[Workspace, int]]:
    echo.set_setting("record_requests_prod", "true")
    yield echo, _call(echo, "prod")


def test_replay_same_version_gives_the_same_answer(recorded: tuple[Workspace, int]) -> None:
    ws, entry = recorded
    result = ws.replay(entry, "prod")
    assert result.same and result.diff == "" and not result.truncated
    assert (result.app, result.api_id) == (APP, "say")
    live = ws.store.live_deployment_id("prod", APP)  # type: ignore[arg-type]
    assert result.before_version == f"deployment {live}"
    assert result.after_version == f"prod (deployment {live})"
    assert result.before.json() == {
        "word": "hi",
        "q": {"n": "1"},
        "tag": "t1",
        "key": REDACTED,  # replayed as recorded: the key never reached the log
        "body": "hello",
    }


def test_replay_against_the_saved_version_diffs_the_answers(
    recorded: tuple[Workspace, int],
) -> None:
    ws, entry = recorded
    ws.edit(APP, "say", action="res.statusCode = 201; res.body = {'word': 'changed'}")
    result = ws.replay(entry)  # "saved" by default
    assert not result.same and result.after.status == 201
    assert "-status 200" in result.diff and "+status 201" in result.diff
    assert '+  "word": "changed"' in result.diff
    assert result.diff.splitlines()[:2] == [
        f"--- deployment {ws.store.live_deployment_id('prod', APP)}",  # type: ignore[arg-type]
        "+++ saved",
    ]
    # a deployment ID: the dev one serves the first version
    dev = ws.store.live_deployment_id("dev", APP)  # type: ignore[arg-type]
    assert ws.replay(entry, dev).same and ws.replay(entry, str(dev)).same


@pytest.mark.parametrize(
    ("against", "error", "message"),
    [
        ("stage", ValidationError, "'saved', 'dev', 'prod' or a deployment ID, not 'stage'"),
        ("999", NotFoundError, f"no deployment 999 of {APP}"),
    ],
)
def test_replay_refusals(
    recorded: tuple[Workspace, int], against: str, error: type[Exception], message: str
) -> None:
    ws, entry = recorded
    with pytest.raises(error, match=message):
        ws.replay(entry, against)


def test_replay_of_a_version_without_the_route_or_the_stage(
    recorded: tuple[Workspace, int],
) -> None:
    ws, entry = recorded
    ws.edit(APP, "say", resource="speak/{word}")
    with pytest.raises(
        NotFoundError, match=f"POST /prod/{APP}/say/hi reaches no definition in saved"
    ):
        ws.replay(entry)
    ws.undeploy(APP, "dev")
    with pytest.raises(NotFoundError, match=f"{APP} is not deployed to dev"):
        ws.replay(entry, "dev")
    with pytest.raises(NotFoundError, match="no request-log entry 12345"):
        ws.replay(12345)


def test_replay_from_the_cli(recorded: tuple[Workspace, int]) -> None:
    ws, entry = recorded
    ws.edit(APP, "say", action="res.body = {'word': 'changed'}")
    result = run_cli("replay", str(entry), home=ws.home)
    lines = result.stdout.splitlines()
    live = ws.store.live_deployment_id("prod", APP)  # type: ignore[arg-type]
    assert result.returncode == 0
    assert (
        lines[0] == f"replayed entry {entry} ({APP}/say) on deployment {live} (200) and saved (200)"
    )
    assert lines[1:3] == [f"--- deployment {live}", "+++ saved"]
    same = run_cli("replay", str(entry), "--against", "prod", home=ws.home)
    assert same.stdout.splitlines()[1] == "same answer"
    data = json.loads(run_cli("replay", str(entry), "--json", home=ws.home).stdout)
    assert data["same"] is False and data["after"]["body"] == '{"word": "changed"}'
    for args, message in (
        (["replay", "77777"], "no request-log entry 77777"),
        (["replay", str(entry), "--against", "nope"], "not 'nope'"),
    ):
        refused = run_cli(*args, home=ws.home)
        assert refused.returncode == 1 and refused.stdout == ""
        assert len(refused.stderr.splitlines()) == 1 and message in refused.stderr
    assert run_cli("replay", "x", home=ws.home).returncode == 2


def test_recordings_wait_for_calls_in_flight_and_are_dropped_if_cut_short(
    echo: Workspace,
) -> None:
    echo.set_setting("record_requests_dev", "true")
    with BackgroundServer(echo) as server, httpx.Client(base_url=server.url) as client:
        client.post(f"/dev/{APP}/say/a", headers={"x-api-key": echo.keys()["dev"]})
        wait_until(lambda: echo.request_log() and echo.request_log()[-1]["recorded"])
    hooks = Hooks()  # a worker's: recordings wait there for their entries
    hooks.records[-1e9] = {"path": "/cut/short"}  # a call that never logged an entry
    hooks.records[1e18] = {"path": "/in/flight"}
    assert hooks.attach([], 60.0) == []
    assert list(hooks.records) == [1e18]  # the stale one is dropped, the recent kept


def test_a_recorded_call_that_expects_100_continue_keeps_its_body(echo: Workspace) -> None:
    """A stage that records reads a body held back for ``100 Continue`` to keep it."""
    echo.set_setting("record_requests_dev", "true")
    head = (
        f"POST /dev/{APP}/say/hi HTTP/1.1\r\nHost: x\r\nx-api-key: {echo.keys()['dev']}\r\n"
        "Content-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
    )
    with BackgroundServer(echo) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(head.encode())
            assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
            sock.sendall(b"hello")
            assert read_until_closed(sock).startswith(b"HTTP/1.1 200 ")
        wait_until(lambda: echo.request_log() and echo.request_log()[-1]["recorded"])
    entry = echo.store.request_log_entry(int(echo.request_log()[-1]["id"]))
    assert entry is not None and entry["request"]["body"] == b"hello"


def test_record_and_replay_on_postgres(tmp_path: Path, fresh_database: str) -> None:
    ws = _echo(Workspace(tmp_path / "home", store=fresh_database))
    ws.set_setting("record_requests_prod", "true")
    entry = _call(ws, "prod")
    other = Workspace(tmp_path / "other", store=fresh_database)  # another node's view
    assert other.request_log()[-1]["recorded"] is True
    other.edit(APP, "say", action="res.body = {'word': 'pg'}")
    result = other.replay(entry)
    assert result.before.json()["body"] == "hello" and result.after.json() == {"word": "pg"}
