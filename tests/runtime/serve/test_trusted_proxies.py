"""The caller's address behind a real nginx (Debian's, the shipped recipe): with the
proxy in ``trusted_proxies``, ``X-Forwarded-For`` names the caller, so keyless rate
limits and canary shares tell callers apart; what a caller writes in the header itself,
through the proxy or straight to the node, changes nothing.

Callers are told apart by the loopback address they connect from (127.0.0.0/8 is all
loopback); nginx listens on 127.0.0.1 and connects to the node from there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from support.front_door import FrontDoor

from notebook_kit.domain.canary import caller_bucket, caller_identity
from notebook_kit.domain.models import Constant
from notebook_kit.runtime.process.handles import ServerProcess
from notebook_kit.workspace.workspace import Workspace

APP = "who"
SHARE = 50  # the canary's share on prod


@dataclass
class Proxied:
    node: ServerProcess
    nginx: FrontDoor

    def call(self, via: str, stage: str, source: str, forwarded: str | None = None) -> int:
        """The status (dev) or revision (prod) a call from ``source`` gets, through
        nginx (``via="nginx"``) or straight to the node."""
        base = self.nginx.url if via == "nginx" else self.node.url
        headers = {"X-Forwarded-For": forwarded} if forwarded else {}
        transport = httpx.HTTPTransport(local_address=source)
        with httpx.Client(base_url=base, transport=transport, timeout=10) as client:
            response = client.get(f"/{stage}/{APP}/rev", headers=headers)
        if stage == "prod":
            assert response.status_code == 200, response.text
            return int(response.json()["rev"])
        return response.status_code


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxied]:
    home = tmp_path_factory.mktemp("proxied") / "workspace"
    workspace = Workspace(home)
    workspace.create(
        APP, "rev", label="rev", method="GET", resource="rev", requires_auth=False,
        action='res.body = {"rev": const.REV}', constants=[Constant("REV", "Integer", 0)],
    )  # fmt: skip
    workspace.deploy(APP, "dev")
    workspace.deploy(APP, "prod")
    workspace.edit(APP, "rev", constants=[Constant("REV", "Integer", 1)])
    workspace.deploy(APP, "prod", canary=SHARE)
    workspace.set_setting("trusted_proxies", "127.0.0.1")
    workspace.set_setting("rate_limit_dev", "0.05")  # one call per 20 s a caller
    workspace.set_setting("rate_limit_burst", "1")
    node = ServerProcess(Path(home)).start()
    try:
        with FrontDoor([node.port]) as nginx:
            yield Proxied(node, nginx)
    finally:
        node.stop()


def test_callers_behind_the_proxy_have_a_rate_limit_each(proxied: Proxied) -> None:
    assert proxied.call("nginx", "dev", "127.0.0.2") == 200
    assert proxied.call("nginx", "dev", "127.0.0.3") == 200  # not the proxy's budget
    assert proxied.call("nginx", "dev", "127.0.0.2") == 429
    # a header the caller writes itself is kept by nginx, left of the address it adds
    assert proxied.call("nginx", "dev", "127.0.0.2", forwarded="127.0.0.99") == 429


def test_a_caller_that_is_no_trusted_proxy_cannot_name_another_address(
    proxied: Proxied,
) -> None:
    assert proxied.call("node", "dev", "127.0.0.4", forwarded="127.0.0.10") == 200
    assert proxied.call("node", "dev", "127.0.0.4", forwarded="127.0.0.11") == 429
    assert proxied.call("node", "dev", "127.0.0.4") == 429


def _side(address: str) -> int:
    """The revision a keyless caller at ``address`` is served on prod: 1, the canary's,
    when its bucket falls in the share."""
    return 1 if caller_bucket(caller_identity(None, address)) < SHARE else 0


def test_canary_shares_go_by_the_callers_address_behind_the_proxy(proxied: Proxied) -> None:
    sources = [f"127.0.1.{n}" for n in range(1, 13)]
    expected = [_side(source) for source in sources]
    assert set(expected) == {0, 1}  # both sides among them: the test can tell
    assert [proxied.call("nginx", "prod", source) for source in sources] == expected
    # straight to the node, a header names nobody: the peer's side, whatever it says
    spoofs = [proxied.call("node", "prod", "127.0.0.5", forwarded=s) for s in sources]
    assert spoofs == [_side("127.0.0.5")] * len(sources)
