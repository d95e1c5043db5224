"""Per-stage rate limits (issue 11): a token bucket per API key (or caller IP) and stage,
over a real server on loopback."""

from __future__ import annotations

import time

import httpx
from support.probe import CORS

from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.runtime.serve.limits import _CALLERS_KEPT, RateLimiter, limiter_for
from notebook_kit.workspace.workspace import Workspace


def test_rate_limiter_allows_burst_then_refills_at_rate() -> None:
    limiter = RateLimiter(rate=2.0, burst=3.0)
    assert [limiter.wait("k", 10.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.wait("k", 10.0) == 0.5  # one token comes back every 0.5 s
    assert limiter.wait("other", 10.0) == 0.0  # callers have buckets of their own
    assert limiter.wait("k", 10.5) == 0.0
    assert limiter.wait("k", 10.5) > 0


def test_rate_limiter_table_is_bounded_and_never_refills_a_live_bucket() -> None:
    limiter = RateLimiter(rate=1.0, burst=2.0)
    assert [limiter.wait("real", 10.0) for _ in range(2)] == [0.0, 0.0]
    assert limiter.wait("real", 10.0) > 0  # empty
    flood = [limiter.wait(f"made-up-{i}", 10.0) for i in range(_CALLERS_KEPT + 50)]
    assert len(limiter._buckets) <= _CALLERS_KEPT
    assert flood.count(0.0) == _CALLERS_KEPT - 1 + 2  # past the table: one shared bucket
    assert limiter.wait("real", 10.0) > 0  # still empty: the flood did not refill it
    # once their buckets are full again, the flood's callers are forgotten and new ones fit
    assert limiter.wait("newcomer", 11.0) == 0.0
    assert len(limiter._buckets) == 2  # "real" (not full yet) and the newcomer
    assert limiter.wait("real", 11.0) == 0.0  # one token back at its rate, not by the flood
    assert limiter.wait("real", 11.0) > 0


def test_rate_limiter_is_kept_across_reloads_with_same_settings() -> None:
    first = limiter_for(5.0, None, None)
    assert first is not None and first.burst == 10.0
    assert limiter_for(5.0, None, first) is first
    assert limiter_for(5.0, 3, first) is not first
    assert limiter_for(None, 3, first) is None


def test_runtime_answers_429_past_the_stage_rate_per_key(sample_workspace: Workspace) -> None:
    sample_workspace.set_setting("rate_limit_dev", "0.5")
    sample_workspace.set_setting("rate_limit_burst", "3")
    keys = sample_workspace.keys()
    with BackgroundServer(sample_workspace) as server, httpx.Client(timeout=5) as client:
        dev = server.endpoint("dev", "restapi_sample", "employee/E001")
        own = {"x-api-key": keys["dev"]}
        assert [client.get(dev, headers=own).status_code for _ in range(3)] == [200] * 3
        limited = client.get(dev, headers=own)
        assert limited.status_code == 429
        assert limited.json() == {"message": "Too Many Requests"}
        assert limited.headers["access-control-allow-origin"] == CORS
        assert limited.headers["retry-after"] == "2"
        # a wrong key counts as the caller's IP (a bucket of its own), then is refused
        assert client.get(dev, headers={"x-api-key": "nope"}).status_code == 403
        # ... and never as a key: made-up keys share that one IP bucket
        made_up = [client.get(dev, headers={"x-api-key": f"k{i}"}).status_code for i in range(6)]
        assert made_up[:2] == [403, 403] and set(made_up[2:]) == {429}
        assert client.get(dev, headers=own).status_code == 429  # the key's bucket is its own
        # prod has no limit
        prod = server.endpoint("prod", "restapi_sample", "employee/E001")
        for _ in range(10):
            assert client.get(prod, headers={"x-api-key": keys["prod"]}).status_code == 200


def test_runtime_limits_keyless_calls_by_caller_ip(sample_workspace: Workspace) -> None:
    sample_workspace.set_setting("rate_limit_prod", "5")
    sample_workspace.set_setting("rate_limit_burst", "2")
    with BackgroundServer(sample_workspace) as server, httpx.Client(timeout=5) as client:
        url = server.endpoint("prod", "restapi_sample", "calculator")
        # the CORS preflight needs no key: the caller is its IP
        calls = [client.options(url).status_code for _ in range(3)]
        assert calls[:2] == [200, 200] and calls[2] == 429
        time.sleep(0.3)  # 5/s: a token is back
        assert client.options(url).status_code == 200


def test_runtime_applies_new_rate_limit_without_restart(sample_workspace: Workspace) -> None:
    keys = sample_workspace.keys()
    with BackgroundServer(sample_workspace) as server, httpx.Client(timeout=5) as client:
        dev = server.endpoint("dev", "restapi_sample", "employee/E001")
        own = {"x-api-key": keys["dev"]}
        assert all(client.get(dev, headers=own).status_code == 200 for _ in range(5))
        sample_workspace.set_setting("rate_limit_dev", "0.1")
        sample_workspace.set_setting("rate_limit_burst", "1")
        deadline = time.monotonic() + 5
        while client.get(dev, headers=own).status_code != 429:
            assert time.monotonic() < deadline, "the new limit was never applied"
            time.sleep(0.05)


def test_made_up_keys_on_a_definition_without_auth_share_the_ip_bucket(
    sample_workspace: Workspace,
) -> None:
    sample_workspace.create(
        "restapi_sample",
        "open",
        label="open",
        method="GET",
        resource="open",
        action="res.body = {'ok': True}",
        requires_auth=False,
    )
    sample_workspace.deploy("restapi_sample", "dev")
    sample_workspace.set_setting("rate_limit_dev", "0.5")
    sample_workspace.set_setting("rate_limit_burst", "3")
    with BackgroundServer(sample_workspace) as server, httpx.Client(timeout=5) as client:
        url = server.endpoint("dev", "restapi_sample", "open")
        statuses = [client.get(url, headers={"x-api-key": f"k{i}"}).status_code for i in range(20)]
    assert statuses == [200] * 3 + [429] * 17
