"""Saved examples as Postman tests, in a collection converted from an OpenAPI document.

``openapi-to-postmanv2`` makes one request per operation of an application's document,
with made-up values and no tests. ``with_example_tests`` adds a folder, ``Examples``,
holding one request per saved example (``domain.examples``): a copy of its operation's
converted request (the URL, the key, the headers the converter chose) with the example's
path parameters, query, headers and body, and a test script checking what the example
expects: the status, each JSON field (compared as ``checks.compare`` does: a boolean is
never a number, 1 equals 1.0, a missing field is no value) and the maximum duration.
``newman run`` then runs them as tests.

Pure: the collection, the definitions it was converted from (a stage's deployed ones)
and the examples in; a new collection out, and the keys of the examples it could not
place (their operation is not in the collection).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl

from .examples import Example, parse_path
from .models import Definition

__all__ = ["EXAMPLES_FOLDER", "with_example_tests"]

EXAMPLES_FOLDER = "Examples"

# ``checks._lookup`` and ``checks._same`` in JavaScript, for the test scripts.
_HELPERS = [
    "var MISSING = {};",
    "function field(value, path) {",
    "  for (var i = 0; i < path.length; i++) {",
    "    var key = path[i];",
    "    if (Array.isArray(value) && /^[0-9]+$/.test(key) && Number(key) < value.length) {",
    "      value = value[Number(key)];",
    "    } else if (value !== null && typeof value === 'object' && !Array.isArray(value)",
    "               && Object.prototype.hasOwnProperty.call(value, key)) {",
    "      value = value[key];",
    "    } else {",
    "      return MISSING;",
    "    }",
    "  }",
    "  return value;",
    "}",
]


def _requests(items: Sequence[Any]) -> Iterator[dict[str, Any]]:
    """Every request item of a collection's item tree."""
    for item in items:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("item"), list):
            yield from _requests(item["item"])
        elif isinstance(item.get("request"), dict):
            yield item


def _route(item: Mapping[str, Any]) -> tuple[str, tuple[str, ...]] | None:
    """(method, path segments with ``{name}`` parameters) of a converted request."""
    request = item["request"]
    url = request.get("url")
    path = url.get("path") if isinstance(url, dict) else None
    if not isinstance(path, list) or not isinstance(request.get("method"), str):
        return None
    segments = tuple(
        "{" + str(s)[1:] + "}" if str(s).startswith(":") else str(s) for s in path if s != ""
    )
    return request["method"].upper(), segments


def _script(example: Example) -> list[str]:
    expect = example.expect
    lines = [
        f"pm.test({json.dumps(f'status is {expect.status}')}, function () {{",
        f"  pm.response.to.have.status({expect.status});",
        "});",
    ]
    if expect.json:
        lines += _HELPERS
        lines.append("var body = (function () { try { return pm.response.json(); } catch (e) {")
        lines.append("  return MISSING; } })();")
        for path, wanted in expect.json.items():
            title = json.dumps(f"{path} is {json.dumps(wanted)}")
            segments = json.dumps(list(parse_path(path)))
            lines += [
                f"pm.test({title}, function () {{",
                "  pm.expect(body, 'the body is JSON').to.not.equal(MISSING);",
                f"  var found = field(body, {segments});",
                f"  pm.expect(found, {json.dumps(f'{path} is there')}).to.not.equal(MISSING);",
                f"  pm.expect(found).to.eql({json.dumps(wanted)});",
                "});",
            ]
    if expect.max_ms is not None:
        lines += [
            f"pm.test({json.dumps(f'takes at most {expect.max_ms:g} ms')}, function () {{",
            f"  pm.expect(pm.response.responseTime).to.be.at.most({expect.max_ms:g});",
            "});",
        ]
    return lines


def _example_item(template: Mapping[str, Any], example: Example) -> dict[str, Any]:
    """``template`` (a converted request item) sending ``example``'s request, with tests."""
    request = copy.deepcopy(dict(template["request"]))
    sent = example.request
    url = request["url"]
    url.pop("raw", None)  # built again from its parts by Postman and newman
    for variable in url.get("variable") or []:
        if isinstance(variable, dict) and variable.get("key") in sent.path_parameters:
            variable["value"] = sent.path_parameters[variable["key"]]
    url["query"] = [
        {"key": key, "value": value} for key, value in parse_qsl(sent.query, keep_blank_values=True)
    ]
    given = {name.lower() for name in sent.headers}
    headers = [
        h
        for h in request.get("header") or []
        if isinstance(h, dict)
        and str(h.get("key", "")).lower() in ("accept", "content-type")
        and str(h.get("key", "")).lower() not in given
        and (sent.body or str(h.get("key", "")).lower() != "content-type")
    ]
    headers += [{"key": name, "value": value} for name, value in sent.headers.items()]
    request["header"] = headers
    if sent.body:
        request["body"] = {"mode": "raw", "raw": sent.body}
    else:
        request.pop("body", None)
    name = f"{example.api_id}/{example.name}"
    request["name"] = name
    return {
        "name": name,
        "request": request,
        "response": [],
        "event": [
            {"listen": "test", "script": {"type": "text/javascript", "exec": _script(example)}}
        ],
    }


def with_example_tests(
    collection: Mapping[str, Any],
    definitions: Iterable[Definition],
    examples: Iterable[Example],
) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``collection`` with the folder ``Examples`` (replaced if there): one
    request with tests per example whose operation the collection holds; and the keys
    (``api_id/name``) of the examples left out because it does not."""
    result = copy.deepcopy(dict(collection))
    items = [
        item
        for item in result.get("item") or []
        if not (isinstance(item, dict) and item.get("name") == EXAMPLES_FOLDER)
    ]
    routes: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}
    for item in _requests(items):
        route = _route(item)
        if route is not None:
            routes.setdefault(route, item)
    by_id = {d.id: d for d in definitions}
    placed, missing = [], []
    for example in examples:
        definition = by_id.get(example.api_id)
        template = None
        if definition is not None:
            template = routes.get((definition.method, definition.segments))
        if template is None:
            missing.append(example.key)
        else:
            placed.append(_example_item(template, example))
    result["item"] = [*items, {"name": EXAMPLES_FOLDER, "item": placed}]
    return result, missing
