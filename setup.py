"""Build hook only; the project's metadata and settings are in pyproject.toml.

The CodeEditor's JavaScript bundle is not in git: the ``build_editor_js`` command makes it
(npm ci + esbuild, see notebook_kit/notebook/ui/build_editor.py) as the first ``build``
sub-command. It writes into the source tree, where an editable install (PEP 660) reads it,
and copies it into build_lib for a wheel. A failure stops the install: no wheel without
its editor.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from setuptools import Command, setup
from setuptools.command.build import build

ROOT = Path(__file__).resolve().parent
BUNDLE = "notebook_kit/notebook/ui/static/code_editor.js"


def _builder() -> ModuleType:
    """build_editor.py, loaded by path: importing notebook_kit would need its dependencies."""
    path = ROOT / "notebook_kit" / "notebook" / "ui" / "build_editor.py"
    spec = importlib.util.spec_from_file_location("_notebook_kit_build_editor", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildEditorJs(Command):
    """Bundle the CodeEditor's front end (a setuptools ``build`` sub-command)."""

    description = "bundle the CodeEditor's JavaScript (npm ci + esbuild)"
    user_options: list[tuple[str, str | None, str]] = []
    editable_mode = False

    def initialize_options(self) -> None:
        self.build_lib: str | None = None

    def finalize_options(self) -> None:
        self.set_undefined_options("build_py", ("build_lib", "build_lib"))

    def run(self) -> None:
        bundle = _builder().build()
        if not self.editable_mode:
            target = Path(self.get_outputs()[0])
            self.mkpath(str(target.parent))
            self.copy_file(str(bundle), str(target))

    def get_source_files(self) -> list[str]:
        return [path.relative_to(ROOT).as_posix() for path in _builder().sources()]

    def get_outputs(self) -> list[str]:
        return [str(Path(self.build_lib or "build/lib", BUNDLE))]

    def get_output_mapping(self) -> dict[str, str]:
        return {self.get_outputs()[0]: str(ROOT / BUNDLE)}


class Build(build):
    sub_commands = [("build_editor_js", None), *build.sub_commands]


setup(cmdclass={"build": Build, "build_editor_js": BuildEditorJs})
