"""``TestPanel``: API Gateway's "Test invoke" for the saved definition, and "Send to dev"."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from http import HTTPStatus
from urllib.parse import quote

import ipywidgets as widgets

from ...domain.actions import Invocation, test_request
from ...domain.actions import invoke as run_invocation
from ...domain.models import Definition, Stage, endpoint_url
from ...errors import NotebookKitError, ValidationError
from ...workspace.workspace import Workspace
from .feedback import Status, show_text

__all__ = ["TestPanel", "format_result", "parse_headers"]


def parse_headers(text: str) -> dict[str, str]:
    """``Name: value`` lines (blank lines skipped) as a dict."""
    headers: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.strip() or " " in name.strip():
            raise ValidationError(
                f"header line {number} {line!r} must be written 'Name: value'", field="headers"
            )
        headers[name.strip()] = value.strip()
    return headers


def _pretty(body: bytes, content_type: str | None) -> str:
    text = body.decode("utf-8", "replace")
    if "json" in (content_type or "") or text[:1] in ("{", "["):
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    return text


def format_result(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    content_type: str | None,
    duration_ms: float,
    stdout: str = "",
    error: str | None = None,
) -> str:
    """What the panel shows for one call."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    lines = [f"Status {status} {phrase} · {duration_ms:.1f} ms".replace("  ", " "), ""]
    if content_type:
        lines.append(f"Content-Type: {content_type}")
    lines += [
        f"{name}: {value}" for name, value in headers.items() if name.lower() != "content-type"
    ]
    lines += ["", _pretty(body, content_type) if body else "(empty body)"]
    if stdout:
        lines += ["", "--- printed by the action ---", stdout.rstrip("\n")]
    if error:
        lines += ["", "--- traceback ---", error.rstrip("\n")]
    return "\n".join(lines) + "\n"


def _invocation_text(result: Invocation) -> str:
    return format_result(
        result.status,
        result.headers,
        result.body,
        result.content_type,
        result.duration_ms,
        result.stdout,
        result.error,
    )


