"""End to end in a real headless Chromium (Debian's, driven by Playwright).

1. A real JupyterLab on loopback runs a notebook that opens the studio on a fresh
   workspace; the test creates a definition through the widgets, tests it in the Test
   panel, deploys it to dev, and calls the dev URL over HTTP.
2. A plain page served from another origin calls the sample calculator with ``fetch`` and
   the ``x-api-key`` header: the CORS preflight passes in a real browser, a call without
   the key shows a readable 403, and a JSON content type (not allowed by the preflight)
   is blocked by the browser.

Screenshots go to ``test-artifacts/screenshots/`` (CI keeps it); the studio's also to
``docs/studio.png``, the README's picture (only with ``NOTEBOOK_KIT_UPDATE_DOCS=1``, so a
test run leaves the tree clean).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from lab import (
    CHROMIUM,
    REPO,
    SCREENSHOTS,
    STDERR_OUTPUT,
    TOKEN,
    browser_page,
    free_port,
    running_lab,
)

from notebook_kit.runtime.server import BackgroundServer
from notebook_kit.workspace.workspace import Workspace

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = pytest.mark.slow

if not Path(CHROMIUM).exists() and not os.environ.get("CI"):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    with browser_page({"width": 1400, "height": 3000}) as tab:
        yield tab


# -- 1. the studio in JupyterLab ---------------------------------------------------------

STUDIO_CELLS = [
    """\
import os

import notebook_kit
from notebook_kit import Workspace

ws = Workspace(os.environ["NOTEBOOK_KIT_HOME"])  # fresh: made by the test
server = ws.serve(port=int(os.environ["NK_STUDIO_PORT"]))
print("SERVING", server.running)""",
    "notebook_kit.studio(ws)",
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A real JupyterLab on loopback, isolated in a temp root, with the studio notebook."""
    root = tmp_path_factory.mktemp("lab")
    home = root / "workspace"
    api_port = free_port()
    env = {"NOTEBOOK_KIT_HOME": str(home), "NK_STUDIO_PORT": str(api_port)}
    with running_lab(root, STUDIO_CELLS, "studio.ipynb", env) as base:
        yield {"base": base, "home": home, "api": f"http://127.0.0.1:{api_port}"}


def _run_all(page: Any) -> None:
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()


def test_studio_creates_tests_and_deploys_in_jupyterlab(page: Any, lab: dict[str, Any]) -> None:
    page.goto(f"{lab['base']}/lab/tree/studio.ipynb?token={TOKEN}&reset")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    # the status bar says "| Idle" only once a kernel is connected (the toolbar lies)
    status_bar = page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\| Idle$"))
    expect(status_bar).to_be_visible(timeout=90_000)
    _run_all(page)
    studio = page.locator(".nk-studio")
    try:
        expect(studio).to_be_visible(timeout=90_000)
    except AssertionError:
        page.screenshot(path=str(SCREENSHOTS / "studio-failed-to-open.png"))
        raise
    expect(page.locator(".jp-OutputArea-output").filter(has_text="SERVING True")).to_be_visible()

    # a new definition, through the widgets
    picker = page.locator(".nk-app-picker input")
    picker.fill("demo")
    picker.press("Enter")
    page.locator(".nk-field-id input").fill("hello")
    page.locator(".nk-field-label input").fill("Hello greeting")
    page.locator(".nk-field-resource input").fill("hello/{name}")
    page.locator(".nk-field-content-type input").fill("application/json")
    page.locator(".nk-action textarea").fill(
        'name = req.pathParameters["name"]\nres.body = {"hello": name, "length": len(name)}'
    )
    page.locator("button.nk-save").click()
    expect(page.locator(".nk-studio > .nk-status")).to_contain_text("Saved demo / hello")
    expect(page.locator(".nk-definitions")).to_contain_text("Hello greeting")
    saved = Workspace(lab["home"]).get("demo", "hello")
    assert (saved.method, saved.resource, saved.requires_auth) == ("GET", "hello/{name}", True)

    # the Test panel runs the saved definition in the kernel
    page.locator(".nk-test-param-name input").fill("world")
    page.locator("button.nk-test-run").click()
    output = page.locator(".nk-test-output")
    expect(output).to_contain_text("Status 200")
    expect(output).to_contain_text('"hello": "world"')
    expect(output).to_contain_text('"length": 5')

    # deploy to dev: the endpoint URL appears, and the dev URL answers over HTTP
    page.locator("button.nk-deploy-dev").click()
    expect(page.locator(".nk-studio > .nk-status")).to_contain_text("Deployed demo to dev")
    link = page.locator("a.nk-url-dev")
    expect(link).to_have_attribute("href", f"{lab['api']}/dev/demo/hello/world")
    key = Workspace(lab["home"]).keys()["dev"]
    deadline = time.monotonic() + 5
    while True:  # live within a second on every server of the workspace
        response = httpx.get(link.get_attribute("href"), headers={"x-api-key": key}, timeout=5)
        if response.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert response.status_code == 200
    assert response.json() == {"hello": "world", "length": 5}
    assert httpx.get(f"{lab['api']}/dev/demo/hello/world", timeout=5).status_code == 403

    expect(page.locator(STDERR_OUTPUT)).to_have_count(0)
    page.locator(".nk-studio").screenshot(path=str(SCREENSHOTS / "studio.png"))
    page.screenshot(path=str(SCREENSHOTS / "jupyterlab.png"))
    if os.environ.get("NOTEBOOK_KIT_UPDATE_DOCS"):  # refresh the README's picture on purpose
        shutil.copyfile(SCREENSHOTS / "studio.png", REPO / "docs" / "studio.png")


