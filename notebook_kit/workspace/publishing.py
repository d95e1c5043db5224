"""Publishing: what each stage serves, and the rules for changing it.

A deploy validates the whole application (routes, every action compiles) and stores a
snapshot of it (its schedules too: they run from the snapshot, so a rollback restores
them and an undeploy stops them); the stage then serves that snapshot until the next
deploy, an undeploy or a rollback (to an earlier snapshot of the same stage). Every
change checks the stage's resource quota against what the stage would serve afterwards,
and bumps the store's generation so that servers reload. What is live is always read
from the snapshots, never kept beside them.
"""

from __future__ import annotations

import ast
import socket
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..domain import exchange, routing
from ..domain.actions import check_sources
from ..domain.checks import CheckReport, run_examples
from ..domain.examples import Example, ExampleRequest
from ..domain.models import Application, Definition, Deployment, Stage, validate_description
from ..domain.schedules import check_targets
from ..errors import (
    ConflictError,
    ExampleFailedError,
    NotFoundError,
    QuotaExceededError,
    ValidationError,
)
from ..store.snapshots import version_of
from ..store.store import Store

if TYPE_CHECKING:
    from ..domain.test_runs import Invocation
    from ..sandbox.runner import ActionRunner

__all__ = ["Publisher", "former_self", "refusal", "same_content", "snapshot_definitions"]


def refusal(report: CheckReport, stage: Stage) -> str:
    """What a deploy refused by failing examples says: each one and its difference."""
    failing = "; ".join(f"example {r.key} fails: {r.difference}" for r in report.failures)
    return (
        f"deploy of {report.app} to {stage} refused, nothing changed: {failing} "
        "(force=True, CLI --force, deploys anyway)"
    )


def snapshot_definitions(snapshot: Mapping[str, Any]) -> list[Definition]:
    """The definitions a deployment snapshot holds."""
    return [Definition.from_dict(d) for d in snapshot["definitions"]]


def same_content(a: Definition, b: Definition) -> bool:
    """True if ``a`` and ``b`` differ at most in their timestamps."""
    ignore = {"created_at", "updated_at"}
    return {k: v for k, v in a.to_dict().items() if k not in ignore} == {
        k: v for k, v in b.to_dict().items() if k not in ignore
    }


def former_self(d: Definition, orphans: list[Definition]) -> Definition | None:
    """The live definition ``d`` was before a rename, if one of ``orphans`` (live under
    IDs that are no longer saved) is it: same creation time, else same route."""
    same_app = [o for o in orphans if o.app == d.app]
    for match in (
        lambda o: o.created_at == d.created_at,
        lambda o: (o.method, o.resource) == (d.method, d.resource),
    ):
        found = [o for o in same_app if match(o)]
        if found:
            return found[0]
    return None


