"""Checks: an application's examples run in this process, and what came of each.

``run_examples`` runs every example on the definitions given (the saved ones, a stage's
deployed snapshot, or the snapshot a deploy is about to publish) with the test runner
the studio's Test tab uses (``test_runs.run_test``), and compares each answer with the
example's expectations (``examples.compare``). Each definition is compiled once a check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import NotebookKitError
from .actions import CompiledAction
from .examples import Example, compare
from .models import Definition

__all__ = ["CheckReport", "ExampleResult", "run_examples"]


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
    compile_definition: Callable[[Definition], CompiledAction],
    app: str,
    target: str,
    definitions: Sequence[Definition],
    examples: Sequence[Example],
) -> CheckReport:
    """Run ``examples`` on ``definitions`` (the same application) in this process."""
    from .test_runs import run_test  # not at import: the CLI's start needs no messages

    by_id = {d.id: d for d in definitions}
    compiled: dict[str, CompiledAction] = {}

    def compile_once(definition: Definition) -> CompiledAction:
        if definition.id not in compiled:
            compiled[definition.id] = compile_definition(definition)
        return compiled[definition.id]

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
        request = example.request
        try:
            answer = run_test(
                compile_once,
                definition,
                path_parameters=request.path_parameters,
                query=request.query,
                headers=request.headers,
                body=request.body,
            )
        except NotebookKitError as exc:  # a missing path parameter, an action that won't compile
            results.append(
                ExampleResult(example.api_id, example.name, False, None, None, (f"not run: {exc}",))
            )
            continue
        differences = compare(
            example.expect, answer.status, answer.body, answer.duration_ms, answer.error
        )
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
