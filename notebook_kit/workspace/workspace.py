"""``Workspace``: the one facade every face calls (Python API, CLI, widgets, runtime).

Every rule lives here or below. A workspace is a directory (``NOTEBOOK_KIT_HOME``) holding
the store (its ``workspace.sqlite3``, or a shared PostgreSQL one) and ``environment.sqlite3``.

The notebook conveniences at the end (``serve``, ``definitions_frame`` ...) delegate to the
faces that own them (``notebook/``), imported on first use; the faces never import this
module at run time, so no import circle: ``Workspace`` holds no view or server code.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..builtins.context import ActionEnvironment, BuiltinContext
from ..domain import exchange, routing
from ..domain.actions import CompiledAction, compile_action
from ..domain.models import Application, Constant, Definition, Deployment, Stage, endpoint_url
from ..domain.settings import SETTINGS, default_home, find_setting, resolve
from ..errors import ConflictError, NotFoundError
from ..store.opening import STORE_ENV, open_store
from .applications import Deletion, deletion_impact, rename_application
from .configuration import make_home, rotate_key, save_setting
from .diffing import StageDiff, stage_diff
from .editing import change_definition, check_sources, draft_definition, insert_definition
from .publishing import Publisher
from .resource_trees import StageResources, stage_resources
from .traffic import with_apps
from .transfer import copy_definition, import_document, write_json

if TYPE_CHECKING:
    import pandas as pd

    from ..builtins.users import UserDirectory
    from ..domain.test_runs import Invocation
    from ..runtime.server import BackgroundServer, ServerProcess

__all__ = ["Workspace"]

_UNSET: Any = object()


class Workspace:
    """A notebook_kit workspace. ``Workspace()`` uses ``NOTEBOOK_KIT_HOME`` or
    ``~/.notebook_kit`` (created owner-only on first use). The deploy rules live in
    ``publishing.Publisher``, what actions reach in ``builtins``; this is the facade."""

    def __init__(
        self, home: str | os.PathLike[str] | None = None, store: str | None = None
    ) -> None:
        self.home = make_home(Path(home).expanduser() if home is not None else default_home())
        # ``store``: a store URL (None: $NOTEBOOK_KIT_STORE, else the SQLite file in home)
        self.store = open_store(os.environ.get(STORE_ENV) if store is None else store, self.home)
        self.context = BuiltinContext(self.store, self.home, self.settings)
        self._environment = ActionEnvironment(self.context)
        self._publisher = Publisher(self.store, self.setting, self.action_env)

    def __repr__(self) -> str:
        return f"Workspace({str(self.home)!r})"

    # -- settings ----------------------------------------------------------------------

    def setting(self, name: str) -> Any:
        return resolve(find_setting(name), self.store.stored_settings())

    def settings(self) -> dict[str, Any]:
        stored = self.store.stored_settings()
        return {s.name: resolve(s, stored) for s in SETTINGS}

    def set_setting(self, name: str, value: str | None) -> None:
        """Store a setting (``None`` goes back to the default). Checked before it is saved."""
        save_setting(self.store, self.home, name, value)

    # -- the action environment --------------------------------------------------------

    @property
    def database(self) -> Any:
        """The execution environment's database (``db`` in actions)."""
        return self._environment.database

    def action_env(self) -> dict[str, Any]:
        """The names every action sees besides ``req``, ``res`` and ``const``."""
        return self._environment.names()

    def users(self) -> UserDirectory:
        """The execution environment's user directory (what ``fn.getUsers`` and friends
        use), for managing users from a notebook; it mails reset tokens as ``fn`` does."""
        from ..builtins.users import UserDirectory

        return UserDirectory(self.store, self.context.notify)

    # -- applications ------------------------------------------------------------------

    def applications(self) -> list[Application]:
        return self.store.list_applications()

    def application(self, app: str) -> Application:
        found = self.store.get_application(app)
        if found is None:
            raise NotFoundError(f"no application {app!r}")
        return found

    def create_application(self, app: str, label: str = "") -> Application:
        record = Application(app, label)
        with self.store.transaction():
            if self.store.get_application(app):
                raise ConflictError(f"application {app!r} already exists")
            self.store.put_application(record)
        return record

    def rename_application(self, app: str, label: str) -> Application:
        return rename_application(self.store, app, label)

    def deletion_impact(self, app: str) -> Deletion:
        return deletion_impact(self.store, app)

    def delete_application(self, app: str) -> None:
        """Remove the application, its definitions and what it has live (history stays)."""
        with self.store.transaction():
            self.application(app)
            self.store.delete_application(app)
            self.store.bump_generation()

    # -- definitions -------------------------------------------------------------------

    def get(self, app: str, api_id: str) -> Definition:
        found = self.store.get_definition(app, api_id)
        if found is None:
            raise NotFoundError(f"no definition {api_id!r} in application {app!r}")
        return found

    def definitions(
        self, app: str | None = None, label: str | None = None, search: str | None = None
    ) -> list[Definition]:
        """Definitions (of ``app``) whose label has ``label`` and whose label, API ID or path has
        ``search`` (case-insensitive)."""
        if app is not None:
            self.application(app)
        found = self.store.list_definitions(app)
        if label:
            found = [d for d in found if label.casefold() in d.label.casefold()]
        return [d for d in found if d.matches(search)] if search else found

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
    ) -> Definition:
        """Create a definition (and its application, if new). Refused whole if invalid.
        ``timeout``: seconds its action may run (None: the ``action_timeout`` setting)."""
        given = (app, api_id, label, method, resource, action, content_type, requires_auth)
        definition = Definition(*given, functions, tuple(constants), timeout=timeout)
        return insert_definition(self.store, definition)

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
    ) -> Definition:
        """Change a definition (its ID too). What is live changes only at the next deploy.
        ``timeout=None`` goes back to the ``action_timeout`` setting."""
        given = {
            "id": new_id,
            "label": label,
            "method": method,
            "resource": resource,
            "action": action,
            "requires_auth": requires_auth,
            "functions": functions,
            "constants": None if constants is None else tuple(constants),
        }
        changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        if content_type is not _UNSET:
            changes["content_type"] = content_type
        if timeout is not _UNSET:
            changes["timeout"] = timeout
        return change_definition(self.store, app, api_id, changes)

    def draft(self, app: str, api_id: str, **fields: Any) -> Definition:
        """A definition validated like ``create`` (sources compiled) but not saved."""
        return draft_definition(app, api_id, fields)

    # The core's compile check (ActionSyntaxError naming the field and the line).
    check_sources = staticmethod(check_sources)

    def change_stamp(self) -> str:
        """Differs whenever the store changed (any process): poll it to notice changes."""
        return self.store.change_stamp()

    def delete(self, app: str, api_id: str) -> None:
        with self.store.transaction():
            self.get(app, api_id)
            self.store.delete_definition(app, api_id)

    def copy(self, app: str, api_id: str, to_app: str, new_id: str | None = None) -> Definition:
        """Copy a definition into ``to_app`` (created if missing), as ``new_id`` if given."""
        return copy_definition(self.store, self.get(app, api_id), to_app, new_id)

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
        """Run the *saved* definition in this process, as the studio's Test panel does."""
        request = dict(path_parameters=path_parameters, query=query, headers=headers, body=body)
        return self.invoke_draft(self.get(app, api_id), **request)

    def invoke_draft(self, definition: Definition, **request: Any) -> Invocation:
        """Run an unsaved ``definition`` as ``invoke`` runs a saved one (same keywords)."""
        from ..domain.test_runs import run_test  # not at import: the CLI needs no messages

        return run_test(self.compile, definition, **request)

    def compile(self, definition: Definition) -> CompiledAction:
        return compile_action(definition, self.action_env())

    def endpoint_urls(self, app: str, api_id: str, base_url: str) -> dict[str, str]:
        """The debug and release endpoint URLs of a definition."""
        resource = self.get(app, api_id).resource
        return {str(s): endpoint_url(base_url, s, app, resource) for s in Stage}

    # -- deploy, undeploy, rollback ----------------------------------------------------

    def deploy(self, app: str, stage: Stage | str, description: str = "") -> Deployment:
        """Validate the whole application and publish a snapshot of it to ``stage``;
        ``description`` (one line, optional) is kept with the deployment."""
        stage = Stage.parse(stage)
        return self._publisher.deploy(self.application(app), stage, description)

    def undeploy(self, app: str, stage: Stage | str) -> None:
        self._publisher.undeploy(app, Stage.parse(stage))

    def rollback(self, app: str, stage: Stage | str, to: int | None = None) -> Deployment:
        """Serve an earlier snapshot on ``stage``: ``to``, or the one before the live one."""
        return self._publisher.rollback(app, Stage.parse(stage), to)

    def diff(self, app: str, stage: Stage | str) -> StageDiff:
        """Saved against live on ``stage``: added, removed and changed definitions."""
        return stage_diff(self._publisher, self.application(app).id, Stage.parse(stage))

    def deployments(self, app: str | None = None) -> list[Deployment]:
        """The deployment history (oldest first), each with its description."""
        return self.store.list_deployments(app)

    def live(self, stage: Stage | str) -> dict[str, list[Definition]]:
        """What ``stage`` serves now: application ID to its deployed definitions."""
        return self._publisher.live(Stage.parse(stage))

    def deployed_state(self, definition: Definition, stage: Stage | str) -> str:
        """'deployed', 'changed' (saved differs from live), 'not deployed' or
        'live as OLD_ID' (renamed since the deploy)."""
        return self._publisher.deployed_state(definition, Stage.parse(stage))

    def listing(self, app: str | None = None, label: str | None = None) -> list[dict[str, Any]]:
        """Definitions as rows: their summary, the state on each stage (as
        ``deployed_state``) and when they were last saved."""
        return self._publisher.listing(self.definitions(app, label))

    def resources(self) -> dict[str, dict[str, Any]]:
        """Per stage: ``{"total": n, "apps": {app: n}}`` counted the spec's way."""
        return {str(stage): routing.count_resources(self.live(stage)) for stage in Stage}

    def resource_tree(self, stage: Stage | str) -> list[str]:
        return routing.resource_tree(self.live(stage))

    def resource_trees(self) -> list[StageResources]:
        quota = self.setting("resource_quota")
        return [stage_resources(str(stage), self.live(stage), quota) for stage in Stage]

    def openapi(
        self, app: str, stage: Stage | str, base_url: str = "http://127.0.0.1:8000"
    ) -> dict[str, Any]:
        """The OpenAPI 3.1 document of ``app`` as deployed on ``stage`` (not as saved)."""
        from ..domain.openapi import build_document

        stage = Stage.parse(stage)
        record, definitions, deployment_id = self._publisher.live_snapshot(app, stage)
        return build_document(record, stage, definitions, base_url, deployment_id)

    # -- keys --------------------------------------------------------------------------

    def keys(self) -> dict[str, str]:
        return {str(stage): key for stage, key in self.store.api_keys().items()}

    def rotate_key(self, stage: Stage | str) -> str:
        return rotate_key(self.store, Stage.parse(stage))

    # -- export, import, commit --------------------------------------------------------

    def export(self, app: str) -> dict[str, Any]:
        return exchange.to_document(self.application(app), self.store.list_definitions(app))

    def export_file(self, app: str, path: str | os.PathLike[str]) -> Path:
        return write_json(path, self.export(app))

    def import_application(
        self, source: str | os.PathLike[str] | Mapping[str, Any], replace: bool = False
    ) -> Application:
        """Import an export (a path or the document). Checked whole before anything is
        written; an existing application is refused unless ``replace``."""
        if isinstance(source, Mapping):
            document: Any = dict(source)
        else:
            document = exchange.read_document(os.fspath(source))
        return import_document(self.store, document, replace)

    def commit(
        self, app: str, repo: str | os.PathLike[str], message: str, author: str | None = None
    ) -> str:
        """Commit only the application's files to a git repository; returns the commit id.
        ``author``: ``Name <email>``, by default git config's user (see ``commit.py``)."""
        from .commit import commit_application as save

        return save(os.fspath(repo), self.application(app), self.definitions(app), message, author)

    # -- the sample --------------------------------------------------------------------

    def install_sample(self) -> Application:
        """Create (or restore) ``restapi_sample`` and its data, and deploy it to both
        stages; again, it changes nothing that is already as the sample has it."""
        from .sample import install_sample

        return install_sample(self, self._publisher)

    # -- notebook conveniences: one-line delegations to the notebook face -----------------

    def serve(self, port: int = 0, host: str = "127.0.0.1") -> BackgroundServer:
        """Serve in a background thread of this process (``notebook_kit.serve``)."""
        from ..notebook.serving import serve

        return serve(self, port=port, host=host)

    def serve_process(
        self, port: int = 8000, host: str = "127.0.0.1", workers: int = 1
    ) -> ServerProcess:
        """Serve from a child process (``notebook_kit.serve_process``)."""
        from ..notebook.serving import serve_process

        return serve_process(self, port=port, host=host, workers=workers)

    def definitions_frame(self, app: str | None = None, label: str | None = None) -> pd.DataFrame:
        """``listing()`` as a DataFrame (as are the other ``*_frame`` methods)."""
        return _frames().definitions_frame(self.listing(app, label))

    def deployments_frame(self, app: str | None = None) -> pd.DataFrame:
        return _frames().deployments_frame(self.deployments(app))

    def resources_frame(self) -> pd.DataFrame:
        return _frames().resources_frame(self.resources())

    def users_frame(self) -> pd.DataFrame:
        return _frames().users_frame(self.users().all_users())

    def groups_frame(self) -> pd.DataFrame:
        return _frames().groups_frame(self.users().all_groups())

    def request_log_frame(self, limit: int | None = None) -> pd.DataFrame:
        """The newest ``limit`` (default: all kept) requests any server answered."""
        return _frames().request_log_frame(self.request_log(limit))

    def request_log(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The newest ``limit`` (default: all kept) log rows, oldest first, with their ``app``."""
        keep = self.setting("request_log_size")
        return with_apps(self.store.request_log(keep if limit is None else min(limit, keep)))


def _frames() -> Any:
    """The notebook face's pandas frames, imported (with pandas) on first use."""
    from ..notebook import frames

    return frames
