"""OpenTelemetry tracing: a span per call and a child span per outbound ``http``/``db``
call, exported over OTLP by the supervisor.

On while the ``tracing`` setting is (off by default; ``pip install
'notebook-kit[tracing]'``). The workers and the action processes export nothing: they run
in sandboxes, on the request path. Each call's span is made by the supervisor from the
call's request-log entry (its clock readings, stage, method, path, status, the action
that ran, its error), with what the worker sent along while tracing: the caller's
``traceparent`` (the span continues the caller's trace) and the ``http`` and ``db``
calls the action made, with their own clock readings (``builtins.outbound``), which
become child spans with their real start and end. So tracing adds nothing to a call's
time; its spans are made on a thread of the supervisor (OpenTelemetry's SDK takes tens of
microseconds a span: the supervisor's loop does not wait for it) and leave the node
within the batch processor's delay after the call's log entry reached the supervisor
(``FLUSH_SECONDS``).

The exporter is OpenTelemetry's own OTLP/HTTP (protobuf) exporter, configured by the
standard environment variables: ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), ``OTEL_EXPORTER_OTLP_HEADERS``,
``OTEL_SERVICE_NAME`` (default ``notebook-kit``), ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_BSP_SCHEDULE_DELAY`` and the rest. Off, nothing of OpenTelemetry is imported.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
from collections.abc import Sequence
from typing import Any

__all__ = ["Tracing"]

log = logging.getLogger("notebook_kit.runtime")

_FLUSH_MILLIS = 3000  # at the stop, the spans not yet exported get this long
_QUEUED = 256  # batches waiting for their spans at most; past it a batch gets none


def _extra(raw: Any, count: int) -> dict[int, tuple[str | None, list[Any]]]:
    """What a worker sent along (entry index -> traceparent, calls), checked."""
    found: dict[int, tuple[str | None, list[Any]]] = {}
    for row in raw if isinstance(raw, list) else ():
        try:
            index, parent, calls = row
            if isinstance(index, int) and 0 <= index < count:
                parent = str(parent)[:200] if parent is not None else None
                found[index] = (parent, [c for c in calls if isinstance(c, list) and len(c) == 6])
        except (TypeError, ValueError):
            continue
    return found


class Tracing:
    """Spans of the node's calls (see the module docstring); the SDK is loaded on the
    first batch traced."""

    def __init__(self) -> None:
        self._provider: Any = None
        self._tracer: Any = None
        self._unavailable = False
        self._queue: queue.Queue[tuple[Sequence[tuple[Any, ...]], Any, float] | None] = queue.Queue(
            _QUEUED
        )
        self._thread: threading.Thread | None = None
        self.dropped = 0  # calls left without a span (the queue was full)

    def emit(self, entries: Sequence[tuple[Any, ...]], raw: Any, offset: float) -> None:
        """Have the spans of a batch made, on a thread of their own: the SDK takes tens
        of microseconds a span, which the supervisor's loop does not wait for."""
        if self._unavailable or not entries:
            return
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="notebook-kit-tracing", daemon=True
            )
            self._thread.start()
        try:
            self._queue.put_nowait((entries, raw, offset))
        except queue.Full:
            if not self.dropped:
                log.warning("tracing cannot keep up: some calls get no span")
            self.dropped += len(entries)

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            try:
                self.make(*item)
            except Exception:  # the log and the metrics have the calls: only spans are lost
                log.exception("making the spans of a log batch failed")

    def _load(self) -> bool:
        if self._tracer is not None:
            return True
        if self._unavailable:
            return False
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            self._unavailable = True
            log.error(
                "tracing is on but OpenTelemetry is missing (%s): pip install "
                "'notebook-kit[tracing]'; no spans are exported",
                exc,
            )
            return False
        named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
            "OTEL_RESOURCE_ATTRIBUTES", ""
        )
        resource = Resource.create({} if named else {"service.name": "notebook-kit"})
        self._provider = TracerProvider(resource=resource)
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        self._tracer = self._provider.get_tracer("notebook_kit")
        return True

    def make(self, entries: Sequence[tuple[Any, ...]], raw: Any, offset: float) -> None:
        """A span for each entry of a batch (``offset``: its clock readings' epoch
        seconds), with what its worker sent along (``raw``)."""
        if not entries or not self._load():
            return
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind, Status, StatusCode
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        propagator = TraceContextTextMapPropagator()
        extra = _extra(raw, len(entries))
        tracer = self._tracer
        for index, entry in enumerate(entries):
            started, ended, stage, (method, path), status, ran, error = entry[:7]
            parent, calls = extra.get(index, (None, []))
            context = propagator.extract({"traceparent": parent}) if parent else None
            attributes: dict[str, Any] = {
                "http.request.method": method,
                "url.path": path,
                "http.response.status_code": status,
                "notebook_kit.stage": stage,
            }
            name = method
            if ran is not None:
                attributes["notebook_kit.application"] = ran[1]
                attributes["notebook_kit.definition"] = ran[2]
                name = f"{method} {stage}/{ran[1]}/{ran[2]}"
            if error is not None:
                attributes["error.type"] = str(error).split(":", 1)[0][:100]
            span = tracer.start_span(
                name,
                context=context,
                kind=SpanKind.SERVER,
                attributes=attributes,
                start_time=_nanos(offset + started),
            )
            if status >= 500:
                span.set_status(Status(StatusCode.ERROR, str(error or status)[:300]))
            inside = trace.set_span_in_context(span)
            for kind, call, began, stopped, failed, details in calls:
                child = tracer.start_span(
                    str(call),
                    context=inside,
                    kind=SpanKind.CLIENT,
                    attributes={"notebook_kit.call": str(kind), **_plain(details)},
                    start_time=_nanos(offset + float(began)),
                )
                if failed is not None:
                    child.set_status(Status(StatusCode.ERROR, str(failed)[:300]))
                child.end(end_time=_nanos(offset + float(stopped)))
            span.end(end_time=_nanos(offset + ended))

    def close(self) -> None:
        """Export what is left (within ``_FLUSH_MILLIS``) and stop (blocks: a thread)."""
        if self._thread is not None:
            with contextlib.suppress(queue.Full):  # else: a daemon, it ends with the process
                self._queue.put(None, timeout=_FLUSH_MILLIS / 1000)
            self._thread.join(_FLUSH_MILLIS / 1000)
            self._thread = None
        if self._provider is not None:
            self._provider.force_flush(_FLUSH_MILLIS)
            self._provider.shutdown()
            self._provider = self._tracer = None


def _nanos(seconds: float) -> int:
    return int(seconds * 1e9)


def _plain(details: Any) -> dict[str, Any]:
    if not isinstance(details, dict):
        return {}
    return {str(k)[:64]: v for k, v in details.items() if isinstance(v, (str, int, float, bool))}
