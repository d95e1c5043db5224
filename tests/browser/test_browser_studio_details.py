"""The studio's details in a real JupyterLab and Debian's headless Chromium: what only a
browser shows.

A key typed just before a click is saved; Enter and Ctrl+S in the form's fields save; a
compile error's message shows under the editor; the Deploy tab's curl masks the key and
fills the Test tab's parameters, a deploy carries its description into the history, whose
rows each roll back (confirmed); the Logs charts sit side by side with the table above the
fold at 1280x800, and a row opens its entry; at 800, 1024 and 1280 px no control in any
tab is cut and nothing scrolls sideways.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.lab import (
    SCREENSHOTS,
    STDERR_OUTPUT,
    Lab,
    free_port,
    new_page,
    playwright_expect,
    run_all,
)

from notebook_kit.workspace.workspace import Workspace

expect = playwright_expect()

pytestmark = pytest.mark.slow

CELLS = [
    """\
import os

import notebook_kit
from notebook_kit import Workspace

ws = Workspace(os.environ["NOTEBOOK_KIT_HOME"])  # made by the test, with the sample
server = ws.serve(port=int(os.environ["NK_STUDIO_PORT"]))
print("SERVING", server.running)""",
    "notebook_kit.studio(ws)",
]

TABS = ("Edit", "Test", "Deploy", "Logs", "Resources", "Server")

# Controls that are cut: text wider than its box (buttons, labels, titles), a control
# reaching past the pane that holds it, or a box that scrolls (or clips) sideways. Inputs
# and text areas scroll their own text by design; editors and diffs scroll code.
CUT = """() => {
  const studio = document.querySelector('.nk-studio');
  const edge = studio.getBoundingClientRect().right;
  const shown = (e) => e.offsetParent !== null && e.getClientRects().length > 0;
  const name = (e) => (e.className && typeof e.className === 'string'
      ? e.className.split(' ').filter(c => c.startsWith('nk-')).join('.') : '') ||
      e.tagName + ':' + (e.textContent || e.value || '').trim().slice(0, 30);
  const cut = [];
  for (const e of studio.querySelectorAll(
      'button, .widget-label, .lm-TabBar-tabLabel, .widget-html-content, label')) {
    if (shown(e) && e.scrollWidth > e.clientWidth + 1) cut.push('text ' + name(e));
  }
  for (const e of studio.querySelectorAll('button, input, select, textarea, .nk-copy')) {
    if (shown(e) && e.getBoundingClientRect().right > edge + 1) cut.push('past ' + name(e));
  }
  for (const e of studio.querySelectorAll('*')) {
    if (!shown(e) || e.closest('.cm-editor, pre, textarea, input, select')) continue;
    const x = getComputedStyle(e).overflowX;
    if (x !== 'visible' && e.scrollWidth > e.clientWidth + 1) {
      const right = e.getBoundingClientRect().right;
      const wide = [...e.querySelectorAll('*')]
        .find(c => c.getBoundingClientRect().right > right + 1);
      cut.push('sideways ' + name(e) + (wide ? ' by ' + name(wide) : ''));
    }
  }
  return cut;
}"""


# A person typing fast and clicking at once: one key after another into the field, each
# its own input event (the first update goes to the kernel, the later ones wait for it),
# then Save clicked in the same breath, before the last key's update has gone out.
TYPE_THEN_CLICK = """(input, text) => {
  input.focus();
  for (let i = 1; i <= text.length; i++) {
    input.value = text.slice(0, i);
    input.dispatchEvent(new Event('input', {bubbles: true}));
  }
  input.closest('.nk-studio').querySelector('button.nk-save').click();
}"""


@pytest.fixture(scope="module")
def lab(jupyter: Lab) -> Iterator[dict[str, Any]]:
    root = jupyter.folder("details")
    home = root / "workspace"
    Workspace(home).install_sample()
    api_port = free_port()
    env = {"NOTEBOOK_KIT_HOME": str(home), "NK_STUDIO_PORT": str(api_port)}
    with jupyter.notebook("details", CELLS, env) as notebook:
        yield {
            "base": jupyter.base,
            "notebook": notebook.path,
            "home": home,
            "api": f"http://127.0.0.1:{api_port}",
        }


@pytest.fixture(scope="module")
def page(chromium: Any, lab: dict[str, Any]) -> Iterator[Any]:
    with new_page(chromium, {"width": 1280, "height": 800}) as tab:
        run_all(tab, lab["base"], lab["notebook"])
        expect(tab.locator(".nk-studio")).to_be_visible(timeout=90_000)
        expect(tab.locator(".nk-definition-row").first).to_be_visible()
        yield tab


def _open(page: Any, api_id: str) -> None:
    """Open a definition and wait until the form shows it (the pick is answered once the
    kernel has heard back from the page)."""
    page.locator(f'.nk-definition-row[data-api-id="{api_id}"]').click()
    expect(page.locator(".nk-field-id input")).to_have_value(api_id)
    expect(page.locator(".nk-form h4")).to_have_text(f"Edit restapi_sample / {api_id}")
    page.wait_for_timeout(300)  # the rest of the form follows in the same message


def _tab(page: Any, title: str) -> None:
    page.locator(".nk-tabs .lm-TabBar-tabLabel").filter(has_text=title).click()


def _saved(lab: dict[str, Any]) -> Any:
    return Workspace(lab["home"]).get("restapi_sample", "employee")


def test_a_key_typed_just_before_save_is_saved(page: Any, lab: dict[str, Any]) -> None:
    _open(page, "employee")
    field = page.locator(".nk-field-resource input")
    expect(field).to_have_value("employee/{id}")
    status = page.locator(".nk-save-status")
    for n, resource in enumerate(("items/{sku}", "goods/{sku}/x", "employee/{id}")):
        before = _saved(lab).updated_at
        field.evaluate(TYPE_THEN_CLICK, resource)
        deadline = time.monotonic() + 10
        while _saved(lab).updated_at == before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (n, _saved(lab).resource) == (n, resource)  # not a prefix of it
        expect(status).to_contain_text("Saved restapi_sample / employee at")
        expect(field).to_have_value(resource)
        expect(page.locator(".nk-unsaved")).to_have_text("")


def test_enter_and_ctrl_s_in_the_fields_save(page: Any, lab: dict[str, Any]) -> None:
    _open(page, "employee")
    label = page.locator(".nk-field-label input")
    label.click()
    page.keyboard.press("Control+a")
    page.keyboard.type("Employee, saved by Enter")
    page.keyboard.press("Enter")
    status = page.locator(".nk-save-status")
    expect(status).to_contain_text("Saved restapi_sample / employee")
    assert _saved(lab).label == "Employee, saved by Enter"
    expect(page.locator(".nk-unsaved")).to_have_text("")

    label.click()
    page.keyboard.press("Control+a")
    page.keyboard.type("Employee lookup")
    expect(page.locator(".nk-unsaved")).to_contain_text("unsaved changes")
    expect(status).to_have_text("")  # the old "Saved at" no longer stands beside it
    page.keyboard.press("Control+s")  # saves the definition, not the notebook
    expect(status).to_contain_text("Saved restapi_sample / employee")
    assert _saved(lab).label == "Employee lookup"
    expect(page.locator(".jp-Dialog")).to_have_count(0)


def test_a_compile_error_shows_under_the_editor(page: Any, lab: dict[str, Any]) -> None:
    _open(page, "calculator")
    saved = Workspace(lab["home"]).get("restapi_sample", "calculator").action
    editor = page.locator(".nk-action")
    editor.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text("x = 1\nres.body = (\n")
    under = page.locator(".nk-error-action")
    expect(under).to_contain_text("line 2")  # written out, not only a marker's tooltip
    assert under.bounding_box()["y"] > editor.bounding_box()["y"]  # below it, in view
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(saved)
    expect(under).to_have_text("")
    expect(page.locator(".nk-unsaved")).to_have_text("")


def test_deploy_tab_curl_description_and_row_rollback(page: Any, lab: dict[str, Any]) -> None:
    _open(page, "employee")
    _tab(page, "Test")
    page.locator(".nk-test-param-id input").fill("E001")
    _tab(page, "Deploy")
    key = Workspace(lab["home"]).keys()["dev"]
    curl = page.locator(".nk-curl textarea")
    expect(curl).to_have_value(re.compile(r"/dev/restapi_sample/employee/E001 "))
    expect(curl).to_have_value(re.compile(rf"x-api-key: •+{key[-4:]}'$"))
    page.locator(".nk-curl-reveal").click()
    expect(curl).to_have_value(re.compile(rf"x-api-key: {key}'$"))

    page.locator(".nk-deploy-description input").fill("with the E001 fix")
    page.locator("button.nk-deploy-dev").click()
    expect(page.locator(".nk-deploy-status")).to_contain_text("Deployed restapi_sample to dev")
    newest = Workspace(lab["home"]).deployments("restapi_sample")[-1]
    assert newest.description == "with the E001 fix"
    row = page.locator(f'.nk-deployments-dev tr[data-deployment-id="{newest.id}"]')
    expect(row).to_contain_text("with the E001 fix")
    expect(row).to_contain_text(re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"))  # readable
    expect(row.locator(".nk-live")).to_be_visible()
    expect(page.locator("button.nk-undeploy-dev")).to_be_enabled()

    older = page.locator(".nk-deployments-dev button.nk-row-rollback").first
    target = older.get_attribute("data-nk-id")
    older.click()
    confirm = page.locator("button.nk-rollback-ask-confirm")
    expect(confirm).to_have_text(f"Confirm rollback to {target}")
    confirm.click()
    expect(page.locator(".nk-rollback-status")).to_contain_text(f"deployment {target}")
    expect(page.locator(".nk-deploy-status")).to_have_text("")  # an older action's line
    live = page.locator(f'.nk-deployments-dev tr[data-deployment-id="{target}"] .nk-live')
    expect(live).to_be_visible()


def test_logs_charts_side_by_side_and_a_row_opens(page: Any, lab: dict[str, Any]) -> None:
    key = Workspace(lab["home"]).keys()["dev"]
    for path in ("employee/E001", "employee/E999", "nothing"):
        httpx.get(f"{lab['api']}/dev/restapi_sample/{path}", headers={"x-api-key": key})
    _tab(page, "Logs")
    rows = page.locator(".nk-logs-table tbody tr")
    expect(rows.first).to_be_visible(timeout=15_000)
    rate = page.locator(".nk-logs-chart-rate").bounding_box()
    latency = page.locator(".nk-logs-chart-latency").bounding_box()
    assert abs(rate["y"] - latency["y"]) < 2 and latency["x"] >= rate["x"] + rate["width"]
    page.locator(".nk-studio").evaluate("e => e.scrollIntoView({block: 'start'})")
    table = page.locator(".nk-logs-table").bounding_box()
    assert table["y"] < 800, table  # above the fold at 1280x800
    rows.first.click()
    details = page.locator(".nk-logs-details")
    expect(details).to_contain_text("duration")
    expect(details).to_contain_text("/dev/restapi_sample/")
    page.locator("button.nk-logs-details-close").click()
    expect(details).to_have_text("")


@pytest.mark.parametrize("width", [800, 1024, 1280])
def test_no_control_is_cut(page: Any, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 800})
    _open(page, "employee")
    picker = page.locator(".nk-app-picker").bounding_box()
    bar = page.locator(".nk-app-bar").bounding_box()
    assert picker["x"] + picker["width"] <= bar["x"] + bar["width"] + 0.5, (picker, bar)
    for title in (*TABS[1:], TABS[0]):
        _tab(page, title)
        page.wait_for_timeout(300)  # the tab's layout settles
        assert (width, title, page.evaluate(CUT)) == (width, title, [])
    page.locator(".nk-studio").evaluate("e => e.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(SCREENSHOTS / f"studio-details-{width}.png"))
    expect(page.locator(STDERR_OUTPUT)).to_have_count(0)
