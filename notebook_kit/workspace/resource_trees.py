"""Each stage's resource tree as data, for drawing: applications, path nodes with their
methods, and the counts the spec's rules give (the same as ``routing.count_resources``).

A path parameter is one node whatever its name (``/{id}`` and ``/{key}`` at the same place
are one resource); the node shows the first name deployed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..domain.models import Definition, param_name

__all__ = ["AppResources", "ResourceNode", "StageResources", "stage_resources"]


@dataclass
class ResourceNode:
    """One path segment below an application: ``/employee`` or ``/{id}``."""

    name: str
    methods: list[str] = field(default_factory=list)
    children: list[ResourceNode] = field(default_factory=list)

    def count(self) -> int:
        """This node and every node below it."""
        return 1 + sum(child.count() for child in self.children)


@dataclass(frozen=True)
class AppResources:
    app: str
    resources: int  # the application node plus every node below it
    nodes: list[ResourceNode]


@dataclass(frozen=True)
class StageResources:
    stage: str
    total: int  # the root plus every application's resources
    quota: int | None  # the ``resource_quota`` setting, None: no limit
    apps: list[AppResources]


def _app_tree(definitions: Iterable[Definition]) -> list[ResourceNode]:
    root = ResourceNode("")
    shapes: dict[tuple[int, str], ResourceNode] = {}
    for definition in sorted(definitions, key=lambda d: (d.segments, d.method)):
        node = root
        for segment in definition.segments:
            shape = "{}" if param_name(segment) else segment
            child = shapes.get((id(node), shape))
            if child is None:
                child = ResourceNode(f"/{segment}")
                shapes[id(node), shape] = child
                node.children.append(child)
            node = child
        node.methods.append(definition.method)
    return root.children


def stage_resources(
    stage: str, live: Mapping[str, Iterable[Definition]], quota: int | None
) -> StageResources:
    """The tree ``stage`` serves (``live``: application ID to deployed definitions)."""
    apps = []
    for app, definitions in sorted(live.items()):
        nodes = _app_tree(definitions)
        apps.append(AppResources(app, 1 + sum(n.count() for n in nodes), nodes))
    return StageResources(stage, 1 + sum(a.resources for a in apps), quota, apps)
