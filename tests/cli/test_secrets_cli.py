"""``notebook-kit secret set|list|delete|rotate-key`` through the real command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.processes import run_cli

from notebook_kit.workspace.workspace import Workspace

APP = "restapi_sample"
CANARY = "canary-cli-77e2-value"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The key file of the commands, and of this process's own reads."""
    path = str(tmp_path / "config" / "secrets.key")
    monkeypatch.setenv("NOTEBOOK_KIT_SECRETS_KEY_FILE", path)
    monkeypatch.delenv("NOTEBOOK_KIT_SECRETS_KEY", raising=False)
    return {"NOTEBOOK_KIT_SECRETS_KEY_FILE": path}


def test_set_list_delete(sample_workspace: Workspace, env: dict[str, str]) -> None:
    home = sample_workspace.home
    made = run_cli(
        "secret", "set", APP, "TOKEN", "--stage", "prod", home=home, env=env, input=CANARY + "\n"
    )
    assert made.returncode == 0, made.stderr
    assert made.stdout == f"secret TOKEN of {APP} set on prod (version 1)\n"
    assert made.stderr.startswith("warning: secret TOKEN set: restapi_sample on prod keeps")
    via_env = run_cli(
        "secret",
        "set",
        APP,
        "OTHER",
        "--stage",
        "dev",
        "--from-env",
        "MY_TOKEN",
        home=home,
        env={**env, "MY_TOKEN": "from-env"},
    )
    assert via_env.returncode == 0, via_env.stderr
    listed = run_cli("secret", "list", APP, "--json", home=home, env=env, check=True)
    rows = json.loads(listed.stdout)
    assert [(r["name"], r["stage"], r["version"]) for r in rows] == [
        ("OTHER", "dev", 2),
        ("TOKEN", "prod", 1),
    ]
    assert all(set(r) == {"app", "name", "stage", "set_at", "version"} for r in rows)
    table = run_cli("secret", "list", APP, home=home, env=env, check=True).stdout
    assert table.splitlines()[0].split() == ["NAME", "STAGE", "SET_AT", "VERSION"]
    assert CANARY not in listed.stdout + table + made.stdout + made.stderr
    # the value really is stored: a test run reads it (the prod value: stage asked)
    assert Workspace(home).secret_keeper.values(APP, "prod") == {"TOKEN": CANARY}
    gone = run_cli("secret", "delete", APP, "TOKEN", "--stage", "prod", home=home, env=env)
    assert gone.returncode == 0 and gone.stdout == f"secret TOKEN of {APP} deleted on prod\n"
    rotated = run_cli("secret", "rotate-key", home=home, env=env, check=True)
    assert rotated.stdout.startswith("secrets re-encrypted under a new key, written to ")
    assert Workspace(home).secret_keeper.values(APP, "dev") == {"OTHER": "from-env"}


@pytest.mark.parametrize(
    ("args", "extra", "stdin", "message"),
    [
        (["set", "nope", "TOKEN", "--stage", "dev"], {}, "x", "no application 'nope'"),
        (["set", APP, "bad-name", "--stage", "dev"], {}, "x", "secret name 'bad-name'"),
        (["set", APP, "TOKEN", "--stage", "dev"], {}, "\n", "the value of secret TOKEN is empty"),
        (
            ["set", APP, "TOKEN", "--stage", "dev", "--from-env", "UNSET_VAR_X"],
            {},
            "",
            "environment variable UNSET_VAR_X is not set",
        ),
        (["delete", APP, "TOKEN", "--stage", "dev"], {}, "", "has no secret TOKEN on dev"),
        (["list", "nope"], {}, "", "no application 'nope'"),
        (
            ["set", APP, "TOKEN", "--stage", "dev"],
            {"NOTEBOOK_KIT_SECRETS_KEY": "short"},
            "x",
            "is not 32 bytes",
        ),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(
    sample_workspace: Workspace,
    env: dict[str, str],
    args: list[str],
    extra: dict[str, str],
    stdin: str,
    message: str,
) -> None:
    result = run_cli("secret", *args, home=sample_workspace.home, env={**env, **extra}, input=stdin)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert sample_workspace.secrets(APP) == []


def test_a_value_is_never_an_argument(sample_workspace: Workspace, env: dict[str, str]) -> None:
    result = run_cli(
        "secret",
        "set",
        APP,
        "TOKEN",
        CANARY,
        "--stage",
        "dev",
        home=sample_workspace.home,
        env=env,
        input="",
    )
    assert result.returncode != 0 and sample_workspace.secrets(APP) == []


def test_a_wrong_key_is_one_line(
    sample_workspace: Workspace, env: dict[str, str], tmp_path: Path
) -> None:
    home = sample_workspace.home
    run_cli(
        "secret", "set", APP, "TOKEN", "--stage", "dev", home=home, env=env, input="v", check=True
    )
    other = {"NOTEBOOK_KIT_SECRETS_KEY_FILE": str(tmp_path / "elsewhere.key")}
    result = run_cli(
        "secret", "set", APP, "MORE", "--stage", "dev", home=home, env=other, input="v"
    )
    assert result.returncode == 1 and result.stderr.startswith("notebook-kit: no secrets key")
    assert not (tmp_path / "elsewhere.key").exists()
    assert [s.name for s in sample_workspace.secrets(APP)] == ["TOKEN"]
