"""Resource trees: route conflict checks, the compiled route table, and resource counting.

Pure. A ``RouteTable`` is built once from a stage's deployed definitions and never changed
afterwards, so the runtime can swap whole tables atomically. Matching walks one tree node
per path segment: its cost depends on the path's depth, not on how many definitions exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from ..errors import ConflictError
from .models import Definition, param_name

__all__ = [
    "AppRoutes",
    "Match",
    "RouteTable",
    "check_routes",
    "count_resources",
    "resource_tree",
]

E = TypeVar("E")


class _Node(Generic[E]):
    __slots__ = ("literals", "methods", "param", "param_name")

    def __init__(self) -> None:
        self.literals: dict[str, _Node[E]] = {}
        self.param: _Node[E] | None = None
        self.param_name: str | None = None
        self.methods: dict[str, E] = {}


class Match(NamedTuple, Generic[E]):
    """What a path resolved to: an endpoint and its parameters, or the methods it allows.

    A NamedTuple: one is made per request, and a tuple is the cheapest record to make."""

    endpoint: E | None
    params: dict[str, str]
    allowed: tuple[str, ...]


def _insert(root: _Node[E], app: str, definition: Definition, endpoint: E) -> None:
    node = root.literals.setdefault(app, _Node())
    for position, segment in enumerate(definition.segments, start=1):
        name = param_name(segment)
        if name is None:
            node = node.literals.setdefault(segment, _Node())
            continue
        if node.param is None:
            node.param, node.param_name = _Node(), name
        elif node.param_name != name:
            raise ConflictError(
                f"{app}: definition {definition.id!r} names segment {position} of "
                f"{definition.resource!r} {{{name}}}, but another definition names that "
                f"position {{{node.param_name}}}; one position takes one parameter name"
            )
        node = node.param
    if definition.method in node.methods:
        raise ConflictError(
            f"{app}: two definitions answer {definition.method} {definition.resource!r} "
            f"(one is {definition.id!r}); give each method and resource to one definition"
        )
    node.methods[definition.method] = endpoint


def check_routes(app: str, definitions: Iterable[Definition]) -> None:
    """Refuse an application whose definitions collide (same method and resource, or two
    parameter names at one position of the tree)."""
    root: _Node[None] = _Node()
    for definition in definitions:
        _insert(root, app, definition, None)


class AppRoutes(Generic[E]):
    """One application's subtree, built once per deployment. Stage tables are assembled
    from these (``RouteTable.of_apps``), so a reload that changes one application builds
    one subtree and shares every other application's as it is."""

    __slots__ = ("_node",)

    def __init__(self, app: str, entries: Iterable[tuple[Definition, E]]) -> None:
        root: _Node[E] = _Node()
        for definition, endpoint in entries:
            _insert(root, app, definition, endpoint)
        self._node = root.literals.get(app) or _Node()


class RouteTable(Generic[E]):
    """An immutable routing tree for one stage: application IDs, then resource segments."""

    __slots__ = ("_root",)

    def __init__(self, entries: Iterable[tuple[str, Definition, E]] = ()) -> None:
        root: _Node[E] = _Node()
        for app, definition, endpoint in entries:
            _insert(root, app, definition, endpoint)
        self._root = root

    @classmethod
    def of_apps(cls, apps: Mapping[str, AppRoutes[E]]) -> RouteTable[E]:
        """A stage table whose application nodes are ``apps``' subtrees (shared, not
        copied: a table is never changed once built, so sharing is safe)."""
        table: RouteTable[E] = cls()
        table._root.literals = {app: routes._node for app, routes in apps.items()}
        return table

    def match(self, method: str, segments: Sequence[str]) -> Match[E] | None:
        """Resolve ``segments`` (app ID first, already percent-decoded).

        Literal segments win over parameters; the most specific resource with any method
        deployed is the one that answers. None means no such resource (404); a Match with
        no endpoint means the resource exists without this method (405), and ``allowed``
        the methods it has. A resource with GET answers HEAD with its GET endpoint.
        """
        params: dict[str, str] = {}
        node = _find(self._root, segments, 0, params)
        if node is None:
            return None
        methods = node.methods
        endpoint = methods.get(method)
        if endpoint is None and method == "HEAD":
            endpoint = methods.get("GET")  # RFC 9110 9.3.2: the GET's answer, without body
        if endpoint is None:
            allowed = [*methods, "HEAD"] if "GET" in methods else methods
            return Match(None, params, tuple(sorted(allowed)))
        return Match(endpoint, params, ())


def _find(
    node: _Node[E], segments: Sequence[str], index: int, params: dict[str, str]
) -> _Node[E] | None:
    if index == len(segments):
        return node if node.methods else None
    segment = segments[index]
    child = node.literals.get(segment)
    if child is not None:
        found = _find(child, segments, index + 1, params)
        if found is not None:
            return found
    if node.param is not None and segment:
        found = _find(node.param, segments, index + 1, params)
        if found is not None:
            params[node.param_name] = segment  # type: ignore[index]
            return found
    return None


def _app_nodes(definitions: Iterable[Definition]) -> set[tuple[str, ...]]:
    """The distinct tree nodes below an application node, as segment prefixes."""
    nodes: set[tuple[str, ...]] = set()
    for definition in definitions:
        shape = tuple("{}" if param_name(s) else s for s in definition.segments)
        nodes.update(shape[:i] for i in range(1, len(shape) + 1))
    return nodes


def count_resources(apps: Mapping[str, Iterable[Definition]]) -> dict[str, Any]:
    """Count one stage's resources the spec's way.

    Each application node and each distinct path segment below it counts once; the root
    counts once in the stage total; methods do not count. Returns
    ``{"total": int, "apps": {app_id: int}}``.
    """
    per_app = {app: 1 + len(_app_nodes(defs)) for app, defs in sorted(apps.items())}
    return {"total": 1 + sum(per_app.values()), "apps": per_app}


def resource_tree(apps: Mapping[str, Iterable[Definition]]) -> list[str]:
    """The stage's tree as indented lines, methods in brackets (for people, not machines)."""
    lines = ["/"]
    for app, defs in sorted(apps.items()):
        lines.append(f"  /{app}")
        methods: dict[tuple[str, ...], list[str]] = {}
        for d in defs:
            methods.setdefault(d.segments, []).append(d.method)
        shapes = {tuple("{}" if param_name(s) else s for s in d.segments): d.segments for d in defs}
        names: dict[tuple[str, ...], str] = {}
        for shape, segments in shapes.items():
            for i in range(1, len(shape) + 1):
                names.setdefault(shape[:i], segments[i - 1])
        for prefix in sorted(_app_nodes(defs)):
            full = next(
                (
                    segs
                    for segs in methods
                    if tuple("{}" if param_name(s) else s for s in segs) == prefix
                ),
                None,
            )
            marks = f" ({', '.join(sorted(methods[full]))})" if full else ""
            lines.append("  " * (len(prefix) + 1) + f"/{names[prefix]}{marks}")
    return lines
