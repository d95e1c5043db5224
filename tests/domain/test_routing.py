"""Route conflicts, matching and resource counting (pure, no store)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from notebook_kit.domain import routing
from notebook_kit.domain.models import Definition
from notebook_kit.domain.routing import RouteTable, check_routes, count_resources, resource_tree
from notebook_kit.errors import ConflictError


def d(
    method: str, resource: str, api_id: str | None = None, app: str = "restapi_sample"
) -> Definition:
    """A definition whose ID, by default, is the method and resource: ``get_employee_id``."""
    if api_id is None:
        api_id = method.lower() + "_" + re.sub(r"[{}]", "", resource).replace("/", "_")
    return Definition(app, api_id, api_id, method, resource)


SAMPLE = [
    d("GET", "employee/{id}"),
    d("OPTIONS", "employee/{id}"),
    d("POST", "calculator"),
    d("OPTIONS", "calculator"),
]


def test_count_resources_follows_the_spec_worked_example() -> None:
    # Spec: deploying GET employee/{id} gives /restapi_sample, /employee, /{id}: 3; total 4.
    assert count_resources({"restapi_sample": [d("GET", "employee/{id}")]}) == {
        "total": 4,
        "apps": {"restapi_sample": 3},
    }
    # Adding POST calculator adds one segment: total 5.
    assert count_resources(
        {"restapi_sample": [d("GET", "employee/{id}"), d("POST", "calculator")]}
    ) == {"total": 5, "apps": {"restapi_sample": 4}}


def test_count_resources_of_sample_is_5_with_4_for_the_app() -> None:
    assert count_resources({"restapi_sample": SAMPLE}) == {
        "total": 5,
        "apps": {"restapi_sample": 4},
    }


@pytest.mark.parametrize(
    ("apps", "expected"),
    [
        ({}, {"total": 1, "apps": {}}),
        # methods don't count
        ({"a": [d("GET", "x"), d("POST", "x"), d("DELETE", "x")]}, {"total": 3, "apps": {"a": 2}}),
        # a shared prefix counts once
        ({"a": [d("GET", "x/y"), d("GET", "x/z")]}, {"total": 5, "apps": {"a": 4}}),
        # a parameter position counts once, whatever its name elsewhere in the tree
        ({"a": [d("GET", "x/{id}"), d("GET", "x/{id}/y")]}, {"total": 5, "apps": {"a": 4}}),
        # literal and parameter at one position are two nodes
        ({"a": [d("GET", "x/{id}"), d("GET", "x/me")]}, {"total": 5, "apps": {"a": 4}}),
        # the same path in two applications counts in each
        (
            {"a": [d("GET", "x", app="a")], "b": [d("GET", "x", app="b")]},
            {"total": 5, "apps": {"a": 2, "b": 2}},
        ),
    ],
)
def test_count_resources_counts_distinct_nodes(
    apps: dict[str, list[Definition]], expected: dict[str, Any]
) -> None:
    assert count_resources(apps) == expected


def test_resource_tree_lists_nodes_with_methods() -> None:
    lines = resource_tree({"restapi_sample": SAMPLE})
    assert lines == [
        "/",
        "  /restapi_sample",
        "    /calculator (OPTIONS, POST)",
        "    /employee",
        "      /{id} (GET, OPTIONS)",
    ]


@pytest.mark.parametrize(
    ("definitions", "message"),
    [
        ([d("GET", "x", "one"), d("GET", "/x/", "two")], "two definitions answer GET 'x'"),
        (
            [d("GET", "e/{id}", "one"), d("GET", "e/{id}", "two")],
            "two definitions answer GET 'e/{id}'",
        ),
        (
            [d("GET", "e/{id}", "one"), d("DELETE", "e/{name}", "two")],
            "names that position {id}; one position takes one parameter name",
        ),
        (
            [d("GET", "e/{id}/a", "one"), d("GET", "e/{key}/b", "two")],
            "names that position {id}",
        ),
    ],
)
def test_check_routes_refuses_conflicts(definitions: list[Definition], message: str) -> None:
    with pytest.raises(ConflictError, match=message.replace("{", r"\{").replace("}", r"\}")):
        check_routes("a", definitions)


@pytest.mark.parametrize(
    "definitions",
    [
        SAMPLE,
        [d("GET", "e/{id}"), d("PUT", "e/{id}"), d("GET", "e/me")],
        [d("GET", "a/{x}"), d("GET", "b/{y}")],
        [d("GET", "a/{x}/c"), d("GET", "a/{x}/d/{z}")],
    ],
)
def test_check_routes_accepts_distinct_routes(definitions: list[Definition]) -> None:
    check_routes("a", definitions)


def _table(definitions: list[Definition]) -> RouteTable[str]:
    return RouteTable((x.app, x, x.id) for x in definitions)


@pytest.mark.parametrize(
    ("method", "path", "endpoint", "params", "allowed"),
    [
        ("GET", "restapi_sample/employee/E001", "get_employee_id", {"id": "E001"}, ()),
        ("OPTIONS", "restapi_sample/employee/x", "options_employee_id", {"id": "x"}, ()),
        ("POST", "restapi_sample/calculator", "post_calculator", {}, ()),
        ("GET", "restapi_sample/calculator", None, {}, ("OPTIONS", "POST")),
        ("DELETE", "restapi_sample/employee/E1", None, {"id": "E1"}, ("GET", "HEAD", "OPTIONS")),
        ("HEAD", "restapi_sample/employee/E1", "get_employee_id", {"id": "E1"}, ()),
        ("HEAD", "restapi_sample/calculator", None, {}, ("OPTIONS", "POST")),
        ("TRACE", "restapi_sample/calculator", None, {}, ("OPTIONS", "POST")),
        ("GET", "restapi_sample/employee/é", "get_employee_id", {"id": "é"}, ()),
    ],
)
def test_match_finds_endpoint_or_allowed_methods(
    method: str, path: str, endpoint: str | None, params: dict[str, str], allowed: tuple[str, ...]
) -> None:
    match = _table(SAMPLE).match(method, path.split("/"))
    assert match is not None
    assert (match.endpoint, match.params, match.allowed) == (endpoint, params, allowed)


@pytest.mark.parametrize(
    "path",
    [
        "restapi_sample",  # the application node has no method
        "restapi_sample/employee",  # an inner node with no method
        "restapi_sample/employee/E001/extra",
        "restapi_sample/employee/",  # an empty parameter value
        "other/calculator",
        "restapi_sample/Calculator",  # literals are case-sensitive
    ],
)
def test_match_returns_none_for_unknown_resource(path: str) -> None:
    assert _table(SAMPLE).match("GET", path.split("/")) is None


def test_match_prefers_literal_over_parameter() -> None:
    table = _table([d("GET", "e/{id}", "by_id", app="a"), d("GET", "e/me", "me", app="a")])
    assert table.match("GET", ["a", "e", "me"]).endpoint == "me"  # type: ignore[union-attr]
    found = table.match("GET", ["a", "e", "you"])
    assert found is not None and (found.endpoint, found.params) == ("by_id", {"id": "you"})


def test_match_falls_back_to_parameter_when_literal_branch_dead_ends() -> None:
    table = _table([d("GET", "e/me", "me", app="a"), d("GET", "e/{id}/x", "x", app="a")])
    found = table.match("GET", ["a", "e", "me", "x"])
    assert found is not None and (found.endpoint, found.params) == ("x", {"id": "me"})


def test_route_table_refuses_conflicts_like_check_routes() -> None:
    with pytest.raises(ConflictError):
        _table([d("GET", "x", "one", app="a"), d("GET", "x", "two", app="a")])


@pytest.fixture
def counted_steps(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Count the tree nodes ``match`` visits (wraps the real ``_find``)."""
    visits: list[int] = []
    real = routing._find

    def counting(*args: Any) -> Any:
        visits.append(1)
        return real(*args)

    monkeypatch.setattr(routing, "_find", counting)
    yield visits


def _big_table(count: int) -> RouteTable[str]:
    definitions = [d("GET", "employee/{id}", "emp", app="app")]
    definitions += [d("GET", f"r{i}/{{id}}/leaf{i}", f"d{i}", app="app") for i in range(count)]
    definitions += [d("POST", f"calc{i}", f"c{i}", app=f"app{i % 50}") for i in range(count)]
    return _table(definitions)


def test_match_cost_does_not_grow_with_definition_count(counted_steps: list[int]) -> None:
    small, big = _big_table(5), _big_table(5000)
    steps = []
    for table in (small, big):
        counted_steps.clear()
        match = table.match("GET", ["app", "employee", "E001"])
        assert match is not None and match.endpoint == "emp"
        steps.append(len(counted_steps))
    # one visit per path segment plus the root: depth-bound, not size-bound
    assert steps == [4, 4]
    for table in (small, big):
        counted_steps.clear()
        assert table.match("GET", ["app", "nowhere", "x"]) is None
        assert len(counted_steps) <= 3
