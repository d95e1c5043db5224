"""``ResourcesPanel``: what each stage serves, drawn as nested boxes: the stage with its
total (and the quota, if set), each application with its count, and the path tree with
method badges. The counts are the spec's (``Workspace.resource_trees``)."""

from __future__ import annotations

import html

import ipywidgets as widgets

from ...workspace.resource_trees import AppResources, ResourceNode, StageResources
from ...workspace.workspace import Workspace
from .feedback import Status

__all__ = ["ResourcesPanel"]

# Method badges: a colour each, the method's name always written on it.
_METHOD_COLOURS = {
    "GET": "#0072B2",
    "POST": "#007a57",
    "PUT": "#a86400",
    "DELETE": "#b34700",
    "OPTIONS": "#555555",
}
_BOX = "border:1px solid #c8ccd0;border-radius:6px;padding:6px 10px;margin:6px 0;"


class ResourcesPanel(widgets.VBox):
    """Each stage's resource tree with its counts; ``refresh()`` re-reads the store."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.refresh_button = widgets.Button(
            description="Refresh", icon="refresh", layout=widgets.Layout(width="auto")
        )
        self.refresh_button.add_class("nk-resources-refresh")
        self.status = Status("nk-resources-status")
        self.view = widgets.HTML()
        self.view.add_class("nk-resources-view")
        self.refresh_button.on_click(self._on_refresh_button_click)
        super().__init__([widgets.HBox([self.refresh_button, self.status]), self.view])
        self.add_class("nk-resources")
        self.refresh()

    def refresh(self) -> None:
        stages = self.workspace.resource_trees()
        self.view.value = (
            '<div style="display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start">'
            + "".join(_stage_box(stage) for stage in stages)
            + "</div>"
        )

    def _on_refresh_button_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.refresh_button):
            self.refresh()
            totals = ", ".join(f"{s.stage} {s.total}" for s in self.workspace.resource_trees())
            self.status.ok(f"Resources: {totals}")


def _count(n: int) -> str:
    return f"{n} resource{'s' if n != 1 else ''}"


def _gauge(stage: StageResources) -> str:
    """The total against the quota, as a bar (or a note that there is no quota)."""
    if stage.quota is None:
        return '<div class="nk-resources-quota" style="color:#555">no resource quota</div>'
    share = min(1.0, stage.total / stage.quota)
    colour = "#b34700" if share >= 0.9 else "#0072B2"
    return (
        f'<div class="nk-resources-quota">{stage.total} of {stage.quota} (quota)'
        '<div style="background:#e8eaed;border-radius:3px;height:8px;width:180px">'
        f'<div style="background:{colour};border-radius:3px;height:8px;'
        f'width:{share * 100:.0f}%"></div></div></div>'
    )


def _badge(method: str) -> str:
    colour = _METHOD_COLOURS.get(method, "#555555")
    return (
        f'<span class="nk-method nk-method-{html.escape(method)}" style="background:{colour};'
        "color:white;border-radius:3px;padding:0 5px;margin-left:4px;font-size:11px;"
        f'font-family:monospace">{html.escape(method)}</span>'
    )


def _node(node: ResourceNode, path: str) -> str:
    full = f"{path}{node.name}"
    children = "".join(_node(child, full) for child in node.children)
    nested = (
        f'<div style="margin-left:14px;border-left:1px solid #c8ccd0;padding-left:8px">'
        f"{children}</div>"
        if children
        else ""
    )
    return (
        f'<div class="nk-resource-node" data-path="{html.escape(full)}">'
        f'<span style="font-family:monospace">{html.escape(node.name)}</span>'
        + "".join(_badge(m) for m in node.methods)
        + f"</div>{nested}"
    )


def _app_box(app: AppResources) -> str:
    tree = "".join(_node(n, f"/{app.app}") for n in app.nodes)
    return (
        f'<div class="nk-resource-app" data-app="{html.escape(app.app)}" '
        f'style="{_BOX}background:#f6f8fa">'
        f'<b style="font-family:monospace">/{html.escape(app.app)}</b> '
        f'<span class="nk-resource-count" style="color:#555">{_count(app.resources)}</span>'
        f'<div style="margin-left:6px">{tree}</div></div>'
    )


def _stage_box(stage: StageResources) -> str:
    apps = "".join(_app_box(a) for a in stage.apps)
    body = apps or '<div style="color:#555">Nothing deployed: the root only.</div>'
    return (
        f'<div class="nk-resources-{stage.stage} nk-resources-stage" '
        f'style="{_BOX}min-width:260px;flex:1">'
        f'<div style="font-size:14px"><b>{stage.stage}</b> '
        f'<span class="nk-resources-total">{_count(stage.total)}</span></div>'
        f'{_gauge(stage)}<div style="font-family:monospace;margin-top:4px">/ '
        f'<span style="color:#555;font-family:sans-serif">(root, 1)</span></div>{body}</div>'
    )
