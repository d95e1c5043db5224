"""``http`` in actions: a pooled httpx client with timeouts, JSON helpers, an await form."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from support.local_api import LocalApi, local_api  # noqa: F401  (fixture)

from notebook_kit.builtins.http import HttpClient, shared_client
from notebook_kit.errors import BuiltinError
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace


def test_json_helpers_send_and_decode(local_api: LocalApi) -> None:  # noqa: F811
    http = HttpClient()
    assert http.get_json(local_api.url + "/echo", params={"q": "1"})["query"] == "q=1"
    echoed = http.post_json(local_api.url + "/echo", {"a": [1, 2]})
    assert (echoed["method"], echoed["json"]) == ("POST", {"a": [1, 2]})


def test_plain_methods_return_response_whatever_the_status(local_api: LocalApi) -> None:  # noqa: F811
    http = HttpClient()
    assert http.get(local_api.url + "/teapot").status_code == 418
    for method in ("put", "delete", "patch"):
        assert getattr(http, method)(local_api.url + "/echo").json()["method"] == method.upper()


@pytest.mark.parametrize(
    ("path", "message"),
    [("/teapot", "answered 418"), ("/html", "did not answer JSON"), ("/missing", "answered 404")],
)
def test_get_json_raises_on_error_status_or_non_json(
    local_api: LocalApi,  # noqa: F811
    path: str,
    message: str,
) -> None:
    with pytest.raises(BuiltinError, match=message):
        HttpClient().get_json(local_api.url + path)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:1/", "ConnectError"),
        ("not a url", "not a url"),
        ("ftp://127.0.0.1/x", "UnsupportedProtocol"),
    ],
)
def test_network_failures_raise_builtin_error(url: str, message: str) -> None:
    with pytest.raises(BuiltinError, match=message):
        HttpClient().get(url)


def test_default_timeout_applies_and_can_be_overridden(local_api: LocalApi) -> None:  # noqa: F811
    started = time.monotonic()
    with pytest.raises(BuiltinError, match="timed out"):
        HttpClient(lambda: 0.2).get(local_api.url + "/slow")
    assert time.monotonic() - started < 0.9
    assert HttpClient(lambda: 0.2).get_json(local_api.url + "/slow", timeout=5) == {"slow": True}


def test_connections_are_pooled_per_worker(local_api: LocalApi) -> None:  # noqa: F811
    assert shared_client() is shared_client()
    http = HttpClient()
    for _ in range(3):
        http.get(local_api.url + "/echo")
    assert len({s.peer for s in local_api.seen}) == 1  # one kept-alive connection


def test_async_twins_do_not_block_the_loop(local_api: LocalApi) -> None:  # noqa: F811
    http = HttpClient()

    async def main() -> tuple[list[dict], float]:
        started = time.monotonic()
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        tick = asyncio.create_task(ticker())
        answers = await asyncio.gather(
            http.aget_json(local_api.url + "/slow"), http.aget_json(local_api.url + "/slow")
        )
        tick.cancel()
        assert ticks >= 10  # the loop kept running while both calls waited
        return answers, time.monotonic() - started

    answers, elapsed = asyncio.run(main())
    assert answers == [{"slow": True}, {"slow": True}]
    assert elapsed < 1.8  # the two 1 s calls overlapped


def test_timeout_setting_is_read_per_call(workspace: Workspace) -> None:
    http = workspace.action_env()["http"]
    workspace.set_setting("http_timeout", "2.5")
    assert repr(http) == "<http client, timeout 2.5 s>"


def test_deployed_actions_call_another_api_over_http(
    running_server: BackgroundServer,
    keys: dict[str, str],
    local_api: LocalApi,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    caller = Workspace(tmp_path_factory.mktemp("caller"))
    employee = running_server.endpoint("dev", "restapi_sample", "employee/E003")
    caller.create(
        "proxy",
        "employee",
        label="employee via the sample API",
        method="GET",
        resource="employee",
        requires_auth=False,
        action=f"res.body = http.get_json({employee!r}, headers={{'x-api-key': {keys['dev']!r}}})",
    )
    caller.create(
        "proxy",
        "async",
        label="async echo",
        method="POST",
        resource="echo",
        requires_auth=False,
        action=(
            f"answer = await http.apost_json({local_api.url + '/echo'!r}, {{'n': 1}})\n"
            "res.body = {'upstream': answer['json']}\n"
        ),
    )
    caller.create(
        "proxy",
        "fail",
        label="upstream error",
        method="GET",
        resource="fail",
        requires_auth=False,
        action=f"res.body = http.get_json({local_api.url + '/teapot'!r})",
    )
    caller.deploy("proxy", "dev")
    with BackgroundServer(caller) as server, httpx.Client(base_url=server.url) as client:
        proxied = client.get("/dev/proxy/employee")
        echoed = client.post("/dev/proxy/echo")
        failed = client.get("/dev/proxy/fail")
    assert proxied.status_code == 200 and proxied.json()["id"] == "E003"
    assert echoed.json() == {"upstream": {"n": 1}}
    assert failed.status_code == 500 and "answered 418" in failed.json()["error"]
    assert caller.invoke("proxy", "async").json() == {"upstream": {"n": 1}}  # studio Test run
