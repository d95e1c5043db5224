"""The public surface: what ``notebook_kit`` exports, and the pandas views over it."""

from __future__ import annotations

import subprocess
import sys
import types

import pandas as pd
import pytest

import notebook_kit
from notebook_kit import Workspace, errors


def test_exported_members_match_all() -> None:
    # httpx's test_exported_members: everything public is in __all__, and nothing else.
    # dir(), not vars(): the faces (serve, BackgroundServer ...) load on first use
    public = [
        name
        for name in dir(notebook_kit)
        if not isinstance(getattr(notebook_kit, name), types.ModuleType)
        and (not name.startswith("_") or name == "__version__")
    ]
    assert notebook_kit.__all__ == sorted(public)
    for name in notebook_kit.__all__:
        assert getattr(notebook_kit, name) is not None


def test_every_error_class_is_exported_and_one_tree() -> None:
    classes = [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, Exception)
    ]
    assert sorted(c.__name__ for c in classes) == sorted(errors.__all__)
    for cls in classes:
        assert issubclass(cls, notebook_kit.NotebookKitError)
        assert getattr(notebook_kit, cls.__name__) is cls


def test_version_is_the_distribution_version() -> None:
    from importlib.metadata import version

    assert notebook_kit.__version__ == version("notebook-kit")


def test_core_imports_without_pandas() -> None:
    code = (
        "import sys, notebook_kit, notebook_kit.cli; "
        "assert 'pandas' not in sys.modules, 'pandas imported eagerly'"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.fixture
def deployed(sample_workspace: Workspace) -> Workspace:
    ws = sample_workspace
    ws.edit("restapi_sample", "calculator", label="Calculator v2")
    ws.create("tools", "ping", label="Ping", method="GET", resource="ping", action="res.body='ok'")
    ws.deploy("tools", "dev")
    return ws


def test_definitions_frame_has_documented_columns(deployed: Workspace) -> None:
    frame = deployed.definitions_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == [
        "app",
        "id",
        "label",
        "method",
        "resource",
        "content_type",
        "requires_auth",
        "dev",
        "prod",
        "updated_at",
    ]
    assert len(frame) == 5
    rows = frame.set_index(["app", "id"])
    assert rows.loc[("restapi_sample", "calculator"), "dev"] == "changed"
    assert rows.loc[("restapi_sample", "employee"), "prod"] == "deployed"
    assert rows.loc[("tools", "ping"), "prod"] == "not deployed"
    assert rows.loc[("tools", "ping"), "dev"] == "deployed"
    assert frame["requires_auth"].dtype == bool


def test_definitions_frame_filters_by_app_and_label(deployed: Workspace) -> None:
    assert deployed.definitions_frame(app="tools")["id"].tolist() == ["ping"]
    found = deployed.definitions_frame(label="PREFLIGHT")["id"].tolist()
    assert sorted(found) == ["calculator-preflight", "employee-preflight"]


def test_definitions_frame_of_empty_workspace_keeps_columns(workspace: Workspace) -> None:
    frame = workspace.definitions_frame()
    assert frame.empty and "requires_auth" in frame.columns


def test_deployments_frame_has_documented_columns(deployed: Workspace) -> None:
    frame = deployed.deployments_frame()
    columns = ["id", "app", "stage", "deployed_at", "host", "active", "description"]
    assert list(frame.columns) == columns
    assert frame["app"].tolist() == ["restapi_sample", "restapi_sample", "tools"]
    assert frame["stage"].tolist() == ["dev", "prod", "dev"]
    assert frame["active"].tolist() == [True, True, True]
    assert isinstance(frame["deployed_at"].dtype, pd.DatetimeTZDtype)
    assert deployed.deployments_frame(app="tools")["app"].tolist() == ["tools"]


def test_resources_frame_sums_to_stage_totals(deployed: Workspace) -> None:
    frame = deployed.resources_frame()
    assert list(frame.columns) == ["stage", "app", "resources"]
    totals = frame.groupby("stage")["resources"].sum().to_dict()
    assert totals == {"dev": 7, "prod": 5}
    assert totals == {s: v["total"] for s, v in deployed.resources().items()}
    dev = frame[frame["stage"] == "dev"].set_index("app")["resources"].to_dict()
    assert dev == {"(root)": 1, "restapi_sample": 4, "tools": 2}
