"""End to end in a real headless Chromium (Debian's, driven by Playwright).

1. A real JupyterLab on loopback runs a notebook that opens the studio on the sample
   workspace; the test checks the two panes and tabs at 1280x800 and 1024x768 with no
   truncated label, opens a row, marks a compile error's line, asks before unsaved edits
   are lost, saves with Ctrl+S, sees a change made by another process and the real port.
   (The whole edit-test-deploy loop is ``test_studio_loop.py``.)
2. A plain page served from another origin calls the sample calculator with ``fetch`` and
   the ``x-api-key`` header: the CORS preflight passes in a real browser, a call without
   the key shows a readable 403, and a JSON content type (not allowed by the sample's
   preflight, kept as the spec has it) is blocked by the browser; a JSON API given its
   preflight by ``ws.add_preflight`` (the studio's "Add CORS preflight") takes that call.

Screenshots go to ``test-artifacts/screenshots/`` (CI keeps it). The README's picture,
``docs/studio.png``, is taken by ``test_studio_loop.py`` (with ``NOTEBOOK_KIT_UPDATE_DOCS=1``).
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.lab import (
    SCREENSHOTS,
    STDERR_OUTPUT,
    Lab,
    free_port,
    playwright_expect,
    run_all,
)

from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace

expect = playwright_expect()

pytestmark = pytest.mark.slow
VIEWPORT = {"width": 1400, "height": 3000}  # the page's size (and the screenshots')


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


# -- 1. the studio in JupyterLab ---------------------------------------------------------

STUDIO_CELLS = [
    """\
import os

import notebook_kit
from notebook_kit import Workspace

ws = Workspace(os.environ["NOTEBOOK_KIT_HOME"])  # made by the test, with the sample
server = ws.serve(port=int(os.environ["NK_STUDIO_PORT"]))
print("SERVING", server.running)""",
    "notebook_kit.studio(ws)",
]

# Elements whose text is cut (scrollWidth beyond their box): buttons, labels, tab titles.
TRUNCATED = """() => [...document.querySelectorAll(
  '.nk-studio button, .nk-studio .widget-label, .nk-studio .lm-TabBar-tabLabel, ' +
  '.nk-studio .widget-html-content')]
  .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
  .map(e => e.textContent.trim())"""


@pytest.fixture(scope="module")
def lab(jupyter: Lab) -> Iterator[dict[str, Any]]:
    """A real JupyterLab on loopback, isolated in a temp root, with the studio notebook."""
    root = jupyter.folder("studio")
    home = root / "workspace"
    Workspace(home).install_sample()
    api_port = free_port()
    env = {"NOTEBOOK_KIT_HOME": str(home), "NK_STUDIO_PORT": str(api_port)}
    with jupyter.notebook("studio", STUDIO_CELLS, env) as notebook:
        yield {
            "base": jupyter.base,
            "notebook": notebook.path,
            "home": home,
            "api": f"http://127.0.0.1:{api_port}",
        }


def _open_studio(page: Any, lab: dict[str, Any]) -> Any:
    run_all(page, lab["base"], lab["notebook"])
    studio = page.locator(".nk-studio")
    try:
        expect(studio).to_be_visible(timeout=90_000)
    except AssertionError:
        page.screenshot(path=str(SCREENSHOTS / "studio-failed-to-open.png"))
        raise
    return studio


def _type_code(page: Any, editor: Any, text: str) -> None:
    """Replace an editor's text as a person would: select all, then type (paste-like)."""
    editor.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)


