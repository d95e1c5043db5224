"""The editor help lists every built-in the spec names, each with its docstring."""

from __future__ import annotations

import pytest

from notebook_kit.builtins.reference import action_reference
from notebook_kit.notebook.ui.reference_panel import ReferencePanel

SPEC_BUILTINS = [
    "getFile", "getFileNames", "putFile", "deleteFile", "getUsers", "createUser", "updateUser",
    "deleteUser", "resetPassword", "getGroups", "createGroup", "addUsers", "removeUsers",
    "sendMail", "csvToObject", "getPresignedUrl", "listUsersByEmail", "listUsersByName",
    "notebook_kit.oauth2.token", "notebook_kit.oauth2.revoke", "notebook_kit.artifacts.print",
    "notebook_kit.artifacts.info", "notebook_kit.artifacts.download",
    "notebook_kit.actions.status",
]  # fmt: skip


def test_reference_names_every_builtin_of_the_spec() -> None:
    names = {entry.name for entry in action_reference()}
    assert {f"fn.{name}" for name in SPEC_BUILTINS} <= names
    assert {"req", "res", "db.query", "db.execute", "http.get_json", "http.aget_json"} <= names


@pytest.mark.parametrize("entry", action_reference(), ids=lambda e: e.name)
def test_every_entry_has_a_docstring_summary(entry) -> None:  # type: ignore[no-untyped-def]
    assert entry.summary, f"{entry.name} has no docstring"


def test_signatures_read_as_an_action_calls_them() -> None:
    signatures = {entry.name: entry.signature for entry in action_reference()}
    assert signatures["fn.getPresignedUrl"] == "(path, options=None)"
    assert signatures["db.query"] == "(sql, params=())"


def test_studio_reference_panel_shows_the_entries() -> None:
    panel = ReferencePanel()
    text = panel.children[0].value
    assert "fn.getFile(path)" in text and "fn.notebook_kit.oauth2.token()" in text
    assert "nk-reference" in panel._dom_classes and panel.selected_index is None
