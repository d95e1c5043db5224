"""CodeEditor: the esbuild bundle, the synced traits, the save/run messages, the wheel.

The bundle is built for real (npm ci + esbuild) and imported by a real Node; messages go
through ipywidgets' own comm-message handler, as they do in a kernel.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import traitlets

from notebook_kit.notebook.ui import build_editor

REPO = Path(__file__).resolve().parents[2]
NODE = shutil.which("node")

if (NODE is None or shutil.which("npm") is None) and not os.environ.get("CI"):
    pytest.skip("needs Node.js and npm (apt-get install nodejs npm)", allow_module_level=True)


@pytest.fixture(scope="module")
def bundle() -> Path:
    return build_editor.build()


@pytest.fixture(scope="module")
def code_editor(bundle: Path) -> ModuleType:
    """The widget module, imported once its bundle exists (importing checks for it)."""
    return importlib.import_module("notebook_kit.notebook.ui.code_editor")


def _from_front_end(widget: Any, data: dict[str, Any]) -> None:
    """Deliver a comm message the way the kernel does: to ipywidgets' ``_handle_msg``."""
    widget._handle_msg({"content": {"data": data}, "buffers": []})


def test_bundle_is_an_es_module_exporting_render(bundle: Path, tmp_path: Path) -> None:
    module = tmp_path / "code_editor.mjs"  # .mjs: Node 18 reads a bare .js file as CommonJS
    shutil.copyfile(bundle, module)
    script = (
        f"const m = await import({module.as_uri()!r});"
        "if (typeof m.default.render !== 'function') process.exit(3);"
        "console.log('render:', typeof m.default.render);"
    )
    result = subprocess.run(
        [NODE or "node", "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "render: function"  # imported with no DOM at all
    text = bundle.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 20  # minified
    for remote in ('from"http', 'import("http', "from 'http", 'from "http'):
        assert remote not in text  # everything is bundled: no CDN at run time


def test_build_needs_sources_or_an_existing_bundle(tmp_path: Path) -> None:
    missing = tmp_path / "static" / "code_editor.js"
    with pytest.raises(build_editor.BuildError, match="reinstall"):
        build_editor.build(source=tmp_path / "js", bundle=missing)
    missing.parent.mkdir()
    missing.write_text("export default {render() {}};\n")
    assert build_editor.build(source=tmp_path / "js", bundle=missing) == missing


def test_build_lists_its_sources_for_the_sdist() -> None:
    names = {path.relative_to(REPO).as_posix() for path in build_editor.sources()}
    assert {
        "js/code-editor/package.json",
        "js/code-editor/package-lock.json",
        "js/code-editor/build.mjs",
        "js/code-editor/src/index.js",
    } <= names
    assert all((REPO / name).is_file() for name in names)


def test_missing_bundle_says_how_to_build_it(
    code_editor: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(code_editor, "BUNDLE", tmp_path / "code_editor.js")
    with pytest.raises(code_editor.EditorBundleMissingError) as raised:
        code_editor._bundle()
    assert "python -m notebook_kit.notebook.ui.build_editor" in str(raised.value)
    assert "pip install" in str(raised.value)


def test_widget_ships_the_bundle_and_has_defaults(code_editor: ModuleType, bundle: Path) -> None:
    editor = code_editor.CodeEditor()
    state = editor.get_state()
    assert state["_esm"] == bundle.read_text(encoding="utf-8")
    assert {key: state[key] for key in ("value", "language", "error_line", "height")} == {
        "value": "",
        "language": "python",
        "error_line": 0,
        "height": "18em",
    }
    assert (state["error_message"], state["read_only"], state["placeholder"]) == ("", False, "")
    editor.close()


def test_traits_round_trip(code_editor: ModuleType) -> None:
    editor = code_editor.CodeEditor(value="def f():\n    return 1\n", placeholder="# code")
    editor.error_line, editor.error_message = 2, "invalid syntax"
    editor.read_only, editor.height, editor.language = True, "10em", "text"
    state = editor.get_state()
    assert state["value"] == "def f():\n    return 1\n"
    assert (state["error_line"], state["error_message"]) == (2, "invalid syntax")
    assert (state["read_only"], state["height"], state["language"]) == (True, "10em", "text")
    assert state["placeholder"] == "# code"

    # the browser's debounced update arrives as a comm "update" message
    _from_front_end(editor, {"method": "update", "state": {"value": "x = 1\n"}})
    assert editor.value == "x = 1\n"

    with pytest.raises(traitlets.TraitError):
        editor.error_line = -1
    editor.close()


def test_save_and_run_callbacks_see_the_flushed_text(code_editor: ModuleType) -> None:
    editor = code_editor.CodeEditor(value="a = 1\n")
    saved: list[str] = []
    ran: list[str] = []
    editor.on_save(lambda widget: saved.append(widget.value))
    editor.on_run(lambda widget: ran.append(widget.value))

    # what the front end sends on Ctrl+S: the flushed value, then the custom message
    _from_front_end(editor, {"method": "update", "state": {"value": "a = 2\n"}})
    _from_front_end(editor, {"method": "custom", "content": {"event": "save"}})
    assert (saved, ran) == (["a = 2\n"], [])

    _from_front_end(editor, {"method": "custom", "content": {"event": "run"}})
    editor._handle_custom_msg({"event": "run"}, [])  # the same path, one level down
    assert (saved, ran) == (["a = 2\n"], ["a = 2\n", "a = 2\n"])

    _from_front_end(editor, {"method": "custom", "content": {"event": "something-else"}})
    _from_front_end(editor, {"method": "custom", "content": "not a dict"})
    assert (len(saved), len(ran)) == (1, 2)
    editor.close()


def test_a_save_carries_its_text_when_the_update_is_held_back(code_editor: ModuleType) -> None:
    # ipywidgets holds back a model update while an earlier one awaits the kernel, but sends
    # a custom message at once: the save arrives first, with the text it was made with
    editor = code_editor.CodeEditor(value="a = 1\n")
    saved: list[str] = []
    editor.on_save(lambda widget: saved.append(widget.value))
    _from_front_end(editor, {"method": "custom", "content": {"event": "save", "value": "a = 3\n"}})
    assert saved == ["a = 3\n"]
    assert editor.value == "a = 3\n"
    _from_front_end(editor, {"method": "update", "state": {"value": "a = 3\n"}})  # then the update
    assert (saved, editor.value) == (["a = 3\n"], "a = 3\n")
    editor.close()


def test_callbacks_can_be_removed(code_editor: ModuleType) -> None:
    editor = code_editor.CodeEditor()
    calls: list[Any] = []
    editor.on_save(calls.append)
    editor.on_save(calls.append, remove=True)
    editor._handle_custom_msg({"event": "save"}, [])
    assert calls == []
    editor.close()


@pytest.mark.slow
def test_wheel_contains_the_bundle(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path)]
    result = subprocess.run(
        [*command, str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = tmp_path.glob("notebook_kit-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert "notebook_kit/notebook/ui/static/code_editor.js" in names
        assert "notebook_kit/notebook/ui/code_editor.py" in names
        shipped = archive.read("notebook_kit/notebook/ui/static/code_editor.js")
    assert b"export" in shipped and len(shipped) > 100_000
    assert not any(name.startswith("js/") or "node_modules" in name for name in names)
