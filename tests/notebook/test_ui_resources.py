"""The Resources tab: each stage's tree as data (counted as the spec counts) and drawn as
nested boxes with method badges, totals and the quota."""

from __future__ import annotations

import pytest

from notebook_kit.domain import routing
from notebook_kit.notebook.ui.resources import ResourcesPanel
from notebook_kit.workspace.resource_trees import stage_resources
from notebook_kit.workspace.workspace import Workspace


def _names(nodes: list) -> list:  # type: ignore[type-arg]
    return [(n.name, n.methods, _names(n.children)) for n in nodes]


def test_sample_tree_matches_the_spec_example(sample_workspace: Workspace) -> None:
    dev = next(s for s in sample_workspace.resource_trees() if s.stage == "dev")
    assert (dev.total, dev.quota) == (5, None)
    (app,) = dev.apps
    assert (app.app, app.resources) == ("restapi_sample", 4)
    assert _names(app.nodes) == [
        ("/calculator", ["OPTIONS", "POST"], []),
        ("/employee", [], [("/{id}", ["GET", "OPTIONS"], [])]),
    ]


@pytest.mark.parametrize(
    "resources",
    [
        ["a"],
        ["a", "a/b", "a/b/c"],
        ["x/{id}", "x/{key}/y", "z"],  # one parameter node at x/*, whatever its name
        ["employee/{id}", "calculator", "employee/{id}/photo", "employee"],
    ],
)
def test_counts_agree_with_routing_count_resources(
    workspace: Workspace, resources: list[str]
) -> None:
    for number, resource in enumerate(resources):
        workspace.create("shop", f"d{number}", label="d", method="GET", resource=resource)
    workspace.create("other", "o", label="o", method="POST", resource="things/{n}")
    live = {"shop": workspace.definitions("shop"), "other": workspace.definitions("other")}
    counted = routing.count_resources(live)
    drawn = stage_resources("dev", live, quota=7)
    assert drawn.total == counted["total"]
    assert {a.app: a.resources for a in drawn.apps} == counted["apps"]
    assert drawn.quota == 7


def test_panel_draws_boxes_badges_and_quota(sample_workspace: Workspace) -> None:
    panel = ResourcesPanel(sample_workspace)
    view = panel.view.value
    assert "<pre>" not in view
    assert view.count('class="nk-resource-app"') == 2  # one box per stage
    assert 'data-path="/restapi_sample/employee/{id}"' in view
    assert 'class="nk-method nk-method-GET"' in view and "nk-method-POST" in view
    assert '<span class="nk-resources-total">5 resources</span>' in view
    assert "no resource quota" in view

    sample_workspace.set_setting("resource_quota", "10")
    sample_workspace.undeploy("restapi_sample", "prod")
    assert "5 resources" in panel.view.value  # not re-read yet
    panel.refresh_button.click()
    assert panel.status.text == "Resources: dev 5, prod 1"
    view = panel.view.value
    assert "5 of 10 (quota)" in view and "1 of 10 (quota)" in view
    assert view.count('class="nk-resource-app"') == 1
    assert "Nothing deployed" in view
