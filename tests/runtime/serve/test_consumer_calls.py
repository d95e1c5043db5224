"""Consumers at the door of a real server (issue 25): a consumer's key is a caller of its
own (scope, expiry, revocation within a second), a limited consumer gets the RateLimit
fields on every answer and a 429 with Retry-After past its limit (exactly its quota, under
concurrent calls), the request log names the consumer and never a key, and usage and a
key's last use reach the store. The stage keys behave as before, byte for byte.

Across three nodes on one PostgreSQL store: ``tests/runtime/process/test_consumer_nodes.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.polling import wait_until

from notebook_kit.runtime.process.handles import ServerProcess
from notebook_kit.workspace.workspace import Workspace

APP = "shop"
OTHER = "other"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, httpx.Client]]:
    """One server (one worker) over a workspace with ``shop/item`` (needs a key) and
    ``shop/open`` (does not) on both stages, and ``other/item`` on prod."""
    home: Path = tmp_path_factory.mktemp("consumers")
    ws = Workspace(home)
    for app in (APP, OTHER):
        ws.create_application(app)
        ws.create(app, "item", label="Item", method="GET", resource="item",
                  action='res.body = {"app": "' + app + '"}', requires_auth=True)  # fmt: skip
    ws.create(APP, "open", label="Open", method="GET", resource="open",
              action='res.body = {"open": True}', requires_auth=False)  # fmt: skip
    for stage in ("dev", "prod"):
        ws.deploy(APP, stage)
    ws.deploy(OTHER, "prod")
    server = ServerProcess(home).start()
    try:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            yield ws, client
    finally:
        server.stop()


def _get(client: httpx.Client, path: str, key: str | None) -> httpx.Response:
    return client.get(path, headers={} if key is None else {"x-api-key": key})


def _log_consumers(ws: Workspace, path: str) -> list[str | None]:
    return [r["consumer"] for r in ws.store.request_log() if r["path"] == path]


def test_a_consumer_key_calls_in_its_scope_and_is_logged_by_name(
    served: tuple[Workspace, httpx.Client],
) -> None:
    ws, client = served
    key = ws.consumers.create("scoped", apps=[APP], stages=["prod"])["key"]
    wait_until(lambda: _get(client, f"/prod/{APP}/item", key).status_code == 200)
    assert _get(client, f"/prod/{OTHER}/item", key).status_code == 403  # not its application
    assert _get(client, f"/dev/{APP}/item", key).status_code == 403  # not its stage
    assert _get(client, f"/prod/{APP}/item", key + "x").status_code == 403  # not a key
    # a definition that needs no key still answers anyone; a known key still names its caller
    assert _get(client, f"/dev/{APP}/open", key).status_code == 200
    assert _get(client, f"/prod/{APP}/open", None).status_code == 200
    prod_key = ws.keys()["prod"]
    assert _get(client, f"/prod/{APP}/item", prod_key).status_code == 200
    wait_until(lambda: _log_consumers(ws, f"/prod/{APP}/item")[-1:] == ["stage:prod"])
    assert _log_consumers(ws, f"/prod/{APP}/item")[-3:] == ["scoped", None, "stage:prod"]
    assert _log_consumers(ws, f"/prod/{OTHER}/item")[-1:] == [None]  # out of scope: no caller
    text = repr(ws.store.request_log())
    assert key not in text and prod_key not in text  # the log never holds a key
    wait_until(lambda: ws.consumers.get("scoped").keys[0].last_used_at is not None)
    used = ws.consumers.get("scoped").keys[0].last_used_at
    assert used is not None and used.startswith(time.strftime("%Y-%m-%d", time.gmtime()))


def test_an_unlimited_answer_is_unchanged_and_carries_no_ratelimit_fields(
    served: tuple[Workspace, httpx.Client],
) -> None:
    ws, client = served
    key = ws.consumers.create("plain", apps=[APP])["key"]
    wait_until(lambda: _get(client, f"/prod/{APP}/item", key).status_code == 200)
    with_consumer = _get(client, f"/prod/{APP}/item", key)
    with_stage_key = _get(client, f"/prod/{APP}/item", ws.keys()["prod"])
    for answer in (with_consumer, with_stage_key):
        assert "ratelimit" not in answer.headers and "ratelimit-policy" not in answer.headers
    assert with_consumer.content == with_stage_key.content
    assert sorted(with_consumer.headers.keys()) == sorted(with_stage_key.headers.keys())


def test_an_expired_key_is_refused_like_any_wrong_key(
    served: tuple[Workspace, httpx.Client],
) -> None:
    ws, client = served
    key = ws.consumers.create("brief", expires="2s")["key"]
    wait_until(lambda: _get(client, f"/prod/{APP}/item", key).status_code == 200)
    wait_until(lambda: _get(client, f"/prod/{APP}/item", key).status_code == 403, within=4.0)
    assert _get(client, f"/prod/{APP}/item", key).json() == {"message": "Forbidden"}


def test_revoking_a_key_or_deleting_a_consumer_is_refused_within_a_second(
    served: tuple[Workspace, httpx.Client],
) -> None:
    ws, client = served
    first = ws.consumers.create("rotating")["key"]
    second = ws.consumers.add_key("rotating")["key"]
    for key in (first, second):  # two keys at once: a caller rotates without a gap
        wait_until(lambda key=key: _get(client, f"/prod/{APP}/item", key).status_code == 200)
    ws.consumers.revoke_key("rotating", first[:8])
    began = time.monotonic()
    wait_until(lambda: _get(client, f"/prod/{APP}/item", first).status_code == 403, within=1.0)
    assert time.monotonic() - began < 1.0
    assert _get(client, f"/prod/{APP}/item", second).status_code == 200
    ws.consumers.delete("rotating")
    wait_until(lambda: _get(client, f"/prod/{APP}/item", second).status_code == 403, within=1.0)


def test_a_quota_admits_exactly_its_count_under_concurrent_calls(
    served: tuple[Workspace, httpx.Client],
) -> None:
    ws, client = served
    key = ws.consumers.create("counted", apps=[APP], quota="25/day")["key"]
    wait_until(lambda: _ready(client, key))
    # the probe above spent one unit: 24 left for 120 calls at once
    statuses, answers = asyncio.run(_burst(client.base_url, f"/prod/{APP}/item", key, 120))
    assert statuses.count(200) == 24 and statuses.count(429) == 96
    refused = next(a for a in answers if a.status_code == 429)
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.headers["ratelimit-policy"].startswith('"quota";q=25;w=86400')
    assert '"quota";r=0;' in refused.headers["ratelimit"]
    admitted = next(a for a in answers if a.status_code == 200)
    assert admitted.json() == {"app": APP}
    assert '"quota";r=' in admitted.headers["ratelimit"]
    wait_until(lambda: _usage(ws, "counted") == (121, 96))
    row = next(r for r in ws.consumers.usage("counted"))
    assert (row["quota_used"], row["quota_left"]) == (25, 0)


@pytest.mark.serial  # counts calls within a one-second window: run alone (scripts/test.sh)
def test_a_rate_refuses_past_its_count_and_admits_again_in_the_next_window(
    served: tuple[Workspace, httpx.Client],
) -> None:
    ws, client = served
    key = ws.consumers.create("paced", apps=[APP], rate="5/s", burst=5)["key"]
    wait_until(lambda: _ready(client, key))
    time.sleep(1.2)  # a fresh window
    statuses, answers = asyncio.run(_burst(client.base_url, f"/prod/{APP}/item", key, 20))
    assert statuses.count(200) == 5
    refused = next(a for a in answers if a.status_code == 429)
    assert refused.headers["retry-after"] == "1"
    assert refused.headers["ratelimit-policy"] == '"rate";q=5;w=1'
    time.sleep(1.2)
    assert _get(client, f"/prod/{APP}/item", key).status_code == 200


def _ready(client: httpx.Client, key: str) -> bool:
    return _get(client, f"/prod/{APP}/item", key).status_code in (200, 429)


def _usage(ws: Workspace, name: str) -> tuple[int, int]:
    rows = [r for r in ws.consumers.usage(name)]
    return sum(r["calls"] for r in rows), sum(r["4xx"] for r in rows)


async def _burst(
    base: httpx.URL, path: str, key: str, count: int
) -> tuple[list[int], list[httpx.Response]]:
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(base_url=str(base), timeout=20, limits=limits) as client:
        answers = await asyncio.gather(
            *(client.get(path, headers={"x-api-key": key}) for _ in range(count))
        )
    return [a.status_code for a in answers], list(answers)