class TestPanel(widgets.VBox):
    """Inputs for one call of ``definition``; runs it in-process or against the dev URL."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        workspace: Workspace,
        base_url: Callable[[], str] | None = None,
        draft: Callable[[], Definition] | None = None,
    ) -> None:
        self.workspace = workspace
        self.status = Status("nk-test-status")
        self.draft = draft
        self.base_url = base_url or (lambda: "http://127.0.0.1:8000")
        self.definition: Definition | None = None
        self.params: dict[str, widgets.Text] = {}
        self.title = widgets.HTML("<h4>Test</h4><i>Save or pick a definition to test it.</i>")
        self.param_box = widgets.VBox()
        self.param_box.add_class("nk-test-params")
        self.query = widgets.Text(description="Query", placeholder="a=1&b=2")
        self.headers = widgets.Textarea(
            description="Headers", placeholder="Content-Type: application/json"
        )
        self.body = widgets.Textarea(description="Body", placeholder='{"arg1": 1}')
        self.run = widgets.Button(description="Test", button_style="success", icon="play")
        self.send_dev = widgets.Button(description="Send to dev", icon="paper-plane")
        self.output = widgets.Output()
        for widget, css in (
            (self.query, "nk-test-query"),
            (self.headers, "nk-test-headers"),
            (self.body, "nk-test-body"),
            (self.run, "nk-test-run"),
            (self.send_dev, "nk-test-send-dev"),
            (self.output, "nk-test-output"),
        ):
            widget.add_class(css)
        self.run.on_click(self._on_run_click)
        self.send_dev.on_click(self._on_send_dev_click)
        self.run.disabled = self.send_dev.disabled = True
        super().__init__(
            [
                self.title,
                self.param_box,
                self.query,
                self.headers,
                self.body,
                widgets.HBox([self.run, self.send_dev, self.status]),
                self.output,
            ]
        )
        self.add_class("nk-test")

    def load(self, definition: Definition | None) -> None:
        """Test ``definition`` (one input per path parameter; values kept by name)."""
        self.definition = definition
        self.run.disabled = self.send_dev.disabled = definition is None
        if definition is None:
            self.title.value = "<h4>Test</h4><i>Save or pick a definition to test it.</i>"
            self.param_box.children = ()
            return
        self.title.value = f"<h4>Test {definition.method} /{definition.resource}</h4>"
        old = {name: text.value for name, text in self.params.items()}
        self.params = {}
        for name in definition.path_parameters:
            text = widgets.Text(value=old.get(name, ""), description=f"{{{name}}}")
            text.add_class("nk-test-param")
            text.add_class(f"nk-test-param-{name}")
            self.params[name] = text
        self.param_box.children = tuple(self.params.values())

    def refresh(self) -> None:
        """Nothing to re-read: the panel holds this session's inputs only."""

    def run_saved(self) -> None:
        self._on_run_click(self.run)

    def run_edited(self) -> None:
        """Run the definition as edited in the form (unsaved)."""
        with self.status.working(self.run, self.send_dev):
            if self.draft is None:
                raise ValidationError("nothing is being edited")
            d = self.draft()
            req = test_request(
                d,
                self.path_parameters(),
                self.query.value.strip().lstrip("?"),
                parse_headers(self.headers.value),
                self.body.value,
            )
            result = run_invocation(self.workspace.compile(d), req)
            show_text(self.output, _invocation_text(result))
            self.status.ok(f"Test of {d.id} (edited, in-process) answered {result.status}")

    def path_parameters(self) -> dict[str, str]:
        return {name: text.value for name, text in self.params.items()}

    def _current(self) -> Definition:
        if self.definition is None:
            raise ValidationError("save or pick a definition first")
        return self.definition

    def _on_run_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.run, self.send_dev):
            d = self._current()
            result = self.workspace.invoke(
                d.app,
                d.id,
                path_parameters=self.path_parameters(),
                query=self.query.value.strip().lstrip("?"),
                headers=parse_headers(self.headers.value),
                body=self.body.value,
            )
            show_text(self.output, _invocation_text(result))
            outcome = "raised an error" if result.error else f"answered {result.status}"
            self.status.ok(f"Test of {d.id} (saved, in-process) {outcome}")

    def dev_url(self) -> str:
        """The dev URL of the definition with the path parameters filled in."""
        d = self._current()
        values = self.path_parameters()
        missing = [name for name in d.path_parameters if not values.get(name)]
        if missing:
            raise ValidationError(
                f"give a value for the path parameter {{{missing[0]}}}", field="path_parameters"
            )
        resource = "/".join(
            quote(values[s[1:-1]], safe="") if s.startswith("{") else s for s in d.segments
        )
        url = endpoint_url(self.base_url(), Stage.DEV, d.app, resource)
        query = self.query.value.strip().lstrip("?")
        return f"{url}?{query}" if query else url

    def _on_send_dev_click(self, _button: widgets.Button) -> None:
        import httpx

        with self.status.working(self.run, self.send_dev):
            d = self._current()
            url = self.dev_url()
            headers = {
                "x-api-key": self.workspace.keys()["dev"],
                **parse_headers(self.headers.value),
            }
            started = time.perf_counter()
            try:
                answer = httpx.request(
                    d.method, url, headers=headers, content=self.body.value.encode(), timeout=30
                )
            except httpx.HTTPError as exc:
                raise NotebookKitError(
                    f"cannot reach {url}: {exc}; start the server in the Server panel"
                ) from None
            took = (time.perf_counter() - started) * 1000
            content_type = answer.headers.get("content-type")
            shown = {k: v for k, v in answer.headers.items() if k.lower() != "content-length"}
            show_text(
                self.output,
                f"{d.method} {url}\n"
                + format_result(answer.status_code, shown, answer.content, content_type, took),
            )
            self.status.ok(f"dev answered {answer.status_code}")
