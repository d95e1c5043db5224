"""Test runs: one definition run on one request, timed as a person waits.

The studio's Test, ``ws.invoke``, ``%%notebook_kit --test``, examples and replay run the
definition as it is now (saved or being edited) on a request of stage ``test``, in a
sandboxed action process (``sandbox.runner``): what a dev caller would get, plus what
only a developer sees (what it printed, the traceback). The duration covers building the
request, compiling the action and running it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from multidict import CIMultiDict

from ..errors import ValidationError
from .answers import OK, RAISED, REJECTED, TIMED_OUT, TIMEOUT_ERROR
from .messages import ActionRequest
from .models import Definition

__all__ = ["Invocation", "test_request"]


@dataclass(frozen=True)
class Invocation:
    """The outcome of a test run: what a caller would get, plus what only a developer sees."""

    status: int
    headers: dict[str, str]
    body: bytes
    content_type: str | None
    duration_ms: float
    stdout: str
    error: str | None = None
    kind: str = OK  # how the call ended (``domain.answers``)
    # how the answer breaks the response its contract declares (none: it holds, or none
    # is declared): one line a violation
    contract: tuple[str, ...] = ()

    @property
    def reason(self) -> str | None:
        """Why the action gave no answer of its own, in a few words (None: it did)."""
        if self.kind == OK or not self.error:
            return None
        last = self.error.strip().splitlines()[-1]
        if self.kind == TIMED_OUT:
            return f"the action {last.removeprefix(TIMEOUT_ERROR + ': ')}"
        if self.kind == REJECTED:
            return "the request breaks the definition's contract, so the action did not run"
        return f"the action raised {last}" if self.kind == RAISED else last

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.body)


def test_request(
    definition: Definition,
    path_parameters: Mapping[str, str],
    query: str | Mapping[str, str],
    headers: Mapping[str, str],
    body: str | bytes,
) -> ActionRequest:
    """The ``req`` of a test run (stage ``test``): every path parameter needs a value."""
    from urllib.parse import urlencode

    params = {name: str(path_parameters.get(name, "")) for name in definition.path_parameters}
    missing = [name for name, value in params.items() if not value]
    if missing:
        raise ValidationError(
            f"give a value for the path parameter {{{missing[0]}}}", field="path_parameters"
        )
    resource = "/".join(params[s[1:-1]] if s.startswith("{") else s for s in definition.segments)
    return ActionRequest(
        httpMethod=definition.method,
        path=f"/test/{definition.app}/{resource}",
        stage="test",
        headers=CIMultiDict(headers),
        pathParameters=params,
        query_string=query if isinstance(query, str) else urlencode(query),
        body=body,
    )
