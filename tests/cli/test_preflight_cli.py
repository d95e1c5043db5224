"""``notebook-kit preflight APP ID``: one line saying what was made; a refusal is one
line on stderr and exit 1."""

from __future__ import annotations

from pathlib import Path

from support.processes import run_cli

from notebook_kit import Workspace


def test_preflight_makes_the_options_definition_and_refuses_a_second(home: Path) -> None:
    Workspace(home).create("shop", "add", label="Add", method="POST", resource="items")
    made = run_cli("preflight", "shop", "add", "--origin", "https://example.org", home=home)
    assert made.returncode == 0, made.stderr
    assert made.stdout == "created shop/add-preflight (OPTIONS items): deploy to make it live\n"
    assert "'https://example.org'" in Workspace(home).get("shop", "add-preflight").action
    again = run_cli("preflight", "shop", "add", home=home)
    assert again.returncode == 1
    assert again.stderr.count("\n") == 1
    assert "already answers OPTIONS with 'add-preflight'" in again.stderr
