"""Every public ``Workspace`` method and every CLI command and option explains itself: the
site's Python API and CLI references are generated from these docstrings and help texts."""

from __future__ import annotations

import inspect

import click
import pytest

import notebook_kit
from notebook_kit.cli.main import cli


def _public_members(cls: type) -> list[tuple[str, object]]:
    """``cls``'s public methods and properties (its own and inherited), undecorated."""
    found = []
    for name in dir(cls):
        if name.startswith("_"):
            continue
        member = inspect.getattr_static(cls, name)
        if isinstance(member, staticmethod | classmethod):
            member = member.__func__
        if isinstance(member, property) or inspect.isfunction(member):
            found.append((name, member))
    return found


def _undocumented(cls: type) -> list[str]:
    return [name for name, member in _public_members(cls) if not (member.__doc__ or "").strip()]


def test_every_public_workspace_method_has_a_docstring() -> None:
    members = _public_members(notebook_kit.Workspace)
    assert len(members) > 40  # the walk sees the methods (it does not silently find none)
    assert _undocumented(notebook_kit.Workspace) == []
    assert (notebook_kit.Workspace.__doc__ or "").strip()


def test_the_docstring_check_names_an_undocumented_method() -> None:
    class Sample:
        def documented(self) -> None:
            """Says what it does."""

        def bare(self) -> None:
            pass

        @property
        def bare_property(self) -> int:
            return 1

        def _private(self) -> None:
            pass

    assert _undocumented(Sample) == ["bare", "bare_property"]


@pytest.mark.parametrize("name", sorted(set(notebook_kit.__all__) - {"__version__"}))
def test_every_exported_name_has_a_docstring(name: str) -> None:
    assert (getattr(notebook_kit, name).__doc__ or "").strip(), name


def _commands(command: click.Command, path: str) -> list[tuple[str, click.Command]]:
    found = [(path, command)]
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            found += _commands(sub, f"{path} {name}")
    return found


@pytest.mark.parametrize(
    ("path", "command"), [pytest.param(p, c, id=p) for p, c in _commands(cli, "notebook-kit")]
)
def test_every_command_and_option_has_help(path: str, command: click.Command) -> None:
    assert (command.help or "").strip(), f"{path} has no help"
    bare = [
        "/".join(p.opts)
        for p in command.params
        if isinstance(p, click.Option) and not (p.help or "").strip()
    ]
    assert bare == [], f"{path}: options without help: {bare}"
