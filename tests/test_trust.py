"""What an action can reach (issue 11, docs/trust-model.md): each door a built-in opened
is closed, tested with real actions on a real server, real files and real SQLite."""

from __future__ import annotations

import hmac
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

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
    from notebook_kit.errors import BuiltinError

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