# -- 2. CORS from another origin ---------------------------------------------------------

CALLER_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>calculator caller</title></head>
<body>
<h1>Calling the calculator from another origin</h1>
<p>with the key: <output id="with-key">...</output></p>
<p>without a key: <output id="without-key">...</output></p>
<p>as application/json: <output id="as-json">...</output></p>
<script>
const params = new URLSearchParams(location.search);
const url = params.get("api") + "/dev/restapi_sample/calculator";
const body = JSON.stringify({arg1: 0.1, arg2: 0.2, operation: "plus"});
async function call(id, headers) {
  const out = document.getElementById(id);
  try {
    const r = await fetch(url, {method: "POST", headers, body});
    out.textContent = r.status + " " + (await r.text());
  } catch (e) {
    out.textContent = "blocked: " + e.name;
  }
}
(async () => {
  // text/plain is a CORS-safelisted content type; x-api-key needs the preflight
  await call("with-key", {"x-api-key": params.get("key"), "Content-Type": "text/plain"});
  await call("without-key", {"Content-Type": "text/plain"});
  // the sample's preflight allows origin,x-api-key only: the browser must refuse this one
  await call("as-json", {"x-api-key": params.get("key"), "Content-Type": "application/json"});
  document.body.dataset.done = "yes";
})();
</script>
</body></html>
"""


@pytest.fixture
def other_origin(tmp_path: Path) -> Iterator[str]:
    """A plain static site on another loopback port: another origin than the API."""
    (tmp_path / "caller.html").write_text(CALLER_PAGE)
    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    site = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{site.server_port}"
    site.shutdown()
    site.server_close()
    thread.join(5)


def test_cors_preflight_lets_another_origin_call_calculator(
    page: Any,
    running_server: BackgroundServer,
    keys: dict[str, str],
    other_origin: str,
    sample_workspace: Workspace,
) -> None:
    query = httpx.QueryParams({"api": running_server.url, "key": keys["dev"]})
    page.goto(f"{other_origin}/caller.html?{query}")
    expect(page.locator("body[data-done=yes]")).to_be_attached()
    expect(page.locator("#with-key")).to_have_text("200 0.3")
    expect(page.locator("#without-key")).to_have_text("403 " + json.dumps({"message": "Forbidden"}))
    expect(page.locator("#as-json")).to_have_text("blocked: TypeError")
    page.screenshot(path=str(SCREENSHOTS / "cors-caller.png"))
    # the browser really asked first: the runtime logged the preflights
    running_server.app.ctx.runtime.flush_log()
    log = sample_workspace.request_log_frame()
    calls = log[log["path"] == "/dev/restapi_sample/calculator"]
    assert list(calls["method"]) == ["OPTIONS", "POST", "POST", "OPTIONS"]
    assert list(calls["status"]) == [200, 200, 403, 200]
