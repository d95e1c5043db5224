"""The CORS preflight made for a definition: what it allows, and bad origins refused."""

from __future__ import annotations

import pytest

from notebook_kit.domain.cors import check_origin, preflight_action, preflight_for
from notebook_kit.domain.models import Definition
from notebook_kit.errors import ValidationError


def _run(action: str) -> dict[str, str]:
    """The headers the preflight's action sets (its source is plain assignments)."""

    class Res:
        statusCode = 0
        headers: dict[str, str] = {}

    res = Res()
    res.headers = {}
    exec(action, {"res": res})
    assert res.statusCode == 200
    return res.headers


def test_the_preflight_allows_content_type_and_the_key_for_every_method_on_the_resource() -> None:
    post = Definition("shop", "add-item", "Add an item", "POST", "items/{sku}")
    siblings = [
        post,
        Definition("shop", "get-item", "An item", "GET", "items/{code}"),  # same resource
        Definition("shop", "all", "All items", "DELETE", "items"),  # another one
    ]
    made = preflight_for(post, siblings)
    assert (made.id, made.method, made.resource, made.requires_auth) == (
        "add-item-preflight",
        "OPTIONS",
        "items/{sku}",
        False,
    )
    assert made.label == "Add an item: CORS preflight"
    assert _run(made.action) == {
        "Access-Control-Allow-Origin": "*",
        "Access-Control-Allow-Methods": "GET, OPTIONS, POST",
        "Access-Control-Allow-Headers": "content-type,x-api-key",
        "Access-Control-Max-Age": "600",
    }


def test_a_long_id_is_shortened_to_fit_with_its_suffix() -> None:
    long = Definition("shop", "x" * 64, "Long", "PUT", "items")
    assert preflight_for(long, [long]).id == "x" * 54 + "-preflight"


@pytest.mark.parametrize("origin", ["https://example.org", "http://127.0.0.1:8888", "*"])
def test_one_origin_or_any(origin: str) -> None:
    assert _run(preflight_action(["GET"], origin))["Access-Control-Allow-Origin"] == origin


@pytest.mark.parametrize(
    "origin", ["example.org", "https://a.org https://b.org", "https://a.org/path", "'; import os"]
)
def test_anything_but_one_origin_is_refused(origin: str) -> None:
    with pytest.raises(ValidationError, match="is not '\\*' nor one origin"):
        check_origin(origin)
