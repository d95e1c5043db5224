"""``Workspace``: the one facade every face calls (Python API, CLI, widgets, runtime).

Every rule lives here or below (the modules beside this one). Action code never runs in
this process: test runs, examples and the deploy's load check go to sandboxed processes
(``runner()``, ``sandbox.runner``). The notebook's conveniences (``serve``,
``definitions_frame`` ...) are the notebook face's: ``notebook_kit.Workspace`` extends this
class with them (``notebook/workspace.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..builtins.environment import environment_path, move_environment
from ..builtins.services import LocalServices
from ..domain import routing
from ..domain.checks import CheckReport
from ..domain.contracts import Contract
from ..domain.examples import Example
from ..domain.models import Application, Constant, Definition, Deployment, Stage, endpoint_url
from ..domain.schedules import Schedule
from ..domain.settings import SETTINGS, default_home, find_setting, resolve
from ..store.opening import STORE_ENV, open_store
from . import applications as apps
from . import editing
from . import replay as replaying
from .applications import Deletion
from .canary import CanaryReleases
from .configuration import make_home, rotate_key, save_setting
from .consumers import Consumers
from .contracts import draft_contract
from .diffing import StageDiff, stage_diff
from .examples import (
    check_application,
    list_examples,
    postman_examples,
    remove_example,
    save_example,
)
from .publishing import Publisher
from .resource_trees import StageResources, stage_resources
from .schedules import ScheduleKeeper
from .secrets import SecretKeeper
from .traffic import request_log
from .transfer import copy_definition, export_document, import_document, write_json

if TYPE_CHECKING:
    from ..builtins.environment import ActionEnvironment
    from ..builtins.users import UserDirectory
    from ..domain.canary import Canary
    from ..domain.secrets import SecretInfo
    from ..domain.test_runs import Invocation
    from ..sandbox.runner import ActionRunner

__all__ = ["Workspace"]

_UNSET: Any = object()


class Workspace:
    """A notebook_kit workspace: the one object the CLI, the studio and the runtime call.

    Args:
        home: the workspace directory (default ``$NOTEBOOK_KIT_HOME``, else
            ``~/.notebook_kit``), created owner-only on first use.
        store: a ``postgresql://`` store URL (default ``$NOTEBOOK_KIT_STORE``, else the
            SQLite file ``workspace.sqlite3`` in ``home``); ``StoreError`` if it cannot
            be opened, ``ValidationError`` if it is not a URL notebook_kit accepts.
    """

    def __init__(
        self, home: str | os.PathLike[str] | None = None, store: str | None = None
    ) -> None:
        self.home = make_home(Path(home).expanduser() if home is not None else default_home())
        move_environment(self.home)
        self.store = open_store(os.environ.get(STORE_ENV) if store is None else store, self.home)
        self.services = LocalServices(self.store, self.settings)
        self._runner: ActionRunner | None = None
        self._database: tuple[Any, Any] | None = None  # (database_url, db)
        self._environment: ActionEnvironment | None = None  # action_env(), made on first use
        self._publisher = Publisher(self.store, self.setting, self.runner)
        self.canaries = CanaryReleases(self.store, self._publisher, self.setting)
        self.secret_keeper = SecretKeeper(self.store, self.home, self.application)
        self.consumers = Consumers(self.store)
        self.schedule_keeper = ScheduleKeeper(self.store, self.runner, self.setting)

    def __repr__(self) -> str:
        return f"Workspace({str(self.home)!r})"

    # -- settings ----------------------------------------------------------------------

    def setting(self, name: str) -> Any:
        """The value in force of setting ``name``: ``NOTEBOOK_KIT_<NAME>`` from the
        environment, else the stored value, else the default (ValidationError: unknown)."""
        return resolve(find_setting(name), self.store.stored_settings())

    def settings(self) -> dict[str, Any]:
        """Every setting's value in force, by name (secrets in clear: mask before showing)."""
        stored = self.store.stored_settings()
        return {s.name: resolve(s, stored) for s in SETTINGS}

    def set_setting(self, name: str, value: str | None) -> None:
        """Store a setting (``None``: back to the default), live on running servers within
        ``reload_interval``; ValidationError for an unknown name or a value it refuses."""
        save_setting(self.store, self.home, name, value)

    # -- where actions run -------------------------------------------------------------

    def runner(self) -> ActionRunner:
        """The runner of this workspace's test runs, examples and load checks: each in a
        sandboxed action process (started on first use; ``close()`` stops it)."""
        if self._runner is None:
            from ..sandbox.runner import ActionRunner  # not at import: the CLI's start

            secrets = self.secret_keeper.values
            self._runner = ActionRunner(self.home, self.settings, self.services, secrets)
        return self._runner

    def close(self) -> None:
        """Stop the processes this workspace started to run actions (they also end
        with this process)."""
        if self._runner is not None:
            self._runner.close()

    @property
    def database(self) -> Any:
        """The execution environment's database (``db`` in actions), opened here."""
        from ..builtins.db import open_database

        url = self.setting("database_url")
        if self._database is None or self._database[0] != url:
            self._database = (url, open_database(url, environment_path(self.home)))
        return self._database[1]

    def users(self) -> UserDirectory:
        """The user directory ``fn.getUsers`` and friends use (mailing as ``fn`` does)."""
        return self.services.directory()

    def action_env(self) -> dict[str, Any]:
        """``fn``, ``db`` and ``http`` as an action sees them, for this process's own use
        (a notebook trying a built-in): they answer from this workspace directly. Action
        code itself never runs here (``runner()``)."""
        if self._environment is None:
            from ..builtins.context import BuiltinContext
            from ..builtins.environment import ActionEnvironment

            context = BuiltinContext(self.home, self.settings, self.services)
            self._environment = ActionEnvironment(context)
        return self._environment.names()

    # -- applications ------------------------------------------------------------------

    def applications(self) -> list[Application]:
        """Every application of the workspace, sorted by ID."""
        return self.store.list_applications()

    def application(self, app: str) -> Application:
        """The application with ID ``app`` (NotFoundError if there is none)."""
        return apps.find_application(self.store, app)

    def create_application(self, app: str, label: str = "") -> Application:
        """Create an empty application (type "REST API"; a blank ``label`` is the ID).

        Raises:
            ValidationError: ``app`` is not 1 to 64 of ``A-Za-z0-9_-``.
            ConflictError: the application exists.
        """
        return apps.create_application(self.store, app, label)

    def rename_application(self, app: str, label: str) -> Application:
        """Give ``app`` a new label (blank: its ID; NotFoundError if no such app). The ID
        never changes; what is live keeps its label until the next deploy."""
        return apps.rename_application(self.store, app, label)

    def deletion_impact(self, app: str) -> Deletion:
        """What ``delete_application(app)`` would remove: its number of definitions and
        the stages it is live on; ``.describe()`` is the sentence a person confirms."""
        return apps.deletion_impact(self.store, app)

    def delete_application(self, app: str) -> None:
        """Remove the application, its definitions and what it has live (history stays)."""
        apps.delete_application(self.store, app)

    # -- definitions -------------------------------------------------------------------

    def get(self, app: str, api_id: str) -> Definition:
        """The saved definition ``api_id`` of ``app`` (NotFoundError if there is none);
        what a stage serves is ``live(stage)``."""
        return editing.find_definition(self.store, app, api_id)

    def definitions(
        self, app: str | None = None, label: str | None = None, search: str | None = None
    ) -> list[Definition]:
        """Saved definitions: all, or ``app``'s (NotFoundError if no such application),
        whose label contains ``label`` and whose label, API ID or path contains ``search``
        (both case-insensitive) if given."""
        return editing.list_definitions(self.store, app, label, search)

    def create(
        self,
        app: str,
        api_id: str,
        *,
        label: str,
        method: str,
        resource: str,
        action: str = "",
        content_type: str | None = None,
        requires_auth: bool = True,
        functions: str = "",
        constants: Iterable[Constant] = (),
        timeout: float | None = None,
        contract: Contract | Mapping[str, Any] | None = None,
    ) -> Definition:
        """Create a definition (and its application, if new). Refused whole if invalid.
        ``timeout``: seconds its action may run (None: the ``action_timeout`` setting);
        ``contract``: what it accepts and answers (docs/contracts.md; None: nothing)."""
        given = (app, api_id, label, method, resource, action, content_type, requires_auth)
        definition = Definition(
            *given, functions, tuple(constants), timeout=timeout,
            contract=Contract.from_dict(contract),
        )  # fmt: skip
        return editing.insert_definition(self.store, definition)

    def edit(
        self,
        app: str,
        api_id: str,
        *,
        new_id: str | None = None,
        label: str | None = None,
        method: str | None = None,
        resource: str | None = None,
        action: str | None = None,
        content_type: str | None = _UNSET,
        requires_auth: bool | None = None,
        functions: str | None = None,
        constants: Iterable[Constant] | None = None,
        timeout: float | None = _UNSET,
        contract: Contract | Mapping[str, Any] | None = None,
    ) -> Definition:
        """Change a definition (its ID too). What is live changes only at the next deploy.
        ``timeout=None`` goes back to the ``action_timeout`` setting; ``contract={}``
        clears the contract."""
        given = (new_id, label, method, resource, action, requires_auth, functions, constants)
        changes = editing.edit_changes(*given, content_type, timeout, contract, unset=_UNSET)
        return editing.change_definition(self.store, app, api_id, changes)

    def contract(self, app: str, api_id: str) -> Contract:
        """The saved definition's contract (empty: nothing declared; docs/contracts.md)."""
        return self.get(app, api_id).contract

    def infer_contract(self, app: str, api_id: str) -> Contract:
        """A draft contract of the saved definition from its examples and recorded calls,
        and what it answers them now (run as the Test tab runs it). Not saved: read it,
        then ``edit(app, api_id, contract=draft)``."""
        return draft_contract(self.store, self.runner().test, self.get(app, api_id))

    def draft(self, app: str, api_id: str, **fields: Any) -> Definition:
        """A definition validated like ``create`` (sources compiled) but not saved."""
        return editing.draft_definition(app, api_id, fields)

    check_sources = staticmethod(editing.check_sources)

    def change_stamp(self) -> str:
        """Differs whenever the store changed (any process): poll it to notice changes."""
        return self.store.change_stamp()

    def delete(self, app: str, api_id: str) -> None:
        """Delete a saved definition (NotFoundError if there is none); a stage serving it
        keeps serving it until the next deploy."""
        editing.delete_definition(self.store, app, api_id)

    def copy(self, app: str, api_id: str, to_app: str, new_id: str | None = None) -> Definition:
        """Copy a definition into ``to_app`` (created if missing), as ``new_id`` if given."""
        return copy_definition(self.store, self.get(app, api_id), to_app, new_id)

    def add_preflight(self, app: str, api_id: str, origin: str = "*") -> Definition:
        """Save the CORS preflight a browser on ``origin`` needs to call ``api_id``'s
        resource with the key and a JSON body (``domain.cors``); it goes live at the next
        deploy. The definition's own answer must still carry ``Access-Control-Allow-Origin``."""
        return editing.add_preflight(self.store, app, api_id, origin)

    def invoke(
        self,
        app: str,
        api_id: str,
        *,
        path_parameters: Mapping[str, str] | None = None,
        query: str | Mapping[str, str] = "",
        headers: Mapping[str, str] | None = None,
        body: str | bytes = "",
    ) -> Invocation:
        """Run the *saved* definition as the studio's Test panel does: in a sandboxed
        process, within its time limit (a 504 answer past it), on a request of stage
        ``test`` (no key check)."""
        request = dict(path_parameters=path_parameters, query=query, headers=headers, body=body)
        return self.invoke_draft(self.get(app, api_id), **request)

    def invoke_draft(self, definition: Definition, **request: Any) -> Invocation:
        """Run an unsaved ``definition`` as ``invoke`` runs a saved one (same keywords)."""
        return self.runner().test(definition, **request)

    def endpoint_urls(self, app: str, api_id: str, base_url: str) -> dict[str, str]:
        """The debug and release endpoint URLs of a definition."""
        resource = self.get(app, api_id).resource
        return {str(s): endpoint_url(base_url, s, app, resource) for s in Stage}

    def add_example(
        self, app: str, api_id: str, name: str, *, request: Any = None, expect: Any = None,
        replace: bool = False,
    ) -> Example:  # fmt: skip
        """Save an example (docs/examples.md): ``request`` (path_parameters, query, headers,
        body), ``expect`` (status, json, max_ms); an existing name only with ``replace``."""
        example = Example.of(app, api_id, name, request, expect)
        return save_example(self.store, example, replace)

    def examples(self, app: str, api_id: str | None = None) -> list[Example]:
        """The saved examples of ``app`` (of one definition if ``api_id``), by name."""
        return list_examples(self.store, app, api_id)

    def remove_example(self, app: str, api_id: str, name: str) -> None:
        """Delete one example (NotFoundError if there is none)."""
        remove_example(self.store, app, api_id, name)

    def postman_examples(
        self, app: str, stage: Stage | str, collection: Mapping[str, Any]
    ) -> tuple[dict[str, Any], list[str]]:
        """``collection``, converted from ``app``'s OpenAPI document on ``stage`` by
        openapi-to-postmanv2, with a folder ``Examples``: each saved example as a request
        with tests of what it expects (``newman run`` runs them); and the keys of the
        examples whose operation the collection lacks (docs/guide/openapi.md)."""
        return postman_examples(self._publisher, app, Stage.parse(stage), collection)

    def check(self, app: str, stage: Stage | str | None = None) -> CheckReport:
        """Run ``app``'s examples here, on the saved definitions or what ``stage`` serves."""
        return check_application(self._publisher, app, Stage.parse(stage) if stage else None)

    # -- deploy, undeploy, rollback ----------------------------------------------------

    def deploy(
        self,
        app: str,
        stage: Stage | str,
        force: bool = False,
        canary: int | None = None,
        rollback_above: float | None = None,
        description: str = "",
    ) -> Deployment:
        """Validate the application, run its examples, publish a snapshot of it to ``stage``;
        a failing example refuses it (ExampleFailedError) unless ``force``. ``canary``: to
        that % of prod's callers, ``rollback_above``: % of 5xx ending it (docs/canary.md);
        ``description``: one optional line kept with the deployment."""
        record, stage = self.application(app), Stage.parse(stage)
        return self.canaries.deploy(record, stage, force, canary, rollback_above, description)

    def promote(self, app: str) -> Deployment:
        """Make the canary of ``app`` live for every prod call (NotFoundError: none runs)."""
        return self.canaries.promote(self.application(app).id)

    def canary(self, app: str, stats: bool = True) -> Canary | None:
        """The prod canary of ``app`` (ids, percent, start; each side's ``stats``), or None."""
        return self.canaries.status(self.application(app).id, stats)

    def replay(self, entry_id: int, against: str | int = "saved") -> replaying.Replay:
        """Run recorded call ``entry_id`` on the deployment that answered it and ``against``
        ("saved", "dev", "prod", a deployment ID): both answers, diffed (docs/replay.md)."""
        return replaying.replay(self.store, self.runner().test, entry_id, against)

    def undeploy(self, app: str, stage: Stage | str) -> None:
        """Stop serving ``app`` on ``stage`` (its history stays; NotFoundError: not live)."""
        self._publisher.undeploy(app, Stage.parse(stage))

    def rollback(self, app: str, stage: Stage | str, to: int | None = None) -> Deployment:
        """Serve an earlier snapshot on ``stage``: ``to``, or the one before the live one."""
        return self._publisher.rollback(app, Stage.parse(stage), to)

    def diff(self, app: str, stage: Stage | str) -> StageDiff:
        """Saved against live on ``stage``: added, removed and changed definitions."""
        return stage_diff(self._publisher, self.application(app).id, Stage.parse(stage))

    def deployments(self, app: str | None = None) -> list[Deployment]:
        """The kept deployments of ``app`` (or all), oldest first; ``active``: live now."""
        return self.store.list_deployments(app)

    def live(self, stage: Stage | str) -> dict[str, list[Definition]]:
        """What ``stage`` serves now: application ID to its deployed definitions."""
        return self._publisher.live(Stage.parse(stage))

    def deployed_state(self, definition: Definition, stage: Stage | str) -> str:
        """'deployed', 'changed' (saved differs from live), 'not deployed' or
        'live as OLD_ID' (renamed since the deploy)."""
        return self._publisher.deployed_state(definition, Stage.parse(stage))

    def listing(self, app: str | None = None, label: str | None = None) -> list[dict[str, Any]]:
        """Definitions as rows: summary, state on each stage, when last saved."""
        return self._publisher.listing(self.definitions(app, label))

    def resources(self) -> dict[str, dict[str, Any]]:
        """Per stage: ``{"total": n, "apps": {app: n}}`` counted the spec's way."""
        return {str(stage): routing.count_resources(self.live(stage)) for stage in Stage}

    def resource_tree(self, stage: Stage | str) -> list[str]:
        """What ``stage`` serves as an indented tree, one line per resource with its
        methods in brackets (what ``notebook-kit resources`` prints)."""
        return routing.resource_tree(self.live(stage))

    def resource_trees(self) -> list[StageResources]:
        """Each stage's resources as trees of nodes, with counts and the
        ``resource_quota`` (what the studio's Resources tab draws)."""
        quota = self.setting("resource_quota")
        return [stage_resources(str(stage), self.live(stage), quota) for stage in Stage]

    def openapi(
        self,
        app: str,
        stage: Stage | str,
        base_url: str = "http://127.0.0.1:8000",
        version: str = "3.1",
    ) -> dict[str, Any]:
        """The OpenAPI document of ``app`` as deployed on ``stage`` (not as saved): 3.1,
        or its 3.0 export with ``version="3.0"`` (docs/guide/openapi.md)."""
        return self._publisher.openapi(app, Stage.parse(stage), base_url, version)

    # -- keys --------------------------------------------------------------------------

    def keys(self) -> dict[str, str]:
        """The API key of each stage, ``{"dev": key, "prod": key}`` (send as ``x-api-key``)."""
        return {str(stage): key for stage, key in self.store.api_keys().items()}

    def rotate_key(self, stage: Stage | str) -> str:
        """Replace ``stage``'s API key and return the new one; running servers refuse the
        old key within ``reload_interval``, so hand the new key to callers first."""
        return rotate_key(self.store, Stage.parse(stage))

    # -- secrets -------------------------------------------------------------------------

    def set_secret(self, app: str, name: str, value: str, stage: Stage | str) -> SecretInfo:
        """Store secret ``name`` of ``app`` on ``stage`` (encrypted; docs/secrets.md). What
        is live keeps the values it was deployed with until the next deploy (a
        ``SecretNotLiveWarning`` says so); test runs use it at once."""
        return self.secret_keeper.set(app, name, value, stage)

    def secrets(self, app: str) -> list[SecretInfo]:
        """``app``'s secrets: name, stage, when set and version, never a value."""
        return self.secret_keeper.list(app)

    def delete_secret(self, app: str, name: str, stage: Stage | str) -> None:
        """Delete secret ``name`` of ``app`` on ``stage`` (live until the next deploy)."""
        self.secret_keeper.delete(app, name, stage)

    def rotate_secrets_key(self) -> str:
        """Encrypt every secret again under a new key, in one transaction: returns the key
        file's path, or the new key when it comes from ``NOTEBOOK_KIT_SECRETS_KEY``."""
        return self.secret_keeper.rotate_key()

    # -- schedules (docs/schedules.md) ------------------------------------------------

    def schedules(self, app: str | None = None) -> list[dict[str, Any]]:
        """Each schedule per stage it is deployed to (``stage`` None: saved, not deployed),
        with ``paused``, ``next_run`` and its last run (``last_run``, ``last_status``)."""
        return self.schedule_keeper.overview(app)

    def add_schedule(
        self, app: str, name: str, definition: str, cron: str, timezone: str = "UTC",
        overlap: str = "skip", replace: bool = False,
    ) -> Schedule:  # fmt: skip
        """Save a schedule: run ``definition`` at each tick of ``cron`` (5 fields, or 6
        with seconds) in ``timezone``; ``overlap`` skip or queue. It runs once deployed."""
        return self.schedule_keeper.add(app, name, definition, cron, timezone, overlap, replace)

    def delete_schedule(self, app: str, name: str) -> None:
        """Delete a saved schedule (a deployed one runs until the next deploy)."""
        self.schedule_keeper.delete(app, name)

    def pause_schedule(self, app: str, name: str, stage: Stage | str = Stage.DEV) -> None:
        """Stop a deployed schedule's ticks on ``stage`` now, on every node."""
        self.schedule_keeper.pause(app, name, stage, True)

    def resume_schedule(self, app: str, name: str, stage: Stage | str = Stage.DEV) -> None:
        """Start a paused schedule's ticks again on ``stage`` (those missed are not run)."""
        self.schedule_keeper.pause(app, name, stage, False)

    def run_schedule_now(
        self, app: str, name: str, stage: Stage | str = Stage.DEV
    ) -> dict[str, Any]:
        """Run a deployed schedule once now, here, as a tick would; its run-log row."""
        return self.schedule_keeper.run_now(app, name, stage)

    def schedule_runs(
        self, app: str | None = None, name: str | None = None,
        stage: Stage | str | None = None, limit: int | None = 100,
    ) -> list[dict[str, Any]]:  # fmt: skip
        """The run log (status, duration, error of each tick), newest first."""
        return self.schedule_keeper.runs(app, name, stage, limit)

    # -- export, import, commit, the sample --------------------------------------------

    def export(self, app: str) -> dict[str, Any]:
        """``app``, its saved definitions and their examples as one ``notebook-kit/1``
        JSON document."""
        return export_document(self.store, self.application(app))

    def export_file(self, app: str, path: str | os.PathLike[str]) -> Path:
        """Write ``export(app)`` to ``path``, whole or not at all; returns the path."""
        return write_json(path, self.export(app))

    def import_application(
        self, source: str | os.PathLike[str] | Mapping[str, Any], replace: bool = False
    ) -> Application:
        """Import an export (a path or the document). Checked whole before anything is
        written; an existing application is refused (ConflictError) unless ``replace``."""
        return import_document(self.store, source, replace)

    def commit(
        self, app: str, repo: str | os.PathLike[str], message: str, author: str | None = None
    ) -> str:
        """Commit only the application's files to a git repository; returns the commit id.
        ``author``: ``Name <email>``, by default git config's user (see ``commit.py``)."""
        from .commit import commit_application as save

        found = (self.application(app), self.definitions(app), self.examples(app))
        schedules = self.schedule_keeper.saved(app)
        return save(os.fspath(repo), *found, message, author, schedules)

    def install_sample(self) -> Application:
        """Create (or restore) ``restapi_sample`` and its data, and deploy it to both
        stages; again, it changes nothing that is already as the sample has it."""
        from .sample import install_sample

        return install_sample(self.database, self._publisher, self.deploy)

    def request_log(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The newest ``limit`` (default: all kept) log rows, oldest first, with their ``app``."""
        return request_log(self.store, self.setting("request_log_size"), limit)
