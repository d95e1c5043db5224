"""A canary secret, planted on dev and prod and read by live actions on a real server, is
found nowhere else: not in an export, a git commit, the OpenAPI document, the request
log, a recorded call or its replay, an error answer (dev: with the traceback), what an
action prints, the server's logs, the studio's widget state, or what a notebook shows.
On SQLite and PostgreSQL. Also: deploys pin, rollback restores, a change is live only
at the next deploy."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import httpx
import pytest
from dulwich.repo import Repo

from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.secrets import KEY_ENV, KEY_FILE_ENV
from notebook_kit.workspace.workspace import Workspace

CANARY = "canary-0b7a-9d2f-leak-check"
PROD = "prod-canary-51c3-leak-check"

_ACTIONS = {
    "ok": "res.body = {'length': len(secrets.TOKEN), 'prefix': PREFIX_LEN}",
    "boom": "raise ValueError('cannot reach the API with ' + secrets.TOKEN)",
    "chatty": "print('token is', secrets.TOKEN)\nres.body = {'secrets': repr(secrets)}\n"
    "raise RuntimeError(repr(secrets.TOKEN))",
}


@pytest.fixture(autouse=True)
def key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config" / "secrets.key"
    monkeypatch.setenv(KEY_FILE_ENV, str(path))
    monkeypatch.delenv(KEY_ENV, raising=False)
    return path


@pytest.fixture(params=["sqlite", "postgres"])
def ws(request: pytest.FixtureRequest, tmp_path: Path) -> Workspace:
    url = "" if request.param == "sqlite" else str(request.getfixturevalue("fresh_database"))
    workspace = Workspace(tmp_path / "home", store=url)
    for api_id, action in _ACTIONS.items():
        workspace.create(
            "vault",
            api_id,
            label=api_id,
            method="GET",
            resource=api_id,
            action=action,
            functions="PREFIX_LEN = len(secrets.TOKEN[:6])\n",
        )
    workspace.set_secret("vault", "TOKEN", CANARY, stage="dev")
    workspace.set_secret("vault", "TOKEN", PROD, stage="prod")
    workspace.set_setting("record_requests_dev", "true")
    workspace.deploy("vault", "dev")
    workspace.deploy("vault", "prod")
    return workspace


def _texts(ws: Workspace, tmp_path: Path) -> dict[str, str]:
    """Everything the workspace shows or writes outside an action process."""
    repo = tmp_path / "repo"
    ws.commit("vault", repo, "vault", "Test <t@example.com>")
    git = Repo(str(repo))
    tree = git[git.head()].tree
    blobs = [
        git[entry.sha].data.decode()
        for entry in git.object_store.iter_tree_contents(tree)  # type: ignore[attr-defined]
    ]
    log = ws.request_log()
    return {
        "export": ws.export_file("vault", tmp_path / "vault.json").read_text(),
        "commit": "\n".join(blobs),
        "openapi": json.dumps(ws.openapi("vault", "dev", "http://127.0.0.1")),
        "openapi prod": json.dumps(ws.openapi("vault", "prod", "http://127.0.0.1")),
        "request log": repr(log),
        "replay": "".join(repr(ws.replay(e["id"], "dev")) for e in log if e["stage"] == "dev"),
        "listing": repr(ws.secrets("vault")) + repr(ws.listing("vault")),
        "test runs": "".join(repr(ws.invoke("vault", a)) for a in _ACTIONS),
        "deployments": repr(ws.deployments("vault")),
    }


def state_text(root: object) -> str:
    """Every string in the widgets' synced state (what the page holds)."""
    found: list[str] = []
    stack = [root]
    while stack:
        widget = stack.pop()
        state = widget.get_state()  # type: ignore[attr-defined]
        found += [str(v) for v in state.values() if isinstance(v, (str, list))]
        stack.extend(getattr(widget, "children", ()))
    return "\n".join(found)


def _get(client: httpx.Client, stage: str, key: str, path: str) -> httpx.Response:
    return client.get(f"/{stage}/vault/{path}", headers={"x-api-key": key})


def test_the_canary_secret_is_read_by_the_action_and_found_nowhere_else(
    ws: Workspace, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    keys = ws.keys()
    answers: list[httpx.Response] = []
    with BackgroundServer(ws) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        for stage, value in (("dev", CANARY), ("prod", PROD)):
            ok = _get(client, stage, keys[stage], "ok")
            assert ok.json() == {"length": len(value), "prefix": 6}  # the action read it
            for path in ("boom", "chatty"):
                answers.append(_get(client, stage, keys[stage], path))
        server.sync()
    dev_boom = answers[0]
    assert dev_boom.status_code == 500
    assert "cannot reach the API with [secret TOKEN]" in dev_boom.text  # dev shows errors
    texts = {f"answer {r.url.path}": r.text + repr(r.headers) for r in answers}
    texts.update(_texts(ws, tmp_path))
    from notebook_kit.notebook.ui.studio import Studio

    studio = Studio(ws, poll_interval=None)
    try:
        studio.tabs.selected_index = studio.tabs.children.index(studio.secrets)
        texts["studio"] = state_text(studio) + repr(studio)
    finally:
        studio.close()
    out, err = capfd.readouterr()
    texts["server output"] = out + err
    for where, text in texts.items():
        assert CANARY not in text, f"the dev secret leaked into {where}"
        assert PROD not in text, f"the prod secret leaked into {where}"
    assert "[secret TOKEN]" in texts["test runs"]  # the values were there to redact
    assert "TOKEN" in texts["studio"]


def test_deploy_pins_rollback_restores_and_a_change_waits_for_the_deploy(
    ws: Workspace,
) -> None:
    key = ws.keys()["prod"]
    first = ws.deployments("vault")[-1].id
    with BackgroundServer(ws) as server, httpx.Client(base_url=server.url, timeout=10) as client:

        def length() -> int:
            return int(_get(client, "prod", key, "ok").json()["length"])

        assert length() == len(PROD)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ws.set_secret("vault", "TOKEN", "short", stage="prod")
        assert "keeps serving the secrets it was deployed with" in str(caught[0].message)
        server.sync()
        time.sleep(0.3)
        assert length() == len(PROD)  # live keeps the pinned value
        ws.deploy("vault", "prod")
        server.sync()
        assert length() == len("short")
        ws.rollback("vault", "prod", to=first)
        server.sync()
        assert length() == len(PROD)