class Publisher:
    """Deploy, undeploy and roll back applications on the stages of one store.

    ``setting`` answers a setting in force (``resource_quota``: None for no quota;
    ``deployments_kept``); ``runner`` loads actions and runs examples in sandboxed
    processes (``Workspace.runner``)."""

    def __init__(
        self, store: Store, setting: Callable[[str], Any], runner: Callable[[], ActionRunner]
    ) -> None:
        self.store = store
        self._quota: Callable[[], int | None] = lambda: setting("resource_quota")
        self._kept: Callable[[], int] = lambda: setting("deployments_kept")
        self._runner = runner

    def deploy(
        self,
        record: Application,
        stage: Stage,
        force: bool = False,
        canary: int | None = None,
        rollback_above: float | None = None,
        description: str = "",
    ) -> Deployment:
        """Validate the saved definitions of ``record``, run its examples on them, and
        serve a snapshot of them on ``stage``: exactly what is saved when the deploy
        commits. A failing example refuses the deploy (``ExampleFailedError``, nothing
        changed) unless ``force``; the deployment keeps whether it was forced and what
        the examples found, and ``description`` (one line, optional). With ``canary`` (a
        percent, checked by the caller) the snapshot serves that share of the calls beside
        the live deployment (``canary.start``); without, it serves them all and ends any
        canary.

        The bulk of the work (reading, routes, compiling, the examples) happens before the
        write lock; inside it the saved definitions are read again and compared, and
        whatever changed meanwhile is validated there, so a deploy racing another
        process's edits and deploys never publishes an older set than the store holds.
        When the application has examples and its definitions or examples changed
        meanwhile, the examples run again on what is saved now, outside the lock (up to
        three times). A version (content hash) the store already has passed validation at
        the deploy that stored it and is not compiled again (see docs/deployments.md).
        """
        app = record.id
        description = validate_description(description)
        rows: dict[tuple[Any, ...], Definition] = {}
        for _ in range(3):
            read = self.store.list_definitions(app, rows)
            versions = self._validate(app, read, {}, stage)
            examples = self.store.examples.list(app)
            report = self.check(app, f"deploy to {stage}", read, examples, stage)
            if report is not None and not report.passed and not force:
                raise ExampleFailedError(refusal(report, stage), report)
            with self.store.transaction():
                definitions = self.store.list_definitions(app, rows)
                changed = len(definitions) != len(read) or any(
                    a is not b for a, b in zip(definitions, read, strict=True)
                )
                saved_examples = self.store.examples.list(app)
                if examples or saved_examples:
                    if changed or saved_examples != examples:
                        continue  # run them again on what is saved now
                elif changed:
                    versions = self._validate(app, definitions, versions, stage)
                if canary is not None and self.store.live_deployment_id(stage, app) is None:
                    raise NotFoundError(
                        f"{app} is not live on {stage}: a canary needs a live deployment to "
                        f"split with (deploy without a canary first)"
                    )
                self.check_quota(stage, app, definitions)
                schedules = self.store.schedules.list(app)  # they run from the snapshot
                check_targets(schedules, definitions)
                deployment_id = self.store.add_deployment(
                    app,
                    stage,
                    socket.gethostname(),
                    exchange.to_document(record, [], schedules=schedules),
                    [versions[id(d)] for d in definitions],
                    description,
                )
                self.store.secrets.pin(deployment_id, app, stage)  # what it was made with
                if force or report is not None:
                    checks = None if report is None else report.to_dict()
                    self.store.examples.record_check(deployment_id, force, checks)
                if canary is None:
                    self.store.set_live(stage, app, deployment_id)
                else:
                    self.store.canaries.start(stage, app, deployment_id, canary, rollback_above)
                self.store.prune_deployments(app, stage, self._kept())
                self.store.bump_generation()
            return self.deployment(deployment_id)
        raise ConflictError(
            f"{app} kept changing while its examples ran before the deploy; deploy again"
        )

    def check(
        self,
        app: str,
        target: str,
        definitions: list[Definition],
        examples: list[Example],
        stage: Stage = Stage.DEV,
    ) -> CheckReport | None:
        """Run ``examples`` on ``definitions``, each in a sandboxed process with the
        current secrets of ``stage`` (None: no examples)."""
        if not examples:
            return None
        runner = self._runner()

        def run(definition: Definition, request: ExampleRequest) -> Invocation:
            return runner.test(
                definition,
                path_parameters=request.path_parameters,
                query=request.query,
                headers=request.headers,
                body=request.body,
                secrets_stage=str(stage),
            )

        return run_examples(run, app, target, definitions, examples)

    def _validate(
        self,
        app: str,
        definitions: list[Definition],
        done: dict[int, tuple[str, str]],
        stage: Stage = Stage.DEV,
    ) -> dict[int, tuple[str, str]]:
        """Refuse ``definitions`` unless their routes agree and each action loads (in a
        sandboxed process: its user functions run there, within its time limit). Returns
        each one's (hash, canonical text) by object identity; those in ``done``
        (validated already) or whose hash the store has are not loaded again."""
        if not definitions:
            raise ValidationError(f"application {app!r} has no definitions to deploy")
        routing.check_routes(app, definitions)
        versions = {id(d): done.get(id(d)) or version_of(d.to_dict()) for d in definitions}
        fresh = [versions[id(d)][0] for d in definitions if id(d) not in done]
        known = self.store.snapshots.known(fresh) if fresh else set()
        fresh_definitions = [
            d for d in definitions if id(d) not in done and versions[id(d)][0] not in known
        ]
        for definition in fresh_definitions:
            check_sources(definition.action, definition.functions)  # names the line, here
        # User functions with no statement (none, or comments only) cannot fail to load:
        # no action process for them (a deploy from the command line then starts none).
        loading = [d for d in fresh_definitions if _has_statements(d)]
        errors = self._runner().load(loading, secrets_stage=str(stage))
        for definition in fresh_definitions:
            error = errors.get(definition.id)
            if error:
                raise ValidationError(error, field="functions")
        return versions

    def undeploy(self, app: str, stage: Stage) -> None:
        with self.store.transaction():
            if self.store.live_deployment_id(stage, app) is None:
                raise NotFoundError(f"application {app!r} is not deployed to {stage}")
            self.store.set_live(stage, app, None)
            self.store.bump_generation()

    def rollback(self, app: str, stage: Stage, to: int | None = None) -> Deployment:
        """Serve an earlier snapshot on ``stage``: ``to``, or the one before the live one.
        While a canary runs, no ``to`` drops the canary and keeps the live deployment."""
        with self.store.transaction():
            if to is None and self.store.canaries.get(stage, app) is not None:
                self.store.canaries.end(stage, app)
                self.store.bump_generation()
                return self.deployment(self.store.live_deployment_id(stage, app) or 0)
            history = [d for d in self.store.list_deployments(app) if d.stage == stage]
            live = self.store.live_deployment_id(stage, app)
            if to is None:
                earlier = [d for d in history if live is None or d.id < live]
                if not earlier:
                    raise NotFoundError(
                        f"{app} has no earlier deployment on {stage} to roll back to"
                    )
                target = earlier[-1]
            else:
                chosen = next((d for d in history if d.id == to), None)
                if chosen is None:
                    raise NotFoundError(
                        f"no deployment {to} of {app} on {stage}; it may have been pruned "
                        f"(the deployments_kept setting keeps the newest {self._kept()} "
                        f"of each application and stage; 'deployments' lists them)"
                    )
                target = chosen
            found = self.store.get_deployment(target.id)
            assert found is not None
            self.check_quota(stage, app, snapshot_definitions(found[1]))
            self.store.set_live(stage, app, target.id)
            self.store.bump_generation()
        return self.deployment(target.id)

    def deployment(self, deployment_id: int) -> Deployment:
        found = self.store.deployment_record(deployment_id)
        if found is None:
            raise NotFoundError(f"no deployment {deployment_id}")
        return found

    def check_quota(self, stage: Stage, app: str, definitions: list[Definition]) -> None:
        quota = self._quota()
        if quota is None:
            return
        apps = self.live(stage)
        apps[app] = definitions
        total = routing.count_resources(apps)["total"]
        if total > quota:
            raise QuotaExceededError(
                f"deploying {app} to {stage} would use {total} resources; "
                f"the stage's quota is {quota}"
            )

    def live(self, stage: Stage) -> dict[str, list[Definition]]:
        """What ``stage`` serves now: application ID to its deployed definitions."""
        return {
            app: snapshot_definitions(snap)
            for s, app, _, snap in self.store.live_snapshots()
            if s == stage
        }

    def live_snapshot(self, app: str, stage: Stage) -> tuple[Application, list[Definition], int]:
        """The application, definitions and deployment ID ``app`` has live on ``stage``."""
        for live_stage, live_app, deployment_id, snapshot in self.store.live_snapshots():
            if live_stage == stage and live_app == app:
                return (
                    Application.from_dict(snapshot["application"]),
                    snapshot_definitions(snapshot),
                    deployment_id,
                )
        raise NotFoundError(f"application {app!r} is not deployed to {stage}")

    def openapi(
        self, app: str, stage: Stage, base_url: str, version: str = "3.1"
    ) -> dict[str, Any]:
        """The OpenAPI document of ``app`` as it is live on ``stage`` (3.1, or "3.0")."""
        from ..domain.openapi import build_document  # only when a document is asked for

        record, definitions, deployment_id = self.live_snapshot(app, stage)
        return build_document(record, stage, definitions, base_url, deployment_id, version)

    def deployed_state(self, definition: Definition, stage: Stage) -> str:
        """One state of ``deployed_states``."""
        return self.deployed_states([definition])[definition.app, definition.id][stage]

    def listing(self, definitions: list[Definition]) -> list[dict[str, Any]]:
        """``definitions`` as rows: their summary, the state on each stage and when they
        were last saved."""
        states = self.deployed_states(definitions)
        return [
            {
                **d.summary(),
                **{str(s): state for s, state in states[d.app, d.id].items()},
                "updated_at": d.updated_at,
            }
            for d in definitions
        ]

    def deployed_states(
        self, definitions: list[Definition]
    ) -> dict[tuple[str, str], dict[Stage, str]]:
        """The state of each definition on each stage, reading what is live once a stage:
        'deployed', 'changed', 'not deployed', or 'live as OLD_ID' when the stage still
        serves it under the ID it had before a rename (a live definition whose ID is no
        longer saved, created at the same time or at the same method and resource)."""
        states: dict[tuple[str, str], dict[Stage, str]] = {(d.app, d.id): {} for d in definitions}
        saved_ids = {(d.app, d.id) for d in self.store.list_definitions()}
        for stage in Stage:
            served = {(app, d.id): d for app, defs in self.live(stage).items() for d in defs}
            renamed = [d for key, d in served.items() if key not in saved_ids]
            for d in definitions:
                live = served.get((d.app, d.id))
                if live is None:
                    old = former_self(d, renamed)
                    state = "not deployed" if old is None else f"live as {old.id}"
                else:
                    state = "deployed" if same_content(live, d) else "changed"
                states[d.app, d.id][stage] = state
        return states

    def is_live_as_saved(self, app: str, stage: Stage) -> bool:
        """True if ``stage`` serves exactly the saved definitions of ``app``."""
        saved = self.store.list_definitions(app)
        live = self.live(stage).get(app)
        return (
            live is not None
            and len(live) == len(saved)
            and all(same_content(a, b) for a, b in zip(live, saved, strict=True))
        )


def _has_statements(definition: Definition) -> bool:
    """Whether the definition's user functions run anything when they load."""
    return bool(ast.parse(definition.functions).body)
