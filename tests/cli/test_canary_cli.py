"""The canary commands as a person types them: ``deploy --canary``, ``canary``, ``promote``,
``rollback`` ending a canary, ``logs`` naming the deployment that answered, and refusals
as one line on stderr with nothing changed."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from support.polling import wait_until
from support.processes import run_cli

from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace

APP = "restapi_sample"


@pytest.fixture
def ws(sample_workspace: Workspace) -> Workspace:
    sample_workspace.edit(APP, "employee", label="Employee v2")
    return sample_workspace


def _nk(ws: Workspace, *args: str) -> tuple[int, str, str]:
    result = run_cli(*args, home=ws.home)
    return result.returncode, result.stdout, result.stderr


def test_deploy_canary_status_and_promote(ws: Workspace) -> None:
    live = next(d.id for d in ws.deployments(APP) if d.active and d.stage == "prod")
    code, out, err = _nk(ws, "deploy", APP, "--stage", "prod", "--canary", "10")
    canary = live + 1
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == (
        f"deployed {APP} to prod as a canary (deployment {canary}): "
        f"10 % of the calls, deployment {live} the rest"
    )
    code, out, _ = _nk(ws, "canary", APP)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith(f"canary of {APP} on prod since ")
    assert lines[0].endswith(
        f"deployment {canary} serves 10 % of the calls, deployment {live} the rest"
    )
    assert lines[1] == "automatic rollback: off"
    assert lines[2].split() == ["SIDE", "DEPLOYMENT", "CALLS", "5XX", "ERROR_%", "P50_MS", "P99_MS"]
    assert lines[3].split() == ["live", str(live), "0", "0"]
    assert lines[4].split() == ["canary", str(canary), "0", "0"]
    code, out, _ = _nk(ws, "canary", APP, "--json")
    data = json.loads(out)
    assert data["ended"] is None
    assert {k: data["canary"][k] for k in ("live_id", "canary_id", "percent")} == {
        "live_id": live,
        "canary_id": canary,
        "percent": 10,
    }
    assert data["canary"]["canary"] == {
        "deployment": canary,
        "calls": 0,
        "errors": 0,
        "error_rate": None,
        "p50_ms": None,
        "p99_ms": None,
    }
    code, out, _ = _nk(ws, "promote", APP)
    assert (code, out) == (
        0,
        f"{APP} on prod now serves deployment {canary} (the canary) to every call\n",
    )
    assert _nk(ws, "canary", APP)[1] == f"no canary of {APP} on prod\n"


def test_rollback_drops_the_canary_and_keeps_the_live_side(ws: Workspace) -> None:
    live = next(d for d in ws.deployments(APP) if d.active and d.stage == "prod")
    _nk(ws, "deploy", APP, "--stage", "prod", "--canary", "50", "--rollback-above", "2.5")
    assert (
        "above 2.5 % of 5xx answers, once the canary has answered 20 calls"
        in _nk(ws, "canary", APP)[1]
    )
    code, out, _ = _nk(ws, "rollback", APP, "--stage", "prod")
    assert code == 0
    assert out == (
        f"{APP} on prod now serves deployment {live.id} of {live.deployed_at} "
        f"(canary deployment {live.id + 1} dropped)\n"
    )
    assert ws.canary(APP) is None


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--stage", "dev", "--canary", "10"], 1, "canary releases run on prod only, not dev"),
        (["--stage", "prod", "--canary", "0"], 1, "from 1 to 99, not 0"),
        (["--stage", "prod", "--canary", "150"], 1, "from 1 to 99, not 150"),
        (["--stage", "prod", "--canary", "ten"], 2, "'ten' is not a valid integer"),
        (["--stage", "prod", "--canary", "5", "--rollback-above", "100"], 1, "below 100"),
        (["--stage", "prod", "--rollback-above", "5"], 1, "give its percent too"),
    ],
)
def test_bad_canary_deploys_are_one_line_and_change_nothing(
    ws: Workspace, args: list[str], code: int, message: str
) -> None:
    before = (ws.store.generation(), ws.deployments())
    got, out, err = _nk(ws, "deploy", APP, *args)
    assert got == code and out == ""
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err
    assert (ws.store.generation(), ws.deployments()) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["promote", APP], f"{APP} has no canary on prod to promote"),
        (["promote", "nope"], "no application 'nope'"),
        (["canary", "nope"], "no application 'nope'"),
    ],
)
def test_promote_and_canary_refusals(ws: Workspace, args: list[str], message: str) -> None:
    code, out, err = _nk(ws, *args)
    assert (code, out) == (1, "") and err == f"notebook-kit: {message}\n"


def test_logs_lists_entry_numbers_and_the_deployment_that_answered(ws: Workspace) -> None:
    live = {d.stage: d.id for d in ws.deployments(APP) if d.active}
    key = ws.keys()["dev"]
    with BackgroundServer(ws) as server, httpx.Client(base_url=server.url) as client:
        client.get(f"/dev/{APP}/employee/E001", headers={"x-api-key": key})
        client.get("/nowhere")
        wait_until(lambda: len(ws.request_log()) == 2)
    code, out, _ = _nk(ws, "logs")
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split() == [
        "ID", "AT", "STAGE", "APP", "METHOD", "PATH", "STATUS", "MS", "DEPLOYMENT", "CONSUMER",
        "ERROR",
    ]  # fmt: skip
    first = lines[1].split()
    assert (first[0], first[2:6], first[6], first[-2:]) == (
        "1",
        ["dev", APP, "GET", f"/dev/{APP}/employee/E001"],
        "200",
        [str(live["dev"]), "stage:dev"],  # the stage's key is its built-in consumer
    )
    assert lines[2].split()[0] == "2" and " 404 " in lines[2]
    rows = json.loads(_nk(ws, "logs", "--json", "--status", "4xx")[1])
    assert [(r["id"], r["deployment"], r["status"]) for r in rows] == [(2, None, 404)]
    assert _nk(ws, "logs", "--limit", "1", "--stage", "dev")[1].count("\n") == 2
    code, _, err = _nk(ws, "logs", "--status", "9xx")
    assert code == 2 and len(err.splitlines()) == 1


def test_logs_on_an_empty_log(workspace: Workspace, home: Path) -> None:
    assert run_cli("logs", home=home).stdout == "(none)\n"
