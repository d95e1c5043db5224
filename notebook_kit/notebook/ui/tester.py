"""``TestPanel``: call one definition the way Postman would, in a test run or on the dev URL.

Run saved runs the definition as saved (in a fresh sandboxed process, within its time
limit, as every test run); Run edited runs the form's draft (unsaved edits
included) without saving it; Send to dev calls the live dev URL through the running server
with the dev key. Each shows the status (coloured by class), the duration of the whole run,
which version ran, the response headers, the body (JSON indented), what the action printed
and its traceback, and lands in the history, from where it can be run again.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Mapping
from dataclasses import replace

import ipywidgets as widgets

from ...domain.models import Definition, Stage, endpoint_url
from ...errors import NotebookKitError, NotFoundError, ValidationError
from ...workspace.workspace import Workspace
from .answer import format_result, parse_headers, phrase
from .copy import CopyButton
from .curl import fill_resource, request_curl
from .examples import ExamplesPanel
from .feedback import Status, show_text
from .history import (
    VERSION_LABELS,
    TestCall,
    TestHistory,
    format_duration,
    status_class,
    status_colour,
    wrapping,
)

__all__ = ["TestPanel", "format_result", "parse_headers"]

# A new definition can already run as edited; the saved version and dev need a save.
_NO_DEFINITION = (
    "<h4>Test</h4><i>Not saved yet: Run edited runs the form as it is; save it to run "
    "the saved version or send it to dev.</i>"
)


class TestPanel(widgets.VBox):
    """The Test tab. ``draft()`` returns the definition as edited in the form (unsaved);
    ``base_url()`` the server the dev URL is on."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        workspace: Workspace,
        base_url: Callable[[], str],
        draft: Callable[[], Definition],
    ) -> None:
        self.workspace = workspace
        self.base_url = base_url
        self.draft = draft
        self.definition: Definition | None = None
        self.target: Definition | None = None  # what the request line shows
        self.params: dict[str, widgets.Text] = {}
        self.title = widgets.HTML(_NO_DEFINITION)
        self.request = widgets.HTML()
        self.param_box = widgets.VBox()
        self.param_box.add_class("nk-test-params")
        wide = {"width": "auto", "max_width": "48em"}  # fills the panel, margins included
        self.query = widgets.Text(
            description="Query", placeholder="a=1&b=2", layout=widgets.Layout(**wide)
        )
        self.headers = widgets.Textarea(
            description="Headers",
            placeholder="Content-Type: application/json",
            layout=widgets.Layout(**wide),
        )
        self.body = widgets.Textarea(
            description="Body", placeholder='{"arg1": 1}', layout=widgets.Layout(**wide)
        )
        auto = widgets.Layout(width="auto")
        self.saved_button = widgets.Button(
            description="Run saved", button_style="success", icon="play", layout=auto
        )
        self.edited_button = widgets.Button(
            description="Run edited", button_style="warning", icon="play", layout=auto
        )
        self.dev_button = widgets.Button(description="Send to dev", icon="paper-plane", layout=auto)
        self.message = Status("nk-test-message")
        self.status = widgets.HTML()
        self.duration = widgets.HTML()
        self.version = widgets.HTML()
        self.output = widgets.Output()
        self.curl = widgets.Textarea(layout=widgets.Layout(flex="1 1 auto", height="4em"))
        self.curl_reveal = widgets.ToggleButton(  # a layout of its own: it hides alone
            description="Reveal key", icon="eye", layout=widgets.Layout(width="auto"), value=False
        )
        self.curl_copy = CopyButton()
        for fixed in (self.curl_reveal, self.curl_copy):  # the textarea takes the rest
            fixed.layout.flex, fixed.layout.width = "0 0 auto", "auto"
        self.history = TestHistory(on_rerun=self.rerun)
        self.examples = ExamplesPanel(workspace, self.current_request)
        for widget, css in (
            (self.request, "nk-test-request"),
            (self.query, "nk-test-query"),
            (self.headers, "nk-test-headers"),
            (self.body, "nk-test-body"),
            (self.saved_button, "nk-test-run-saved"),
            (self.edited_button, "nk-test-run-edited"),
            (self.dev_button, "nk-test-send-dev"),
            (self.status, "nk-test-status"),
            (self.duration, "nk-test-duration"),
            (self.version, "nk-test-version"),
            (self.output, "nk-test-output"),
            (self.curl, "nk-test-curl"),
            (self.curl_reveal, "nk-test-curl-reveal"),
        ):
            widget.add_class(css)
        self.saved_button.on_click(self._on_saved_button_click)
        self.edited_button.on_click(self._on_edited_button_click)
        self.dev_button.on_click(self._on_dev_button_click)
        for widget in (self.query, self.headers, self.body, self.curl_reveal):
            widget.observe(self._on_request_value, names="value")
        self.curl_reveal.observe(self._on_curl_reveal_value, names="value")
        self.saved_button.disabled = self.dev_button.disabled = True
        super().__init__(
            [
                self.title,
                self.request,
                self.param_box,
                self.query,
                self.headers,
                self.body,
                wrapping(self.saved_button, self.edited_button, self.dev_button, self.message),
                wrapping(self.status, self.duration, self.version),
                self.output,
                widgets.HTML("<b>curl</b> <i>(the dev URL with the dev key)</i>"),
                widgets.HBox([self.curl, self.curl_reveal, self.curl_copy]),
                self.history,
                self.examples,
            ]
        )
        self.add_class("nk-test")

    @property
    def buttons(self) -> tuple[widgets.Button, ...]:
        return (self.saved_button, self.edited_button, self.dev_button)

    # -- what is tested ----------------------------------------------------------------

    def load(self, definition: Definition | None) -> None:
        """Test ``definition`` (the saved one, None for a new one): one input per path
        parameter, values kept by name."""
        self.definition = definition
        self.examples.load(definition)
        self.saved_button.disabled = self.dev_button.disabled = definition is None
        if definition is None:
            self.title.value = _NO_DEFINITION
        else:
            self.title.value = (
                f"<h4>Test {html.escape(definition.app)} / {html.escape(definition.id)}</h4>"
            )
        self._aim(definition)

    def _aim(self, definition: Definition | None) -> None:
        """Make the request line, the path parameter inputs and the curl describe
        ``definition``: the saved one, or the edited draft that Run edited just ran
        (its method and resource may differ from the saved ones)."""
        self.target = definition
        names = list(definition.path_parameters) if definition is not None else []
        if names != list(self.params):
            old = {name: text.value for name, text in self.params.items()}
            self.params = {}
            for name in names:
                text = widgets.Text(value=old.get(name, ""), description=f"{{{name}}}")
                text.add_class("nk-test-param")
                text.add_class(f"nk-test-param-{name}")
                text.observe(self._on_request_value, names="value")
                self.params[name] = text
            self.param_box.children = tuple(self.params.values())
        self._show_request()

    def refresh(self) -> None:
        """Read the saved definition again (another process may have changed it)."""
        d = self.definition
        if d is None:
            return
        try:
            saved = self.workspace.get(d.app, d.id)
        except NotFoundError:
            self.load(None)  # deleted meanwhile
            return
        if saved != d:  # unchanged: the inputs and an edited request line stay as they are
            self.load(saved)

    def path_parameters(self) -> dict[str, str]:
        return {name: text.value for name, text in self.params.items()}

    def current_request(self) -> dict[str, object]:
        """The request the inputs describe, as an example keeps it."""
        return {
            "path_parameters": self.path_parameters(),
            "query": self._query(),
            "headers": parse_headers(self.headers.value),
            "body": self.body.value,
        }

    def _query(self) -> str:
        return self.query.value.strip().lstrip("?")

    def url_of(self, definition: Definition, values: Mapping[str, str], query: str) -> str:
        """The dev URL of ``definition`` with ``values`` filled in and ``query`` appended."""
        url = endpoint_url(
            self.base_url(), Stage.DEV, definition.app, fill_resource(definition, values)
        )
        return f"{url}?{query}" if query else url

    def dev_url(self) -> str:
        """The dev URL of the saved definition; every path parameter needs a value."""
        d = self._saved()
        values = self.path_parameters()
        missing = [name for name in d.path_parameters if not values.get(name)]
        if missing:
            raise ValidationError(
                f"give a value for the path parameter {{{missing[0]}}}", field="path_parameters"
            )
        return self.url_of(d, values, self._query())

    def _show_request(self) -> None:
        """The request line (method and full URL) and the curl of the current inputs."""
        d = self.target
        if d is None:
            self.request.value = self.curl.value = self.curl_copy.text = ""
            return
        url = self.url_of(d, self.path_parameters(), self._query())
        edited = d != self.definition
        note = ' <i class="nk-test-edited">(the edited version, unsaved)</i>' if edited else ""
        self.request.value = (
            f'<code><b>{d.method}</b> <span class="nk-test-url">{html.escape(url)}</span></code>'
            + note
        )
        try:
            headers = parse_headers(self.headers.value)
        except ValidationError:
            headers = {}  # half-typed headers: the curl line waits for them
        key = self.workspace.keys()["dev"] if d.requires_auth else None
        self.curl_reveal.layout.display = None if key else "none"  # no key: nothing to reveal
        self.curl.value = request_curl(
            d.method, url, headers, self.body.value, key, self.curl_reveal.value
        )
        self.curl_copy.text = request_curl(d.method, url, headers, self.body.value, key, True)

    def _on_request_value(self, _change: dict[str, object]) -> None:
        self._show_request()

    def _on_curl_reveal_value(self, change: dict[str, object]) -> None:
        self.curl_reveal.description = "Hide key" if change["new"] else "Reveal key"

    # -- running -----------------------------------------------------------------------

    def _saved(self) -> Definition:
        if self.definition is None:
            raise ValidationError("save the definition first (Run edited runs it unsaved)")
        return self.definition

    def _call(self, version: str, definition: Definition) -> TestCall:
        """A call of ``definition`` with the panel's current inputs (not sent yet)."""
        values = self.path_parameters()
        headers = parse_headers(self.headers.value)
        url = self.url_of(definition, values, self._query())
        return TestCall(
            version, definition, values, self._query(), headers, self.body.value, url, 0, 0.0
        )

    def _execute(self, call: TestCall) -> None:
        """Send ``call`` again (its version decides how), show the answer, add it to the
        history."""
        raised = False
        if call.version == "dev":
            done, text = self._send_dev(call)
        else:
            d = call.definition
            request = {"path_parameters": call.path_parameters, "headers": call.headers}
            if call.version == "saved":
                result = self.workspace.invoke(
                    d.app, d.id, **request, query=call.query, body=call.body
                )
            else:
                result = self.workspace.invoke_draft(d, **request, query=call.query, body=call.body)
            done = replace(call, status=result.status, duration_ms=result.duration_ms)
            text = format_result(
                result.headers, result.body, result.content_type, result.stdout, result.error
            )
            raised = result.error is not None
        self._show(done, text)
        self.history.add(done)
        self.examples.answered(done.status)
        outcome = "raised an error" if raised else f"answered {done.status}"
        said = f"{call.definition.id}: {VERSION_LABELS[call.version]}, {outcome}"
        if raised or done.status >= 400:
            self.message.info(said)  # it ran; the answer (not green) is the news
        else:
            self.message.ok(said)

    def _send_dev(self, call: TestCall) -> tuple[TestCall, str]:
        import httpx

        d = call.definition
        url = self.url_of(d, call.path_parameters, call.query)
        missing = [name for name in d.path_parameters if not call.path_parameters.get(name)]
        if missing:
            raise ValidationError(
                f"give a value for the path parameter {{{missing[0]}}}", field="path_parameters"
            )
        headers = {"x-api-key": self.workspace.keys()["dev"], **call.headers}
        started = time.perf_counter()
        try:
            answer = httpx.request(
                d.method, url, headers=headers, content=call.body.encode(), timeout=30
            )
        except httpx.HTTPError as exc:
            raise NotebookKitError(
                f"cannot reach {url}: {exc}; start the server in the Server tab"
            ) from None
        took = (time.perf_counter() - started) * 1000
        shown = {k: v for k, v in answer.headers.items() if k.lower() != "content-length"}
        text = format_result(shown, answer.content, answer.headers.get("content-type"))
        return replace(call, url=url, status=answer.status_code, duration_ms=took), text

    def _show(self, call: TestCall, text: str) -> None:
        for cls in ("2xx", "3xx", "4xx", "5xx"):
            self.status.remove_class(f"nk-status-{cls}")
        self.status.add_class(f"nk-status-{status_class(call.status)}")
        said = phrase(call.status)
        self.status.value = (
            f'<b style="color:{status_colour(call.status)}">{call.status} {said}</b>'.replace(
                " </b>", "</b>"
            )
        )
        self.duration.value = f"<span>{format_duration(call.duration_ms)}</span>"
        self.version.value = f"<i>{VERSION_LABELS[call.version]}</i>"
        show_text(self.output, f"{call.method} {call.url}\n\n{text}")

    def run_saved(self) -> None:
        """Run the saved definition with the current inputs (a refusal shows beside the
        buttons)."""
        with self.message.working(*self.buttons):
            self._aim(self._saved())
            self._execute(self._call("saved", self._saved()))

    def run_edited(self) -> None:
        """Run the form's draft, unsaved edits included (Ctrl/Cmd+Enter in the editor)."""
        with self.message.working(*self.buttons):
            draft = self.draft()
            self._aim(draft)
            self._execute(self._call("edited", draft))

    def send_to_dev(self) -> None:
        """Call the live dev URL of the saved definition through the running server."""
        with self.message.working(*self.buttons):
            d = self._saved()
            if self.workspace.deployed_state(d, Stage.DEV) == "not deployed":
                raise ValidationError(
                    f"{d.app} / {d.id} is not deployed to dev: deploy to dev first (Deploy tab)"
                )
            self._aim(d)
            self._execute(self._call("dev", d))

    def rerun(self, call: TestCall) -> None:
        """Run ``call`` again: the saved definition as saved now, the same draft, or the
        dev URL again."""
        with self.message.working(*self.buttons):
            if call.version == "saved":
                d = call.definition
                call = replace(call, definition=self.workspace.get(d.app, d.id))
            self._aim(call.definition)
            self._execute(call)

    def _on_saved_button_click(self, _button: widgets.Button) -> None:
        self.run_saved()

    def _on_edited_button_click(self, _button: widgets.Button) -> None:
        self.run_edited()

    def _on_dev_button_click(self, _button: widgets.Button) -> None:
        self.send_to_dev()
