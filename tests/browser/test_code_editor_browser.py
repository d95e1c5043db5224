"""CodeEditor in a real JupyterLab, driven through Debian's Chromium by Playwright.

Typing, Tab, Ctrl+S and Ctrl+Enter reach the kernel's callbacks (which write files the test
reads); Python's changes to ``value`` and ``error_line`` reach the editor; the editor stays
readable in the dark theme. Screenshots: ``test-artifacts/screenshots/code-editor*.png``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.lab import (
    SCREENSHOTS,
    STDERR_OUTPUT,
    Lab,
    playwright_expect,
    run_all,
)

from notebook_kit.notebook.ui import build_editor

expect = playwright_expect()

pytestmark = pytest.mark.slow
VIEWPORT = {"width": 1200, "height": 900}  # the page's size (and the screenshots')

CELL = """\
import os
from pathlib import Path

from notebook_kit.notebook.ui.code_editor import CodeEditor

out = Path(os.environ["NK_EDITOR_OUT"])
editor = CodeEditor(value="def f():\\n    return 1\\n")

def saved(widget):
    (out / "saved.py").write_text(widget.value)

def ran(widget):
    (out / "ran.py").write_text(widget.value)
    widget.error_line, widget.error_message = 2, "demo error"
    widget.value = widget.value + "# ran\\n"

editor.on_save(saved)
editor.on_run(ran)
editor"""


def _wait_for_file(path: Path, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} was not written by the kernel"
        time.sleep(0.1)
    time.sleep(0.1)  # let the write finish
    return path.read_text()


@pytest.fixture(scope="module")
def lab(jupyter: Lab) -> Iterator[dict[str, Any]]:
    """A JupyterLab on loopback in a temp root, with a notebook showing one CodeEditor."""
    build_editor.build()
    root = jupyter.folder("editor")
    env = {
        "NK_EDITOR_OUT": str(root),
    }
    with jupyter.notebook("editor", [CELL], env) as notebook:
        yield {"base": jupyter.base, "notebook": notebook.path, "root": root}


def _doc(page: Any) -> str:
    return page.evaluate(
        "document.querySelector('.nk-code-editor .cm-editor').cmView.state.doc.toString()"
    )


def test_code_editor_in_jupyterlab(page: Any, lab: dict[str, Any]) -> None:
    root: Path = lab["root"]
    run_all(page, lab["base"], lab["notebook"])

    editor = page.locator(".nk-code-editor")
    expect(editor.locator(".cm-lineNumbers")).to_be_visible(timeout=90_000)
    expect(editor.locator(".cm-content")).to_contain_text("return 1")
    prompt = page.locator(".jp-Cell").first.locator(".jp-InputArea-prompt")
    expect(prompt).to_have_text("[1]:")

    # type at the end, then Tab indents the line and the focus stays in the editor
    content = editor.locator(".cm-content")
    content.click()
    page.keyboard.press("Control+End")
    page.keyboard.type("x = g(")  # close brackets adds the ")"
    page.keyboard.press("Home")
    page.keyboard.press("Tab")
    assert _doc(page) == "def f():\n    return 1\n    x = g()"
    assert page.evaluate("document.activeElement.classList.contains('cm-content')")
    assert page.evaluate("!!document.activeElement.closest('.nk-code-editor')")

    # Ctrl+S: the kernel's on_save callback gets the text typed just now (flushed first)
    page.keyboard.press("Control+s")
    assert _wait_for_file(root / "saved.py") == "def f():\n    return 1\n    x = g()"

    # Ctrl+Enter: on_run, not the notebook's "run cell"; its changes come back to the editor
    page.keyboard.press("Control+Enter")
    assert _wait_for_file(root / "ran.py") == "def f():\n    return 1\n    x = g()"
    expect(content).to_contain_text("# ran")
    marker = editor.locator(".cm-nk-error-marker")
    expect(marker).to_have_attribute("title", "demo error")
    expect(editor.locator(".cm-nk-error-line")).to_have_count(1)
    expect(editor.locator(".cm-nk-error-line")).to_contain_text("return 1")
    assert _doc(page) == "def f():\n    return 1\n    x = g()# ran\n"
    expect(prompt).to_have_text("[1]:")  # the cell did not run again
    assert page.evaluate("document.activeElement.classList.contains('cm-content')")
    # Python's edit appended text: the cursor stayed where the user left it
    assert page.evaluate(
        "document.querySelector('.nk-code-editor .cm-editor').cmView.state.selection.main.head"
    ) == len("def f():\n    return 1\n    ")
    expect(page.locator(STDERR_OUTPUT)).to_have_count(0)
    page.locator(".jp-Cell").first.screenshot(path=str(SCREENSHOTS / "code-editor.png"))

    # the dark theme: the editor follows JupyterLab's colours
    light = editor.locator(".cm-editor").evaluate("e => getComputedStyle(e).backgroundColor")
    page.locator(".lm-MenuBar-item", has_text="Settings").first.click()
    page.locator(".lm-Menu-item", has_text="Theme").first.hover()
    page.locator(".lm-Menu-item", has_text="JupyterLab Dark").first.click()
    expect(page.locator("body[data-jp-theme-light='false']")).to_have_count(1)
    expect(page.locator("#jupyterlab-splash")).to_have_count(0)  # the theme is loaded
    dark = editor.locator(".cm-editor").evaluate("e => getComputedStyle(e).backgroundColor")
    assert light != dark
    page.locator(".jp-Cell").first.screenshot(path=str(SCREENSHOTS / "code-editor-dark.png"))
