"""A real JupyterLab on loopback and Debian's headless Chromium, for the browser tests.

One JupyterLab and one Chromium serve the whole browser suite (``tests/browser/
conftest.py``): ``running_lab(root)`` starts JupyterLab isolated in ``root`` (config,
runtime, workspaces and settings dirs of its own, no news toast, this checkout first on
the kernels' import path) and yields a ``Lab``; ``Lab.notebook(name, cells, env)``
writes a test module's notebook into a folder of its own and shuts its kernels down
after. ``launch_browser()`` starts Chromium; ``new_page(browser, viewport)`` yields a
page in a fresh context (no cookies or storage shared between modules).
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
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
# The Test and Deploy panels over the sample's employee lookup, on a server of the kernel.
TEST_AND_DEPLOY_CELL = """\
import os

import ipywidgets as widgets

from notebook_kit import Workspace
from notebook_kit.notebook.ui.contract import ContractPanel
from notebook_kit.notebook.ui.deploy import DeployPanel
from notebook_kit.notebook.ui.tester import TestPanel

ws = Workspace(os.environ["NOTEBOOK_KIT_HOME"])
ws.install_sample()
server = ws.serve()
employee = ws.get("restapi_sample", "employee")
tester = TestPanel(ws, lambda: server.url, lambda: employee)
tester.load(employee)
deploy = DeployPanel(ws, lambda: server.url)
deploy.load("restapi_sample", employee)
contract = ContractPanel(ws)
contract.load(employee)
widgets.VBox([tester, deploy, contract])"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Notebook:
    """A test module's notebook: ``path`` (relative to the lab's root, for ``run_all``)
    and ``folder`` (its own, for its workspace and files)."""

    path: str
    folder: Path


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab: its ``root`` folder and ``base`` URL."""

    root: Path
    base: str

    def folder(self, name: str) -> Path:
        """The folder of the notebook ``name`` (made on first use)."""
        path = self.root / name
        path.mkdir(exist_ok=True)
        return path

    @contextmanager
    def notebook(
        self, name: str, cells: Sequence[str], env: Mapping[str, str] | None = None
    ) -> Iterator[Notebook]:
        """``<name>/<name>.ipynb`` made of ``cells``; its kernel sees ``env`` (set by a
        line before the first cell's code). Its kernels are shut down at exit, and with
        them the servers its cells started."""
        folder = self.folder(name)
        cells = list(cells)
        if env:
            cells[0] = f"import os; os.environ.update({dict(env)!r})\n{cells[0]}"
        document = nbformat.v4.new_notebook()
        document.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        document.cells = [nbformat.v4.new_code_cell(source) for source in cells]
        nbformat.write(document, folder / f"{name}.ipynb")
        try:
            yield Notebook(f"{name}/{name}.ipynb", folder)
        finally:
            self.shut_down(name)

    def shut_down(self, name: str) -> None:
        """Shut down the kernels of the notebooks in folder ``name``."""
        api = f"{self.base}/api/sessions"
        with httpx.Client(params={"token": TOKEN}, timeout=30) as client:
            for session in client.get(api).json():
                if session.get("path", "").startswith(f"{name}/"):
                    client.delete(f"{api}/{session['id']}")


@contextmanager
def running_lab(root: Path) -> Iterator[Lab]:
    """JupyterLab serving ``root``, its kernels importing this checkout's notebook_kit."""
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
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
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
            yield Lab(root, base)
        finally:
            process.terminate()  # it shuts its kernels down (and their servers with them)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def launch_browser() -> Iterator[Any]:
    """Debian's headless Chromium, through Playwright."""
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def new_page(browser: Any, viewport: dict[str, int]) -> Iterator[Any]:
    """A page in a fresh context of ``browser``, with 30 s timeouts (comm messages queue
    behind running cells)."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport=viewport)
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    expect.set_options(timeout=30_000)
    try:
        yield tab
    finally:
        context.close()


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