def test_studio_shell_in_jupyterlab(page: Any, lab: dict[str, Any]) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    studio = _open_studio(page, lab)
    expect(page.locator(".jp-OutputArea-output").filter(has_text="SERVING True")).to_be_visible()
    tabs = studio.locator(".nk-tabs .lm-TabBar-tabLabel")
    expect(tabs).to_have_text(
        [
            "Edit",
            "Test",
            "Contract",
            "Deploy",
            "Logs",
            "Resources",
            "Server",
            "Consumers",
            "Secrets",
            "Schedules",
        ]
    )

    # side by side: the list on the left of the form, both in view at 1280x800
    row = studio.locator('.nk-definition-row[data-api-id="employee"]')
    row.click()
    expect(row).to_have_class(re.compile("nk-selected"))
    expect(studio.locator(".nk-field-id input")).to_have_value("employee")
    list_box = studio.locator(".nk-sidebar").bounding_box()
    form_box = studio.locator(".nk-form").bounding_box()
    assert list_box["x"] + list_box["width"] <= form_box["x"]
    assert page.evaluate(TRUNCATED) == []

    # a compile error marks its line; the marker says the form is unsaved
    action = studio.locator(".nk-action")
    _type_code(page, action, "x = 1\nres.body = (\n")
    expect(action.locator(".cm-nk-error-line")).to_have_count(1)
    expect(action.locator(".cm-nk-error-line")).to_contain_text("res.body = (")
    expect(studio.locator(".nk-unsaved")).to_contain_text("unsaved changes")
    page.keyboard.press("Control+s")  # refused: the reason beside Save and the field
    expect(studio.locator(".nk-save-status")).to_contain_text("action line 2")
    expect(studio.locator(".nk-error-action")).to_contain_text("action line 2")

    # picking another row with unsaved edits asks; Cancel keeps them
    studio.locator('.nk-definition-row[data-api-id="calculator"]').click()
    ask = studio.locator(".nk-discard-ask")
    expect(ask).to_contain_text("Discard unsaved changes to employee")
    assert page.evaluate(TRUNCATED) == []
    ask.locator("button.nk-discard-ask-cancel").click()
    expect(ask).to_be_hidden()
    expect(studio.locator(".nk-field-id input")).to_have_value("employee")

    # fixed, then Ctrl+S saves it: the marker goes, the list keeps the row selected
    _type_code(page, action, 'res.body = {"id": req.pathParameters["id"]}')
    expect(action.locator(".cm-nk-error-line")).to_have_count(0)
    page.keyboard.press("Control+s")
    expect(studio.locator(".nk-save-status")).to_contain_text("Saved restapi_sample / employee")
    expect(studio.locator(".nk-unsaved")).to_have_text("")
    assert Workspace(lab["home"]).get("restapi_sample", "employee").action == (
        'res.body = {"id": req.pathParameters["id"]}'
    )
    expect(row).to_have_class(re.compile("nk-selected"))
    expect(row.locator(".nk-state-dev")).to_have_text("dev: changed")

    # another process changes the store: the studio shows it within two seconds
    Workspace(lab["home"]).create(
        "restapi_sample", "ping", label="Ping from elsewhere", method="GET", resource="ping"
    )
    expect(studio.locator('.nk-definition-row[data-api-id="ping"]')).to_be_visible(timeout=3_000)

    # the Server tab shows the port really served on
    tabs.filter(has_text="Server").click()
    port = lab["api"].rsplit(":", 1)[1]
    expect(studio.locator(".nk-server-state")).to_contain_text(f"port {port}")
    expect(studio.locator(".nk-server-port input")).to_have_value(port)

    expect(page.locator(STDERR_OUTPUT)).to_have_count(0)
    # no label cut in any tab, at 1280x800 and at 1024x768
    for width, height in ((1280, 800), (1024, 768)):
        page.set_viewport_size({"width": width, "height": height})
        for title in ("Test", "Deploy", "Logs", "Resources", "Server", "Edit"):
            tabs.filter(has_text=title).click()
            page.wait_for_timeout(300)  # the tab's layout settles
            assert (title, width, page.evaluate(TRUNCATED)) == (title, width, [])
        studio.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.screenshot(path=str(SCREENSHOTS / f"jupyterlab-{width}.png"))
    studio.screenshot(path=str(SCREENSHOTS / "studio.png"))


# -- 2. CORS from another origin ---------------------------------------------------------

CALLER_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>calculator caller</title></head>
<body>
<h1>Calling the calculator from another origin</h1>
<p>with the key: <output id="with-key">...</output></p>
<p>without a key: <output id="without-key">...</output></p>
<p>as application/json: <output id="as-json">...</output></p>
<p>a JSON API with its own preflight: <output id="json-api">...</output></p>
<script>
const params = new URLSearchParams(location.search);
const url = params.get("api") + "/dev/restapi_sample/calculator";
const body = JSON.stringify({arg1: 0.1, arg2: 0.2, operation: "plus"});
async function call(id, headers, to = url) {
  const out = document.getElementById(id);
  try {
    const r = await fetch(to, {method: "POST", headers, body});
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
  const json = {"x-api-key": params.get("key"), "Content-Type": "application/json"};
  await call("json-api", json, params.get("api") + "/dev/notes/note");
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
    echo = 'res.headers["Access-Control-Allow-Origin"] = "*"\nres.body = req.body\n'
    sample_workspace.create(
        "notes", "note", label="A note", method="POST", resource="note", action=echo,
        content_type="application/json",
    )  # fmt: skip
    sample_workspace.add_preflight("notes", "note")
    sample_workspace.deploy("notes", "dev")
    running_server.sync()
    query = httpx.QueryParams({"api": running_server.url, "key": keys["dev"]})
    page.goto(f"{other_origin}/caller.html?{query}")
    expect(page.locator("body[data-done=yes]")).to_be_attached()
    expect(page.locator("#with-key")).to_have_text("200 0.3")
    expect(page.locator("#without-key")).to_have_text("403 " + json.dumps({"message": "Forbidden"}))
    expect(page.locator("#as-json")).to_have_text("blocked: TypeError")
    expect(page.locator("#json-api")).to_have_text(
        "200 " + json.dumps({"arg1": 0.1, "arg2": 0.2, "operation": "plus"}, separators=(",", ":"))
    )
    page.screenshot(path=str(SCREENSHOTS / "cors-caller.png"))
    # the browser really asked first: the runtime logged the preflights
    running_server.sync()
    log = sample_workspace.request_log_frame()
    calls = log[log["path"] == "/dev/restapi_sample/calculator"]
    assert list(calls["method"]) == ["OPTIONS", "POST", "POST", "OPTIONS"]
    assert list(calls["status"]) == [200, 200, 403, 200]
