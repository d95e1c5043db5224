"""What an action can reach (issue 11, docs/trust-model.md): each door a built-in opened
is closed, tested with real actions on a real server, real files and real SQLite."""

from __future__ import annotations

import hmac
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from polling import wait_until

from notebook_kit.errors import BuiltinError
from notebook_kit.runtime.server import BackgroundServer
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


# -- (g) the key check cannot be replaced from an action ---------------------------------------

PATCH_KEY_CHECK = """\
import hmac, sys
app = sys.modules["notebook_kit.runtime.app"]
app._has_key = lambda *a, **k: True
hmac.compare_digest = lambda a, b: True
res.body = "patched"
"""


@pytest.fixture
def restore_key_check() -> Iterator[None]:
    """The action patches this very process (the server runs in a thread): undo it."""
    import notebook_kit.runtime.app as app

    saved: tuple[Any, Any] = (app._has_key, hmac.compare_digest)
    yield
    app._has_key, hmac.compare_digest = saved  # type: ignore[method-assign]


def test_action_patching_the_key_check_does_not_open_other_definitions(
    sample_workspace: Workspace, restore_key_check: None
) -> None:
    deploy(sample_workspace, {"patch": PATCH_KEY_CHECK})
    with BackgroundServer(sample_workspace) as server, httpx.Client(timeout=5) as client:
        secured = server.endpoint("dev", "restapi_sample", "employee/E001")
        assert client.get(secured).status_code == 403
        assert client.get(server.endpoint("dev", APP, "patch")).text == "patched"
        assert sys.modules["notebook_kit.runtime.app"]._has_key(None, b"")  # patched indeed
        assert client.get(secured).status_code == 403
        assert client.get(secured, headers={"x-api-key": "wrong"}).status_code == 403
        key = sample_workspace.keys()["dev"]
        assert client.get(secured, headers={"x-api-key": key}).status_code == 200


# -- (b) db cannot ATTACH the store ------------------------------------------------------------


def test_db_refuses_attach_of_files_and_extension_loading(workspace: Workspace) -> None:

    db = workspace.database
    store = workspace.home / "workspace.sqlite3"
    assert store.exists()
    refused = [
        (f"ATTACH '{store}' AS s", ()),
        ("ATTACH ? AS s", [str(store)]),
        (f"ATTACH 'file:{store}?mode=ro' AS s", ()),
        ("ATTACH 'elsewhere.sqlite3' AS s", ()),
        ("SELECT load_extension('x')", ()),
        ("PRAGMA writable_schema = ON", ()),
        ("PRAGMA trusted_schema = ON", ()),
    ]
    for sql, params in refused:
        with pytest.raises(BuiltinError, match="not authorized"):
            db.execute(sql, params)
    db.execute("ATTACH ':memory:' AS scratch")  # a scratch database is fine
    db.execute("CREATE TABLE scratch.t (x)")
    assert db.query("PRAGMA journal_mode") == [{"journal_mode": "wal"}]
    assert db.query("SELECT abs(-2) AS a") == [{"a": 2}]


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


# -- (a) nothing on fn hands out the store, the context or the settings ------------------------


def _reachable(root: object, depth: int = 4) -> Iterator[tuple[str, object]]:
    """Every object reachable from ``root`` by plain (non-dunder) attribute access."""
    seen: set[int] = set()
    todo: list[tuple[str, object, int]] = [("fn", root, 0)]
    while todo:
        path, obj, level = todo.pop()
        if id(obj) in seen or level > depth:
            continue
        seen.add(id(obj))
        yield path, obj
        names = set(dir(obj))
        names.update(getattr(obj, "__dict__", {}))
        for name in sorted(n for n in names if not n.startswith("__")):
            try:
                value = getattr(obj, name)
            except Exception:
                continue
            if not isinstance(value, (str, bytes, int, float, bool, type(None))):
                todo.append((f"{path}.{name}", value, level + 1))


