"""Checks: an application's examples run, and what came of each.

``run_examples`` runs every example on the definitions given (the saved ones, a stage's
deployed snapshot, or the snapshot a deploy is about to publish) with the test runs the
studio's Test tab makes (``run``: in a sandboxed process, within the definition's time
limit), and compares each answer with the example's expectations (``compare``: one
sentence a difference).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import NotebookKitError
from .examples import Example, ExampleRequest, Expectation, parse_path
from .models import Definition

if TYPE_CHECKING:
    from .test_runs import Invocation

__all__ = ["CheckReport", "ExampleResult", "compare", "run_examples"]

_MISSING = object()


def _lookup(body: Any, segments: tuple[str, ...]) -> Any:
    value = body
    for segment in segments:
        if isinstance(value, dict) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return _MISSING
    return value


def _same(a: Any, b: Any) -> bool:
    """JSON equality: a boolean is never a number, 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(type(a) is type(b) or {type(a), type(b)} <= {int, float}) and a == b


def _shown(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def compare(
    expect: Expectation, status: int, body: bytes, duration_ms: float, reason: str | None = None
) -> list[str]:
    """How an answer differs from ``expect``: one sentence a difference (none: it holds).
    ``reason``: why the action gave no answer of its own (``Invocation.reason``)."""
    differences = []
    if status != expect.status:
        said = f"status {status}, expected {expect.status}"
        if reason:
            said += f" ({reason})"
        differences.append(said)
    if expect.json:
        try:
            parsed = json.loads(body)
        except ValueError:
            text = body.decode("utf-8", "replace")
            shown = text if len(text) <= 40 else text[:39] + "…"
            differences.append(f"the body is not JSON ({shown!r}), so no field can be checked")
            parsed = _MISSING
        if parsed is not _MISSING:
            for path, wanted in expect.json.items():
                found = _lookup(parsed, parse_path(path))
                if found is _MISSING:
                    differences.append(f"{path} is missing, expected {_shown(wanted)}")
                elif not _same(found, wanted):
                    differences.append(f"{path} is {_shown(found)}, expected {_shown(wanted)}")
    if expect.max_ms is not None and duration_ms > expect.max_ms:
        differences.append(f"took {duration_ms:.3g} ms, more than the {expect.max_ms:g} ms allowed")
    return differences


@dataclass(frozen=True)
class ExampleResult:
    """One example's outcome: ``passed``, the answer's status and duration (None when it
    could not run) and the ``differences`` from what was expected."""

    api_id: str
    name: str
    passed: bool
    status: int | None = None
    duration_ms: float | None = None
    differences: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.api_id}/{self.name}"

    @property
    def difference(self) -> str:
        """The differences in one line ('' when it passed)."""
        return "; ".join(self.differences)

    def line(self) -> str:
        """``FAIL api_id/name: difference`` (or ``PASS api_id/name``)."""
        return f"FAIL {self.key}: {self.difference}" if not self.passed else f"PASS {self.key}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "api_id": self.api_id,
            "name": self.name,
            "passed": self.passed,
            "status": self.status,
            "duration_ms": self.duration_ms,
            "differences": list(self.differences),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExampleResult:
        return cls(
            data["api_id"],
            data["name"],
            bool(data["passed"]),
            data.get("status"),
            data.get("duration_ms"),
            tuple(data.get("differences") or ()),
        )


@dataclass(frozen=True)
class CheckReport:
    """The examples of ``app`` run on ``target``: 'saved' (the saved definitions), 'dev'
    or 'prod' (what the stage serves), or 'deploy to STAGE' (the snapshot a deploy is
    about to publish)."""

    app: str
    target: str
    results: tuple[ExampleResult, ...] = ()

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failures(self) -> tuple[ExampleResult, ...]:
        return tuple(r for r in self.results if not r.passed)

    def summary(self) -> str:
        """One sentence: how many examples ran and how many failed."""
        total, failed = len(self.results), len(self.failures)
        where = _TARGETS.get(
            self.target, self.target.replace("deploy to", "the snapshot deployed to")
        )
        if not total:
            return f"{self.app} has no examples: nothing to check"
        noun = "example" if total == 1 else "examples"
        if not failed:
            return f"all {total} {noun} of {self.app} pass on {where}"
        return f"{failed} of {total} {noun} of {self.app} fail on {where}"

    def lines(self) -> list[str]:
        """One line per failing example."""
        return [r.line() for r in self.failures]

    def to_dict(self) -> dict[str, Any]:
        return {
            "app": self.app,
            "target": self.target,
            "passed": self.passed,
            "total": len(self.results),
            "failed": len(self.failures),
            "results": [r.to_dict() for r in self.results],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckReport:
        results = tuple(ExampleResult.from_dict(r) for r in data.get("results") or ())
        return cls(data["app"], data["target"], results)


_TARGETS = {
    "saved": "the saved definitions",
    "dev": "what dev serves",
    "prod": "what prod serves",
}


def run_examples(
    run: Callable[[Definition, ExampleRequest], Invocation],
    app: str,
    target: str,
    definitions: Sequence[Definition],
    examples: Sequence[Example],
) -> CheckReport:
    """Run ``examples`` on ``definitions`` (the same application), each with ``run``."""
    by_id = {d.id: d for d in definitions}
    results = []
    for example in examples:
        definition = by_id.get(example.api_id)
        if definition is None:
            where = _TARGETS.get(target, target)
            missing = f"its definition {example.api_id} is not in {where}"
            results.append(
                ExampleResult(example.api_id, example.name, False, None, None, (missing,))
            )
            continue
        try:
            answer = run(definition, example.request)
        except NotebookKitError as exc:  # a missing path parameter, an action that won't compile
            results.append(
                ExampleResult(example.api_id, example.name, False, None, None, (f"not run: {exc}",))
            )
            continue
        differences = compare(
            example.expect, answer.status, answer.body, answer.duration_ms, answer.reason
        )
        differences += [f"the answer breaks its declared response: {v}" for v in answer.contract]
        results.append(
            ExampleResult(
                example.api_id,
                example.name,
                not differences,
                answer.status,
                answer.duration_ms,
                tuple(differences),
            )
        )
    return CheckReport(app, target, tuple(results))
