"""OpenTelemetry tracing (``runtime/process/tracing.py``): with the ``tracing`` setting on,
a real OTLP/HTTP receiver on loopback gets a server span per call (continuing the
caller's ``traceparent``) and a client span per ``http`` and ``db`` call its action made,
from an action process and from an action run inline in the worker; off, the server
loads nothing of OpenTelemetry."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from support.polling import wait_until

from notebook_kit import Workspace
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.sandbox.pace import PROMOTE_AFTER

APP = "traced"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
CALLS = PROMOTE_AFTER + 8


class _Receiver(BaseHTTPRequestHandler):
    """POST /v1/traces: OTLP protobuf, kept; GET /hello: what the action calls."""

    spans: list[tuple[Any, dict[str, Any]]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/traces":
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_spans:
                attributes = {a.key: a.value.string_value for a in resource.resource.attributes}
                for scope in resource.scope_spans:
                    self.server.spans.extend((span, attributes) for span in scope.spans)  # type: ignore[attr-defined]
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def receiver() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.spans = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def traced(
    receiver: ThreadingHTTPServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BackgroundServer]:
    hello = f"http://127.0.0.1:{receiver.server_address[1]}/hello"
    workspace = Workspace(tmp_path_factory.mktemp("tracing") / "home")
    workspace.create_application(APP)
    outbound = f"got = http.get({hello!r})\nrows = db.query('SELECT 1 AS one')\n"
    outbound += "res.body = {'status': got.status_code, 'one': rows[0]['one']}\n"
    workspace.create(APP, "out", label="out", method="GET", resource="out", action=outbound,
                     requires_auth=False)  # fmt: skip
    query = "res.body = db.query('SELECT 2 AS two')\n"
    workspace.create(APP, "query", label="query", method="GET", resource="query", action=query,
                     requires_auth=False)  # fmt: skip
    workspace.set_setting("tracing", "true")
    workspace.deploy(APP, "dev")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(
            "OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{receiver.server_address[1]}"
        )
        patch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
        patch.setenv("OTEL_SERVICE_NAME", "nk-tracing-test")
        with BackgroundServer(workspace) as server:
            assert isinstance(server, BackgroundServer)
            yield server


def _spans(receiver: ThreadingHTTPServer) -> list[tuple[Any, dict[str, Any]]]:
    return list(receiver.spans)  # type: ignore[attr-defined]


def _attributes(span: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in span.attributes:
        value = item.value
        found[item.key] = getattr(value, value.WhichOneof("value"))
    return found


def test_a_call_continues_the_callers_trace_with_its_http_and_db_calls(
    traced: BackgroundServer, receiver: ThreadingHTTPServer
) -> None:
    parent = f"00-{TRACE_ID}-{PARENT_ID}-01"
    began = time.time_ns()
    answer = httpx.get(traced.endpoint("dev", APP, "out"), headers={"traceparent": parent})
    ended = time.time_ns()
    assert answer.status_code == 200 and answer.json() == {"status": 200, "one": 1}

    def ours() -> list[tuple[Any, dict[str, Any]]]:
        return [(s, r) for s, r in _spans(receiver) if s.trace_id.hex() == TRACE_ID]

    wait_until(lambda: len(ours()) == 3, within=5)
    spans = {span.name: span for span, _ in ours()}
    assert set(spans) == {f"GET dev/{APP}/out", "GET 127.0.0.1", "db.query SELECT"}
    server = spans[f"GET dev/{APP}/out"]
    assert server.parent_span_id.hex() == PARENT_ID
    assert server.kind == server.SPAN_KIND_SERVER
    assert began <= server.start_time_unix_nano < server.end_time_unix_nano <= ended
    attributes = _attributes(server)
    assert attributes["http.response.status_code"] == 200
    assert attributes["notebook_kit.application"] == APP
    assert attributes["notebook_kit.definition"] == "out"
    for name in ("GET 127.0.0.1", "db.query SELECT"):
        child = spans[name]
        assert child.parent_span_id == server.span_id
        assert child.kind == child.SPAN_KIND_CLIENT
        assert server.start_time_unix_nano <= child.start_time_unix_nano
        assert child.start_time_unix_nano < child.end_time_unix_nano <= server.end_time_unix_nano
    assert _attributes(spans["GET 127.0.0.1"])["http.response.status_code"] == 200
    assert _attributes(spans["db.query SELECT"])["db.operation.name"] == "SELECT"
    assert {r["service.name"] for _, r in ours()} == {"nk-tracing-test"}


def test_every_call_has_its_span_inline_ones_with_their_db_calls(
    traced: BackgroundServer, receiver: ThreadingHTTPServer
) -> None:
    before = len(_spans(receiver))
    with httpx.Client(timeout=10) as client:
        for _ in range(CALLS):  # shown fast (PROMOTE_AFTER calls), it then runs inline
            assert client.get(traced.endpoint("dev", APP, "query")).json() == [{"two": 2}]
        assert client.get(f"{traced.url}/dev/{APP}/nowhere").status_code == 404
    wait_until(lambda: len(_spans(receiver)) - before == CALLS * 2 + 1, within=5)
    spans = [span for span, _ in _spans(receiver)[before:]]
    servers = [s for s in spans if s.kind == s.SPAN_KIND_SERVER]
    assert sorted(s.name for s in servers) == ["GET", *[f"GET dev/{APP}/query"] * CALLS]
    children = {s.parent_span_id for s in spans if s.kind == s.SPAN_KIND_CLIENT}
    assert children == {s.span_id for s in servers if s.name != "GET"}
    missing = next(s for s in servers if s.name == "GET")
    assert _attributes(missing)["http.response.status_code"] == 404


def test_off_the_server_loads_nothing_of_opentelemetry(tmp_path: Path) -> None:
    code = f"""
import sys, httpx
from notebook_kit import Workspace
from notebook_kit.runtime.process.handles import BackgroundServer
ws = Workspace({str(tmp_path / "home")!r})
ws.install_sample()
with BackgroundServer(ws) as server:
    httpx.get(server.endpoint("dev", "restapi_sample", "employee/E001"))
    server.sync()
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
