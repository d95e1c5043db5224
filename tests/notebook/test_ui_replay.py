"""The replay bar of the Logs tab from Python, in a whole studio over a real workspace and a
real server: a recorded call opens in the Test tab with one click (definition, path
parameter, query, headers and body filled in; credentials not carried), is saved as an
example from there, and replays against another version with the diff shown. In the
browser: ``test_browser_replay.py``."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from support.polling import wait_until

from notebook_kit.notebook.ui.studio import TAB_TITLES, Studio
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace

APP = "restapi_sample"


@pytest.fixture
def studio(sample_workspace: Workspace) -> Iterator[Studio]:
    ws = sample_workspace
    ws.set_setting("record_requests_dev", "true")
    key = ws.keys()["dev"]
    with (
        BackgroundServer(ws) as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
    ):
        headers = {"x-api-key": key, "X-Trace": "abc", "Cookie": "s=1"}
        client.get(f"/dev/{APP}/employee/E002?verbose=1", headers=headers)
        client.get("/dev/nowhere")
        wait_until(lambda: len(ws.request_log()) == 2)
    widget = Studio(ws, poll_interval=None)
    widget.tabs.selected_index = TAB_TITLES.index("Logs")
    yield widget
    widget.close()


def test_a_logged_call_opens_in_the_test_tab(studio: Studio) -> None:
    bar = studio.logs.replay
    assert bar.layout.display is None
    assert [label.split(" · ")[1] for label, _ in bar.entry.options] == [
        "GET /dev/nowhere",
        f"GET /dev/{APP}/employee/E002",
    ]
    assert bar.entry.value == bar.entry.options[0][1]  # the newest is chosen
    bar.entry.value = bar.entry.options[1][1]
    bar.open_button.click()
    tester = studio.tester
    assert studio.tabs.selected_index == TAB_TITLES.index("Test")
    assert studio.current is not None and studio.current.id == "employee"
    assert tester.params["id"].value == "E002"
    assert tester.query.value == "verbose=1"
    headers = dict(line.split(": ", 1) for line in tester.headers.value.splitlines())
    assert headers["x-trace"] == "abc"
    assert not {"x-api-key", "cookie", "host"} & {name.lower() for name in headers}
    assert tester.message.text.startswith(f"Logged call {bar.entry.value} loaded")
    tester.saved_button.click()
    assert "200" in tester.status.value and "Bob" in str(tester.output.outputs)
    # ... and saved as an example from there (the Test tab's examples)
    tester.examples.name.value = "from-log"
    tester.examples.save_button.click()
    [example] = studio.workspace.examples(APP, "employee")
    assert (example.name, example.expect.status) == ("from-log", 200)
    assert dict(example.request.path_parameters) == {"id": "E002"}
    assert example.request.query == "verbose=1" and example.request.headers["x-trace"] == "abc"


def test_a_call_outside_any_definition_says_so(studio: Studio) -> None:
    bar = studio.logs.replay
    bar.entry.value = bar.entry.options[0][1]  # /dev/nowhere
    bar.open_button.click()
    assert "reaches no definition in saved" in bar.status.text
    assert studio.tabs.selected_index == TAB_TITLES.index("Logs")


def test_replay_against_a_version_shows_the_diff(studio: Studio) -> None:
    ws, bar = studio.workspace, studio.logs.replay
    bar.entry.value = bar.entry.options[1][1]
    prod = next(d.id for d in ws.deployments(APP) if d.active and d.stage == "prod")
    assert str(prod) in [value for _, value in bar.against.options]  # deployments offered
    bar.against.value = "prod"
    bar.replay_button.click()
    assert bar.status.text.startswith("Same answer: deployment")
    assert bar.result.value == ""
    ws.edit(APP, "employee", action="res.statusCode = 418")
    bar.against.value = "saved"
    bar.replay_button.click()
    assert bar.status.text.endswith("answered 200, saved 418")
    assert "The answers differ" in bar.status.text
    assert "+status 418" in bar.result.value and "-status 200" in bar.result.value
