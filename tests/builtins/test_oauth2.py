"""``fn.notebook_kit.oauth2`` against a real local token endpoint."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from urllib.parse import parse_qs

import httpx
import pytest
from support.local_api import CLIENT_ID, CLIENT_SECRET, LocalApi, local_api  # noqa: F401

from notebook_kit.builtins import oauth2
from notebook_kit.errors import BuiltinError
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    oauth2.clear_cache()
    yield
    oauth2.clear_cache()


@pytest.fixture
def configured(workspace: Workspace, local_api: LocalApi) -> LocalApi:  # noqa: F811
    workspace.set_setting("oauth2_token_url", local_api.url + "/token")
    workspace.set_setting("oauth2_revoke_url", local_api.url + "/revoke")
    workspace.set_setting("oauth2_client_id", CLIENT_ID)
    workspace.set_setting("oauth2_client_secret", CLIENT_SECRET)
    return local_api


def test_token_is_fetched_once_and_cached(workspace: Workspace, configured: LocalApi) -> None:
    first = workspace.action_env()["fn"].notebook_kit.oauth2.token()
    again = workspace.action_env()["fn"].notebook_kit.oauth2.token()  # another fn, same worker
    assert first == again == "token-1"
    assert configured.count("/token") == 1
    form = parse_qs(configured.seen[0].body.decode())
    assert form == {"grant_type": ["client_credentials"]}


def test_scope_is_sent_when_set(workspace: Workspace, configured: LocalApi) -> None:
    workspace.set_setting("oauth2_scope", "read write")
    workspace.action_env()["fn"].notebook_kit.oauth2.token()
    assert parse_qs(configured.seen[0].body.decode())["scope"] == ["read write"]


def test_concurrent_callers_share_one_fetch(workspace: Workspace, configured: LocalApi) -> None:
    client = workspace.action_env()["fn"].notebook_kit.oauth2
    tokens: list[str] = []
    threads = [threading.Thread(target=lambda: tokens.append(client.token())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert tokens == ["token-1"] * 8
    assert configured.count("/token") == 1


@pytest.mark.parametrize(("expires_in", "refetch"), [(2, True), (None, False)])
def test_token_is_renewed_shortly_before_expiry(
    workspace: Workspace, configured: LocalApi, expires_in: int | None, refetch: bool
) -> None:
    configured.expires_in = expires_in
    client = workspace.action_env()["fn"].notebook_kit.oauth2
    client.token()
    time.sleep(1.1)  # a 2 s token is kept for half its life
    assert client.token() == ("token-2" if refetch else "token-1")
    assert configured.count("/token") == (2 if refetch else 1)


def test_revoke_sends_token_and_drops_cache(workspace: Workspace, configured: LocalApi) -> None:
    client = workspace.action_env()["fn"].notebook_kit.oauth2
    assert client.revoke() is False  # nothing cached, nothing sent
    assert configured.count("/revoke") == 0
    client.token()
    assert client.revoke() is True
    assert configured.revoked == ["token-1"]
    form = parse_qs(configured.seen[-1].body.decode())
    assert form["token_type_hint"] == ["access_token"]
    assert client.token() == "token-2"


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("oauth2_client_secret", "wrong", "401: invalid_client"),
        ("oauth2_token_url", "http://127.0.0.1:1/token", "cannot reach"),
        ("oauth2_token_url", "", "oauth2_token_url"),
    ],
)
def test_token_failures_raise_builtin_error(
    workspace: Workspace, configured: LocalApi, setting: str, value: str, message: str
) -> None:
    workspace.set_setting(setting, value)
    with pytest.raises(BuiltinError, match=message):
        workspace.action_env()["fn"].notebook_kit.oauth2.token()


def test_token_answer_without_access_token_is_refused(
    workspace: Workspace, configured: LocalApi
) -> None:
    workspace.set_setting("oauth2_token_url", configured.url + "/echo")
    with pytest.raises(BuiltinError, match="without an access_token"):
        workspace.action_env()["fn"].notebook_kit.oauth2.token()


def test_deployed_action_calls_api_with_cached_token(
    workspace: Workspace, configured: LocalApi
) -> None:
    workspace.create(
        "partner",
        "call",
        label="call partner",
        method="GET",
        resource="call",
        requires_auth=False,
        action=(
            "token = fn.notebook_kit.oauth2.token()\n"
            f"res.body = http.get_json('{configured.url}/echo', "
            "headers={'Authorization': 'Bearer ' + token})\n"
        ),
    )
    workspace.deploy("partner", "dev")
    with BackgroundServer(workspace) as server:
        answers = [httpx.get(server.url + "/dev/partner/call", timeout=10) for _ in range(3)]
    assert [a.json()["auth"] for a in answers] == ["Bearer token-1"] * 3
    assert configured.count("/token") == 1
