"""Secrets through the Workspace, on SQLite and PostgreSQL: set, list, delete, the key
outside the store (missing, wrong, rotated), pins at deploy and what a test run gets."""

from __future__ import annotations

import base64
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from notebook_kit.domain.secrets import SecretNotLiveWarning, Secrets, redact
from notebook_kit.errors import NotFoundError, SecretKeyError, ValidationError
from notebook_kit.workspace.secrets import KEY_ENV, KEY_FILE_ENV
from notebook_kit.workspace.workspace import Workspace

CANARY = "canary-6f1d-secret-value"


@pytest.fixture(autouse=True)
def key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The secrets key file of these tests, outside the workspace (none yet)."""
    path = tmp_path / "config" / "notebook-kit" / "secrets.key"
    monkeypatch.setenv(KEY_FILE_ENV, str(path))
    monkeypatch.delenv(KEY_ENV, raising=False)
    return path


@pytest.fixture(params=["sqlite", "postgres"])
def ws(request: pytest.FixtureRequest, tmp_path: Path) -> Workspace:
    url = "" if request.param == "sqlite" else str(request.getfixturevalue("fresh_database"))
    workspace = Workspace(tmp_path / "home", store=url)
    workspace.create(
        "vault",
        "peek",
        label="Peek",
        method="GET",
        resource="peek",
        action="res.body = {'length': len(secrets.TOKEN), 'names': repr(secrets)}",
    )
    return workspace


def _state(ws: Workspace) -> list[tuple[str, str, int]]:
    return [(s.name, s.stage, s.version) for s in ws.secrets("vault")]


def test_set_list_delete_never_show_a_value(ws: Workspace, key_file: Path) -> None:
    first = ws.set_secret("vault", "TOKEN", CANARY, stage="dev")
    ws.set_secret("vault", "TOKEN", "prod-value", stage="prod")
    listed = ws.secrets("vault")
    assert [(s.name, s.stage) for s in listed] == [("TOKEN", "dev"), ("TOKEN", "prod")]
    assert listed[0].version == first.version and listed[0].set_at == first.set_at
    assert CANARY not in repr(listed) + repr(ws.secret_keeper) + str(first.to_dict())
    again = ws.set_secret("vault", "TOKEN", CANARY + "2", stage="dev")
    assert again.version > first.version
    ws.delete_secret("vault", "TOKEN", "dev")
    assert _state(ws) == [("TOKEN", "prod", listed[1].version)]
    # the key is a 0600 file in a 0700 folder, made by the first set
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700


@pytest.mark.parametrize(
    ("app", "name", "value", "stage", "error", "match"),
    [
        ("nope", "TOKEN", "x", "dev", NotFoundError, "no application 'nope'"),
        ("vault", "9lives", "x", "dev", ValidationError, "secret name '9lives'"),
        ("vault", "has-dash", "x", "dev", ValidationError, "secret name"),
        ("vault", "", "x", "dev", ValidationError, "secret name"),
        ("vault", "TOKEN", "", "dev", ValidationError, "is empty"),
        ("vault", "TOKEN", "x", "staging", ValidationError, "stage must be"),
    ],
)
def test_bad_input_changes_nothing(
    ws: Workspace,
    app: str,
    name: str,
    value: str,
    stage: str,
    error: type[Exception],
    match: str,
) -> None:
    ws.set_secret("vault", "KEEP", "kept", stage="dev")
    before = _state(ws)
    with pytest.raises(error, match=match):
        ws.set_secret(app, name, value, stage=stage)
    assert _state(ws) == before


def test_delete_of_a_missing_secret_is_refused(ws: Workspace) -> None:
    with pytest.raises(NotFoundError, match="vault has no secret TOKEN on prod"):
        ws.delete_secret("vault", "TOKEN", "prod")


def test_values_are_encrypted_at_rest(ws: Workspace) -> None:
    ws.set_secret("vault", "TOKEN", CANARY, stage="dev")
    path = ws.store.path
    if path is not None:  # the SQLite file and its WAL hold no clear value
        ws.store.close()
        for file in path.parent.glob(path.name + "*"):
            assert CANARY.encode() not in file.read_bytes()
    rows = ws.store.secrets.every()
    assert rows and all(CANARY not in row.value for row in rows)
    assert ws.secret_keeper.values("vault", "dev") == {"TOKEN": CANARY}


def test_missing_or_wrong_key_is_one_clear_error(
    ws: Workspace, key_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws.set_secret("vault", "TOKEN", CANARY, stage="dev")
    saved = key_file.read_text()
    key_file.unlink()
    with pytest.raises(SecretKeyError, match="no secrets key: set NOTEBOOK_KIT_SECRETS_KEY"):
        ws.secret_keeper.values("vault", "dev")
    with pytest.raises(SecretKeyError, match="no secrets key"):  # no new key made either
        ws.set_secret("vault", "OTHER", "x", stage="dev")
    assert not key_file.exists()
    monkeypatch.setenv(KEY_ENV, base64.urlsafe_b64encode(os.urandom(32)).decode())
    with pytest.raises(SecretKeyError, match=r"was encrypted with key .* in force"):
        ws.secret_keeper.values("vault", "dev")
    with pytest.raises(SecretKeyError, match="stored secrets were encrypted with key"):
        ws.set_secret("vault", "OTHER", "x", stage="dev")
    monkeypatch.setenv(KEY_ENV, "not a key")
    with pytest.raises(SecretKeyError, match="is not 32 bytes"):
        ws.secret_keeper.values("vault", "dev")
    monkeypatch.setenv(KEY_ENV, saved.strip())  # the key file's key, given as a variable
    assert ws.secret_keeper.values("vault", "dev") == {"TOKEN": CANARY}
    assert [s.name for s in ws.secrets("vault")] == ["TOKEN"]


def test_a_key_file_inside_the_workspace_is_refused(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_FILE_ENV, str(ws.home / "secrets.key"))
    with pytest.raises(SecretKeyError, match="inside the workspace"):
        ws.set_secret("vault", "TOKEN", CANARY, stage="dev")
    assert not (ws.home / "secrets.key").exists()


def test_rotate_key_reencrypts_every_version(ws: Workspace, key_file: Path) -> None:
    ws.set_secret("vault", "TOKEN", CANARY, stage="dev")
    ws.deploy("vault", "dev")  # pins this version
    with pytest.warns(SecretNotLiveWarning):
        ws.set_secret("vault", "TOKEN", "newer", stage="dev")
    old_key = key_file.read_text()
    old_ids = ws.store.secrets.key_ids()
    assert ws.rotate_secrets_key() == str(key_file)
    assert key_file.read_text() != old_key
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert ws.store.secrets.key_ids().isdisjoint(old_ids)
    assert ws.secret_keeper.values("vault", "dev") == {"TOKEN": "newer"}
    pinned = ws.secret_keeper.pinned_values(ws.deployments("vault")[-1].id)
    assert pinned == ("vault", "dev", {"TOKEN": CANARY})  # the pinned old version too


def test_rotate_key_from_the_environment_returns_the_new_key(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, key_file: Path
) -> None:
    monkeypatch.setenv(KEY_ENV, base64.urlsafe_b64encode(os.urandom(32)).decode())
    ws.set_secret("vault", "TOKEN", CANARY, stage="prod")
    new = ws.rotate_secrets_key()
    assert not key_file.exists()
    with pytest.raises(SecretKeyError):
        ws.secret_keeper.values("vault", "prod")
    monkeypatch.setenv(KEY_ENV, new)
    assert ws.secret_keeper.values("vault", "prod") == {"TOKEN": CANARY}


def test_a_deploy_pins_versions_and_a_change_warns(ws: Workspace) -> None:
    ws.set_secret("vault", "TOKEN", "one", stage="dev")  # not live: no warning
    first = ws.deploy("vault", "dev")
    with pytest.warns(SecretNotLiveWarning, match="vault on dev keeps serving"):
        ws.set_secret("vault", "TOKEN", "two", stage="dev")
    ws.set_secret("vault", "TOKEN", "prod only", stage="prod")  # prod is not live: silent
    assert ws.secret_keeper.pinned_values(first.id) == ("vault", "dev", {"TOKEN": "one"})
    second = ws.deploy("vault", "dev")
    assert ws.secret_keeper.pinned_values(second.id) == ("vault", "dev", {"TOKEN": "two"})
    with pytest.warns(SecretNotLiveWarning, match="secret TOKEN deleted"):
        ws.delete_secret("vault", "TOKEN", "dev")
    third = ws.deploy("vault", "dev")
    assert ws.secret_keeper.pinned_values(third.id) == ("vault", "dev", {})
    # the versions the kept deployments pin stay; rollback serves them again
    ws.rollback("vault", "dev", to=first.id)
    assert ws.secret_keeper.pinned_values(first.id) == ("vault", "dev", {"TOKEN": "one"})


def test_test_runs_get_the_current_values_of_the_stage_asked(ws: Workspace) -> None:
    ws.set_secret("vault", "TOKEN", "dev-val", stage="dev")
    ws.set_secret("vault", "TOKEN", "the-prod-value", stage="prod")
    assert b'"length": 7' in ws.invoke("vault", "peek").body
    definition = ws.get("vault", "peek")
    run = ws.runner().test(definition, secrets_stage="prod")
    assert b'"length": 14' in run.body and b"<secrets: TOKEN>" in run.body


def test_an_application_without_secrets_sees_an_empty_object(ws: Workspace) -> None:
    ws.edit("vault", "peek", action="res.body = {'names': repr(secrets), 'has': 'X' in secrets}")
    answer = ws.invoke("vault", "peek")
    assert answer.body == b'{"names": "<secrets: none>", "has": false}'
    ws.edit("vault", "peek", action="res.body = secrets.MISSING")
    assert "no secret 'MISSING' of vault" in str(ws.invoke("vault", "peek").error)


def test_deleting_the_application_deletes_its_secrets(ws: Workspace) -> None:
    ws.set_secret("vault", "TOKEN", CANARY, stage="dev")
    ws.deploy("vault", "dev")
    ws.delete_application("vault")
    assert ws.store.secrets.every() == []


def test_store_copy_keeps_the_secrets(ws: Workspace, tmp_path: Path) -> None:
    ws.set_secret("vault", "TOKEN", CANARY, stage="dev")
    deployment = ws.deploy("vault", "dev")
    target = Workspace(tmp_path / "copy")
    ws.store.copy_into(target.store)
    assert target.secret_keeper.values("vault", "dev") == {"TOKEN": CANARY}
    assert target.secret_keeper.pinned_values(deployment.id) == ("vault", "dev", {"TOKEN": CANARY})
    newer = target.set_secret("vault", "OTHER", "x", stage="prod")  # ids continue
    assert newer.version > max(row.id for row in ws.store.secrets.every())


def test_secrets_object_and_redaction() -> None:
    held = Secrets({"B": "bee", "A": "a'\nb"}, "app")
    assert repr(held) == str(held) == "<secrets: A, B>" and dir(held) == ["A", "B"]
    assert held.B == "bee" and held.get("C") is None and "A" in held and list(held) == ["A", "B"]
    with pytest.raises(AttributeError, match="read-only"):
        held.B = "x"
    with pytest.raises(TypeError):
        __import__("pickle").dumps(held)
    text = redact("x bee y " + repr("a'\nb"), [("B", "bee"), ("A", "a'\nb")])
    assert "bee" not in text and "\\n" not in text and text.count("[secret") == 2


def test_the_sqlite_store_migrates_to_the_secrets_table(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "home")
    conn = sqlite3.connect(ws.home / "workspace.sqlite3")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    columns = {r[1] for r in conn.execute("PRAGMA table_info(deployments)")}
    conn.close()
    assert "secret_versions" in tables and "secrets" in columns
