"""Test runs: a definition run in this process on one request, timed as a person waits.

The duration covers building the request, compiling the action (a test compiles the
definition as it is now, saved or being edited) and running it. The action alone of a
small definition takes a few microseconds, which is why timing only the call showed
"0.0 ms"; the runtime's own latency is in the request log.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from ..domain.actions import CompiledAction, Invocation, invoke, test_request
from ..domain.models import Definition

__all__ = ["run_test"]


def run_test(
    compile_definition: Callable[[Definition], CompiledAction],
    definition: Definition,
    path_parameters: Mapping[str, str] | None = None,
    query: str | Mapping[str, str] = "",
    headers: Mapping[str, str] | None = None,
    body: str | bytes = "",
) -> Invocation:
    """Run ``definition`` (saved or not) on a test request; ``duration_ms`` is the whole run."""
    started = time.perf_counter()
    req = test_request(definition, path_parameters or {}, query, headers or {}, body)
    result = invoke(compile_definition(definition), req)
    return replace(result, duration_ms=(time.perf_counter() - started) * 1000)
