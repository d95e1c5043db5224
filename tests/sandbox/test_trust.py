"""The rules of the files root and the workspace's modes, which hold whatever the kernel
enforces (docs/trust-model.md): a files root may not hold the workspace (set, or given in
the environment), a presigned link never serves the store, everything is owner-only.
Tested with real actions on a real server, real files and real SQLite."""

from __future__ import annotations

import httpx
import pytest
from support.polling import wait_until

from notebook_kit.errors import BuiltinError
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace

APP = "intruder"


def deploy(workspace: Workspace, actions: dict[str, str], stage: str = "dev") -> None:
    """Deploy one key-less GET definition per ``{resource: action}`` to ``stage``."""
    for resource, action in actions.items():
        workspace.create(
            APP,
            resource,
            label=resource,
            method="GET",
            resource=resource,
            action=action,
            requires_auth=False,
        )
    workspace.deploy(APP, stage)


# -- (c) files_root may not hold the store -----------------------------------------------------


@pytest.mark.parametrize("value", [".", "{home}", "{parent}", "files/.."])
def test_files_root_holding_the_store_is_refused_when_set(workspace: Workspace, value: str) -> None:
    from notebook_kit.errors import ValidationError

    text = value.format(home=workspace.home, parent=workspace.home.parent)
    with pytest.raises(ValidationError, match="holds the workspace directory"):
        workspace.set_setting("files_root", text)
    workspace.set_setting("files_root", "files/inside")  # below home is fine
    workspace.set_setting("files_root", str(workspace.home.parent / "elsewhere"))


def test_presigned_link_never_serves_the_store_even_from_the_environment(
    sample_workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    fn = sample_workspace.action_env()["fn"]
    fn.putFile("workspace.sqlite3", {"content": "a decoy in the default root"})
    deploy(sample_workspace, {"link": 'res.body = fn.getPresignedUrl("workspace.sqlite3")'})
    with BackgroundServer(sample_workspace) as server, httpx.Client(timeout=5) as client:
        link = client.get(server.endpoint("dev", APP, "link")).text
        assert client.get(link).text == "a decoy in the default root"
        # set through the environment, the setting skips set_setting: refused at use
        monkeypatch.setenv("NOTEBOOK_KIT_FILES_ROOT", str(sample_workspace.home))
        sample_workspace.set_setting("http_timeout", "9")  # any change: the server reloads
        wait_until(lambda: client.get(link).status_code == 400)
        answer = client.get(link)
        assert b"SQLite format" not in answer.content
        assert "holds the workspace directory" in answer.json()["message"]
        failed = client.get(server.endpoint("dev", APP, "link"))
        assert failed.status_code == 500
        assert "holds the workspace directory" in failed.json()["error"]
        with pytest.raises(BuiltinError, match="holds the workspace directory"):
            fn.getFile("workspace.sqlite3")
        monkeypatch.delenv("NOTEBOOK_KIT_FILES_ROOT")
        sample_workspace.set_setting("http_timeout", "8")
        server.sync()


# -- (f) everything in the workspace is owner-only ---------------------------------------------


def test_workspace_files_and_folders_are_owner_only(sample_workspace: Workspace) -> None:
    env = sample_workspace.action_env()
    env["db"].execute("CREATE TABLE IF NOT EXISTS t (x)")
    fn = env["fn"]
    fn.putFile("deep/er/note.txt", {"content": "x"})
    fn.notebook_kit.artifacts.print("<p>$who</p>", {"who": "me"})
    found = list(sample_workspace.home.rglob("*"))
    assert any(p.parent.name == "artifacts" for p in found)
    assert any(p.name == "environment.sqlite3" for p in found)
    assert any(p.name == "note.txt" for p in found)
    loose = [
        f"{oct(p.stat().st_mode & 0o777)} {p}"
        for p in [sample_workspace.home, *found]
        if p.stat().st_mode & 0o777 != (0o700 if p.is_dir() else 0o600)
    ]
    assert loose == []
