"""``notebook-kit settings`` and the settings API: masking, validation, env overrides."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.processes import run_cli

from notebook_kit.domain.settings import find_setting, mask
from notebook_kit.errors import ValidationError
from notebook_kit.workspace.workspace import Workspace


def test_set_get_unset_round_trip(home: Path) -> None:
    assert run_cli("settings", "set", "smtp_host", "mail.example.org", home=home).returncode == 0
    assert run_cli("settings", "get", "smtp_host", home=home).stdout == "mail.example.org\n"
    assert Workspace(home).setting("smtp_host") == "mail.example.org"
    assert run_cli("settings", "unset", "smtp_host", home=home).returncode == 0
    assert run_cli("settings", "get", "smtp_host", home=home).stdout == "\n"


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("smtp_password", "hunter2", "********"),
        ("oauth2_client_secret", "0123456789abcdefWXYZ", "****WXYZ"),
        ("database_url", "postgresql://u:pw@db.example.org/app", "****/app"),
    ],
)
def test_secrets_are_masked_in_get_set_and_list(
    home: Path, name: str, value: str, shown: str
) -> None:
    set_ = run_cli("settings", "set", name, value, home=home, check=True)
    assert value not in set_.stdout and shown in set_.stdout
    assert run_cli("settings", "get", name, home=home).stdout == shown + "\n"
    assert run_cli("settings", "get", name, "--reveal", home=home).stdout == value + "\n"
    listed = run_cli("settings", "list", home=home, check=True).stdout
    assert value not in listed and shown in listed
    rows = json.loads(run_cli("settings", "list", "--json", home=home, check=True).stdout)
    row = next(r for r in rows if r["name"] == name)
    assert (row["value"], row["secret"], row["source"]) == (shown, True, "stored")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("smtp_port", "99999"),
        ("smtp_port", "abc"),
        ("smtp_starttls", "maybe"),
        ("http_timeout", "0"),
        ("deployments_kept", "0"),
        ("deployments_kept", "ten"),
        ("no_such_setting", "1"),
    ],
)
def test_invalid_values_are_refused_and_nothing_stored(home: Path, name: str, value: str) -> None:
    result = run_cli("settings", "set", name, value, home=home)
    assert result.returncode == 1
    assert result.stderr.startswith("notebook-kit: ") and result.stderr.count("\n") == 1
    assert Workspace(home).store.stored_settings() == {}


def test_environment_overrides_stored_value(home: Path) -> None:
    run_cli("settings", "set", "http_timeout", "3", home=home, check=True)
    env = {**os.environ, "NOTEBOOK_KIT_HOME": str(home), "NOTEBOOK_KIT_HTTP_TIMEOUT": "7.5"}
    result = subprocess.run(
        [sys.executable, "-m", "notebook_kit", "settings", "list", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    row = next(r for r in json.loads(result.stdout) if r["name"] == "http_timeout")
    assert (row["value"], row["source"]) == (7.5, "env")


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [
        ("smtp_starttls", "yes", True),
        ("smtp_ssl", "off", False),
        ("smtp_port", "587", 587),
        ("smtp_port", "", None),
        ("smtp_host", "  ", None),
        ("http_timeout", "0.5", 0.5),
        ("deployments_kept", "7", 7),
    ],
)
def test_setting_values_are_parsed(
    workspace: Workspace, name: str, text: str, value: object
) -> None:
    workspace.set_setting(name, text)
    assert workspace.setting(name) == value
    assert workspace.settings()[name] == value


def test_set_setting_refuses_unknown_name(workspace: Workspace) -> None:
    with pytest.raises(ValidationError, match="unknown setting"):
        workspace.set_setting("smtp_hots", "x")


def test_mask_leaves_plain_settings_and_unset_secrets_alone() -> None:
    assert mask(find_setting("smtp_host"), "mail.example.org") == "mail.example.org"
    assert mask(find_setting("smtp_password"), None) is None