def test_fn_exposes_no_store_context_or_settings(sample_workspace: Workspace) -> None:
    import sqlite3

    from notebook_kit.builtins.context import BuiltinContext
    from notebook_kit.store.store import Store

    fn = sample_workspace.action_env()["fn"]
    fn.putFile("x.txt", {"content": "x"})  # the file storage is open
    assert fn.getFile("x.txt")["content"] == "x"
    forbidden = (Store, BuiltinContext, Workspace, sqlite3.Connection)
    sample_workspace.set_setting("public_base_url", "http://example.invalid")
    assert fn.getPresignedUrl("x.txt").startswith("http://example.invalid/")
    leaks = []
    for path, obj in _reachable(fn):
        if isinstance(obj, forbidden):
            leaks.append(path)
        if isinstance(obj, dict) and ("presign_secret" in obj or "smtp_password" in obj):
            leaks.append(path)
    assert leaks == []
    assert not [n for n in dir(fn) if "context" in n.lower() or n in ("_files", "_setting")]


# -- (e) a symlink flipped during reads never lets a read escape the root ----------------------


def test_file_reads_never_escape_the_root_while_a_symlink_flips(tmp_path: Path) -> None:
    import os
    import threading
    import time

    from notebook_kit.builtins.storage import LocalFileStorage
    from notebook_kit.errors import NotebookKitError

    root = tmp_path / "root"
    storage = LocalFileStorage(root)
    storage.write("inside.txt", b"inside", "text/plain")
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"OUTSIDE SECRET")
    link = root / "flip"
    stop = threading.Event()

    def flip() -> None:
        targets = [str(root / "inside.txt"), str(outside)]
        n = 0
        while not stop.is_set():
            n += 1
            spare = root / f".flip{n % 2}"
            spare.unlink(missing_ok=True)
            os.symlink(targets[n % 2], spare)
            os.replace(spare, link)  # atomic: the link always exists

    flipper = threading.Thread(target=flip)
    flipper.start()
    escaped = served = refused = 0
    deadline = time.monotonic() + 1.0
    try:
        while time.monotonic() < deadline:
            try:
                data = storage.read("flip").data
            except NotebookKitError:
                refused += 1
                continue
            served += 1
            escaped += data == b"OUTSIDE SECRET"
    finally:
        stop.set()
        flipper.join()
    assert escaped == 0
    assert served > 0 and refused > 0  # both sides of the race were hit


# -- (d) an action cannot open the store's files (and so cannot drop the server's locks) -------

OPEN_STORE = """\
import sqlite3
kind = req.queryStringParameters["kind"]
name = str(const.HOME) + "/workspace.sqlite3" + req.queryStringParameters.get("suffix", "")
try:
    if kind == "sqlite":
        conn = sqlite3.connect(name)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        conn.close()
    else:
        open(name, "rb").close()
    res.body = "opened"
except PermissionError as exc:
    res.body = "refused: " + str(exc)
"""


def test_action_cannot_open_the_store_and_key_rotation_is_still_followed(
    sample_workspace: Workspace,
) -> None:
    import sqlite3

    from conftest import run_cli

    from notebook_kit.domain.models import Constant

    home = sample_workspace.home
    sample_workspace.create(
        APP,
        "open-store",
        label="open",
        method="GET",
        resource="open-store",
        action=OPEN_STORE,
        requires_auth=False,
        constants=[Constant("HOME", "String", str(home))],
    )
    sample_workspace.deploy(APP, "dev")
    with BackgroundServer(sample_workspace) as server, httpx.Client(timeout=5) as client:
        url = server.endpoint("dev", APP, "open-store")
        for params in (
            {"kind": "sqlite"},
            {"kind": "file"},
            {"kind": "file", "suffix": "-wal"},
            {"kind": "sqlite", "suffix": "-shm"},
        ):
            answer = client.get(url, params=params)
            assert answer.text.startswith("refused: actions may not open the workspace store")
        secured = server.endpoint("dev", "restapi_sample", "employee/E001")
        old = sample_workspace.keys()["dev"]
        assert client.get(secured, headers={"x-api-key": old}).status_code == 200
        run_cli("keys", "--rotate", "dev", home=home, check=True)  # another process
        new = Workspace(home).keys()["dev"]
        wait_until(lambda: client.get(secured, headers={"x-api-key": new}).status_code == 200)
        assert client.get(secured, headers={"x-api-key": old}).status_code == 403
    # outside an action, this process opens the store as before
    sqlite3.connect(home / "workspace.sqlite3").close()
