"""A real JupyterLab on loopback and Debian's headless Chromium, for the browser tests.

``running_lab(root, cells, notebook, env)`` writes a notebook of ``cells`` into ``root``,
starts JupyterLab isolated there (config, runtime, workspaces and settings dirs of its
own, no news toast) and yields its base URL; ``browser_page(viewport)`` yields a
Playwright page on Debian's Chromium.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest

REPO = Path(__file__).resolve().parent.parent
SCREENSHOTS = REPO / "test-artifacts" / "screenshots"
CHROMIUM = "/usr/lib/chromium/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
TOKEN = "notebook-kit-e2e"
STDERR_OUTPUT = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_lab(
    root: Path, cells: Sequence[str], notebook: str, env: Mapping[str, str]
) -> Iterator[str]:
    """JupyterLab serving ``root`` with ``notebook`` made of ``cells``; yields its base URL."""
    document = nbformat.v4.new_notebook()
    document.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    document.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(document, root / notebook)
    settings = root / ".settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'  # no news toast over the page
    )
    port = free_port()
    command = [
        *(sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root"),
        *("--ip=127.0.0.1", f"--port={port}", "--port-retries=0"),
        f"--IdentityProvider.token={TOKEN}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.workspaces_dir={root / '.ws'}",
        f"--LabApp.user_settings_dir={root / '.settings'}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    environment = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(root / ".cfg"),
        "JUPYTER_RUNTIME_DIR": str(root / ".rt"),
        **env,
    }
    with (root / "lab.log").open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/api/status", params={"token": TOKEN}, timeout=1).is_success:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail("JupyterLab did not start:\n" + (root / "lab.log").read_text()[-3000:])
            time.sleep(0.2)
        try:
            yield base
        finally:
            process.terminate()  # it shuts its kernels down (and their servers with them)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def browser_page(viewport: dict[str, int]) -> Iterator[Any]:
    """A page of Debian's headless Chromium, with 30 s timeouts (comm messages queue
    behind running cells)."""
    from playwright.sync_api import expect, sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        tab = browser.new_context(viewport=viewport).new_page()  # type: ignore[arg-type]
        tab.set_default_timeout(30_000)
        expect.set_options(timeout=30_000)
        try:
            yield tab
        finally:
            browser.close()


def playwright_expect() -> Any:
    """Playwright's ``expect``, for a browser test module (call it at module level): the
    module is skipped where Playwright is missing or, outside CI, Debian's Chromium."""
    api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists() and not os.environ.get("CI"):
        reason = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
        pytest.skip(reason, allow_module_level=True)
    return api.expect


def run_all(page: Any, base: str, notebook: str) -> None:
    """Open ``notebook`` in the lab at ``base``, wait for its kernel, and run all cells."""
    expect = playwright_expect()
    page.goto(f"{base}/lab/tree/{notebook}?token={TOKEN}&reset")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    # the status bar says "| Idle" only once a kernel is connected (the toolbar lies)
    idle = page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\| Idle$"))
    expect(idle).to_be_visible(timeout=90_000)
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
