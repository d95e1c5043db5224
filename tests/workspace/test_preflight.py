"""``ws.add_preflight``: the OPTIONS definition a browser needs before a JSON call with
the key, made from a definition, refused where the resource already answers OPTIONS,
and answered by a real server once deployed."""

from __future__ import annotations

import httpx
import pytest

from notebook_kit import Workspace
from notebook_kit.errors import ConflictError, NotFoundError, ValidationError
from notebook_kit.runtime.process.handles import BackgroundServer

ECHO = 'res.headers["Access-Control-Allow-Origin"] = "*"\nres.body = req.body\n'


@pytest.fixture
def shop(workspace: Workspace) -> Workspace:
    workspace.create(
        "shop", "add-item", label="Add an item", method="POST", resource="items/{sku}",
        action=ECHO, content_type="application/json",
    )  # fmt: skip
    workspace.create("shop", "get-item", label="An item", method="GET", resource="items/{sku}")
    return workspace


def test_the_preflight_is_saved_and_a_real_server_answers_it_once_deployed(
    shop: Workspace,
) -> None:
    made = shop.add_preflight("shop", "add-item")
    assert shop.get("shop", "add-item-preflight") == made
    shop.deploy("shop", "dev")
    with BackgroundServer(shop) as server:
        answer = httpx.options(
            server.url + "/dev/shop/items/A1",
            headers={
                "Origin": "http://127.0.0.1:9",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type,x-api-key",
            },
        )
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-headers"] == "content-type,x-api-key"
    assert answer.headers["access-control-allow-methods"] == "GET, OPTIONS, POST"
    assert answer.headers["access-control-allow-origin"] == "*"


def test_a_resource_that_answers_options_already_is_refused_and_nothing_changes(
    shop: Workspace,
) -> None:
    shop.add_preflight("shop", "add-item", origin="https://example.org")
    before = shop.definitions("shop")
    with pytest.raises(ConflictError, match="already answers OPTIONS with 'add-item-preflight'"):
        shop.add_preflight("shop", "get-item")  # the same resource
    with pytest.raises(ValidationError, match="origin"):
        shop.add_preflight("shop", "get-item", origin="example.org")
    with pytest.raises(NotFoundError, match="no definition 'nope'"):
        shop.add_preflight("shop", "nope")
    assert shop.definitions("shop") == before
