"""Consumers' limits are exact across nodes (issue 25): three ``notebook-kit serve``
processes (two workers each) share one PostgreSQL store. A quota of 100 a day admits
exactly 100 of 1,000 concurrent calls spread over the nodes (900 answered 429, each with
Retry-After); a rate of N a second admits at most N in any second across the cluster; a
revoked key is refused by every node within a second."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from support.polling import wait_until

from notebook_kit.runtime.process.handles import ServerProcess
from notebook_kit.workspace.workspace import Workspace

APP = "cluster"
PATH = f"/prod/{APP}/stamp"


@dataclass
class Cluster:
    ws: Workspace
    servers: list[ServerProcess]

    @property
    def urls(self) -> list[str]:
        return [server.url for server in self.servers]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, postgres_server: object) -> Iterator[Cluster]:
    url = postgres_server.create_database()  # type: ignore[attr-defined]
    root: Path = tmp_path_factory.mktemp("cluster")
    ws = Workspace(root / "cli", store=url)
    ws.create_application(APP)
    # the action says when it ran: what a rate limit admits is what runs
    ws.create(APP, "stamp", label="Stamp", method="GET", resource="stamp",
              action="import time\nres.body = {'at': time.time()}", requires_auth=True)  # fmt: skip
    ws.deploy(APP, "prod")
    # The clients keep connections alive between waves of calls, and a loaded machine may
    # leave one idle past the default 5 s: the server would close it just as the client
    # reuses it ("Server disconnected"), which is no answer of the runtime's.
    ws.set_setting("keep_alive_timeout", "60")
    servers = [ServerProcess(root / f"node{n}", workers=2, store=url) for n in range(3)]
    try:
        for server in servers:
            server.start()
        yield Cluster(ws, servers)
    finally:
        for server in servers:
            server.stop()


def _status_everywhere(cluster: Cluster, key: str) -> set[int]:
    found = set()
    for url in cluster.urls:
        found.add(httpx.get(url + PATH, headers={"x-api-key": key}, timeout=5).status_code)
    return found


async def _spread(urls: list[str], key: str, count: int) -> list[httpx.Response]:
    """``count`` calls at once, dealt over the nodes in turn."""
    return [answer for _, answer in await _timed_spread(urls, key, count)]


async def _timed_spread(
    urls: list[str], key: str, count: int
) -> list[tuple[float, httpx.Response]]:
    """``_spread``, each answer with the time just before its call was made."""
    limits = httpx.Limits(max_connections=200)
    clients = [httpx.AsyncClient(base_url=u, timeout=30, limits=limits) for u in urls]

    async def call(client: httpx.AsyncClient) -> tuple[float, httpx.Response]:
        sent = time.time()
        return sent, await client.get(PATH, headers={"x-api-key": key})

    try:
        return list(await asyncio.gather(*(call(clients[i % len(clients)]) for i in range(count))))
    finally:
        for client in clients:
            await client.aclose()


def test_a_quota_of_100_admits_exactly_100_of_1000_calls_over_three_nodes(
    cluster: Cluster,
) -> None:
    key = cluster.ws.consumers.create("quota100", quota="100/day")["key"]
    wait_until(lambda: _status_everywhere(cluster, "wrong" + key) == {403})
    # every node knows the key once it answers with it (no unit spent: a wrong key first)
    wait_until(lambda: _known_everywhere(cluster, key))
    spent = _spent(cluster, "quota100")
    answers = asyncio.run(_spread(cluster.urls, key, 1000))
    statuses = [a.status_code for a in answers]
    assert statuses.count(200) == 100 - spent
    assert statuses.count(429) == 900 + spent
    assert all(a.headers.get("retry-after", "").isdigit() for a in answers if a.status_code == 429)
    assert all("ratelimit" in a.headers for a in answers)
    assert _spent(cluster, "quota100") == 100
    # what ran is what was admitted: the action ran exactly 100 times in all
    stats = cluster.ws.store.action_stats()
    wait_until(lambda: cluster.ws.store.action_stats()[("prod", APP, "stamp")]["requests"] >= 100)
    assert (
        cluster.ws.store.action_stats()[("prod", APP, "stamp")]["requests"]
        - (stats.get(("prod", APP, "stamp"), {}).get("requests", 0))
        <= 100 - spent
    )


def test_a_rate_admits_at_most_its_count_in_any_second_across_the_cluster(
    cluster: Cluster,
) -> None:
    rate = 20
    key = cluster.ws.consumers.create("rate20", rate=f"{rate}/s")["key"]
    wait_until(lambda: _known_everywhere(cluster, key))
    time.sleep(1.2)  # the window of the probes is past
    # Each admitted call was admitted between the moment it was sent and the moment its
    # action ran (it says when): a call whose whole span lies inside a one-second window
    # was surely admitted in it. No window may hold more than the rate of those. (The
    # action's time alone is not enough: on a loaded machine an admitted call may wait
    # for its action process, and run beside calls admitted in the next window.)
    spans: list[tuple[float, float]] = []
    began = time.monotonic()
    while time.monotonic() - began < 3.0:  # waves of 60 calls for three seconds
        for sent, answer in asyncio.run(_timed_spread(cluster.urls, key, 60)):
            if answer.status_code == 200:
                spans.append((sent, answer.json()["at"]))
            else:
                assert answer.status_code == 429 and answer.headers["retry-after"] == "1"
    most = max(
        sum(1 for sent, ran in spans if start <= sent and ran < start + 1.0) for start, _ in spans
    )
    assert most <= rate, f"{most} calls were admitted within one second"
    assert len(spans) >= 2 * rate  # and it does admit, second after second


def test_a_revoked_key_is_refused_by_every_node_within_a_second(cluster: Cluster) -> None:
    made = cluster.ws.consumers.create("leaving")
    wait_until(lambda: _status_everywhere(cluster, made["key"]) == {200})
    cluster.ws.consumers.revoke_key("leaving", made["prefix"])
    began = time.monotonic()
    wait_until(lambda: _status_everywhere(cluster, made["key"]) == {403}, within=1.0)
    assert time.monotonic() - began < 1.0


def _known_everywhere(cluster: Cluster, key: str) -> bool:
    return 403 not in _status_everywhere(cluster, key)


def _spent(cluster: Cluster, name: str) -> int:
    """Units of ``name``'s quota taken so far (today)."""
    return cluster.ws.consumers.quotas()[name][0]
