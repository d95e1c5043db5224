"""``Workspace``: the one facade every face calls (Python API, CLI, widgets, runtime).

Every rule lives here or below: validation, deploy snapshots, resource counts, keys,
import/export. A workspace is a directory (``NOTEBOOK_KIT_HOME``) holding the store
(``workspace.sqlite3``) and the execution environment's database (``environment.sqlite3``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..builtins.db import open_database
from ..builtins.functions import Functions
from ..domain import exchange, routing, sample
from ..domain.actions import (
    ActionRequest,
    CompiledAction,
    Invocation,
    check_sources,
    compile_action,
)
from ..domain.actions import invoke as run_invocation
from ..domain.models import Application, Constant, Definition, Deployment, Stage, endpoint_url
from ..domain.settings import SETTINGS, default_home, find_setting, parse_value, resolve
from ..errors import ConflictError, NotFoundError, StoreError, ValidationError
from ..notebook.views import NotebookViews
from ..store.store import Store, new_api_key
from .publishing import Publisher, same_content
from .transfer import import_document, write_json

__all__ = ["Workspace"]

_UNSET: Any = object()


class Workspace(NotebookViews):
    """A notebook_kit workspace. ``Workspace()`` uses ``NOTEBOOK_KIT_HOME`` or
    ``~/.notebook_kit``; the directory is created owner-only on first use.

    The deploy rules live in ``publishing.Publisher``, the pandas views and ``serve`` in
    ``notebook_views.NotebookViews``; this class is the one facade over them."""

    def __init__(self, home: str | os.PathLike[str] | None = None) -> None:
        self.home = Path(home).expanduser() if home is not None else default_home()
        try:
            self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(self.home, 0o700)
        except OSError as exc:
            raise StoreError(
                f"cannot use {self.home} as the workspace directory: {exc.strerror}"
            ) from None
        self.store = Store(self.home / "workspace.sqlite3")
        self._publisher = Publisher(
            self.store, lambda: self.setting("resource_quota"), self.action_env
        )
        self._database_url = self.setting("database_url")
        self.database = open_database(self._database_url, self.home / "environment.sqlite3")

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
        setting = find_setting(name)
        if value is not None:
            parse_value(setting, value)
        with self.store.transaction():
            self.store.set_setting(name, value)
            self.store.bump_generation()

    # -- the action environment --------------------------------------------------------

    def _current_database(self) -> Any:
        """``db`` for the ``database_url`` in force (reopened when the setting changed)."""
        url = self.setting("database_url")
        if url != self._database_url:
            self.database = open_database(url, self.home / "environment.sqlite3")
            self._database_url = url
        return self.database

    def action_env(self) -> dict[str, Any]:
        """The names every action sees besides ``req``, ``res`` and ``const``."""
        from ..builtins.http import HttpClient

        return {
            "fn": Functions(self),
            "db": self._current_database(),
            "http": HttpClient(lambda: self.setting("http_timeout")),
        }

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

    def definitions(self, app: str | None = None, label: str | None = None) -> list[Definition]:
        """Definitions, optionally of one application and whose label contains ``label``
        (case-insensitive)."""
        if app is not None:
            self.application(app)
        found = self.store.list_definitions(app)
        if label:
            needle = label.casefold()
            found = [d for d in found if needle in d.label.casefold()]
        return found

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
    ) -> Definition:
        """Create a definition (and its application, if new). Refused whole if invalid."""
        definition = Definition(
            app,
            api_id,
            label,
            method,
            resource,
            action,
            content_type,
            requires_auth,
            functions,
            tuple(constants),
        )
        check_sources(definition.action, definition.functions)
        with self.store.transaction():
            if self.store.get_definition(app, api_id):
                raise ConflictError(f"application {app!r} already has a definition {api_id!r}")
            if not self.store.get_application(app):
                self.store.put_application(Application(app))
            self.store.insert_definition(definition)
        return definition

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
    ) -> Definition:
        """Change a definition (its ID too). What is live changes only at the next deploy."""
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
        with self.store.transaction():
            current = self.get(app, api_id)
            updated = current.with_changes(**changes)
            check_sources(updated.action, updated.functions)
            if updated.id != api_id and self.store.get_definition(app, updated.id):
                raise ConflictError(f"application {app!r} already has a definition {updated.id!r}")
            self.store.replace_definition(api_id, updated)
        return updated

    def delete(self, app: str, api_id: str) -> None:
        with self.store.transaction():
            self.get(app, api_id)
            self.store.delete_definition(app, api_id)

    def copy(self, app: str, api_id: str, to_app: str, new_id: str | None = None) -> Definition:
        """Copy a definition into ``to_app`` (created if missing), as ``new_id`` if given."""
        source = self.get(app, api_id)
        target_id = new_id or source.id
        with self.store.transaction():
            if self.store.get_definition(to_app, target_id):
                raise ConflictError(
                    f"application {to_app!r} already has a definition "
                    f"{target_id!r}; choose another ID"
                )
            if not self.store.get_application(to_app):
                self.store.put_application(Application(to_app))
            copied = Definition.from_dict(
                {
                    **source.to_dict(),
                    "app": to_app,
                    "id": target_id,
                    "created_at": None,
                    "updated_at": None,
                }
            )
            self.store.insert_definition(copied)
        return copied

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
        from urllib.parse import urlencode

        from multidict import CIMultiDict

        definition = self.get(app, api_id)
        params = {
            name: str((path_parameters or {}).get(name, "")) for name in definition.path_parameters
        }
        missing = [name for name, value in params.items() if not value]
        if missing:
            raise ValidationError(
                f"give a value for the path parameter {{{missing[0]}}}", field="path_parameters"
            )
        resource = "/".join(
            params[s[1:-1]] if s.startswith("{") else s for s in definition.segments
        )
        req = ActionRequest(
            httpMethod=definition.method,
            path=f"/test/{app}/{resource}",
            stage="test",
            headers=CIMultiDict(headers or {}),
            pathParameters=params,
            query_string=query if isinstance(query, str) else urlencode(query),
            body=body,
        )
        return run_invocation(self.compile(definition), req)

    def compile(self, definition: Definition) -> CompiledAction:
        return compile_action(definition, self.action_env())

    def endpoint_urls(self, app: str, api_id: str, base_url: str) -> dict[str, str]:
        """The debug and release endpoint URLs of a definition."""
        d = self.get(app, api_id)
        return {str(s): endpoint_url(base_url, s, app, d.resource) for s in Stage}

    # -- deploy, undeploy, rollback ----------------------------------------------------

    def deploy(self, app: str, stage: Stage | str) -> Deployment:
        """Validate the whole application and publish a snapshot of it to ``stage``."""
        stage = Stage.parse(stage)
        record = self.application(app)
        return self._publisher.deploy(record, self.store.list_definitions(app), stage)

    def undeploy(self, app: str, stage: Stage | str) -> None:
        self._publisher.undeploy(app, Stage.parse(stage))

    def rollback(self, app: str, stage: Stage | str, to: int | None = None) -> Deployment:
        """Serve an earlier snapshot on ``stage``: ``to``, or the one before the live one."""
        return self._publisher.rollback(app, Stage.parse(stage), to)

    def deployments(self, app: str | None = None) -> list[Deployment]:
        return self.store.list_deployments(app)

    def live(self, stage: Stage | str) -> dict[str, list[Definition]]:
        """What ``stage`` serves now: application ID to its deployed definitions."""
        return self._publisher.live(Stage.parse(stage))

    def deployed_state(self, definition: Definition, stage: Stage | str) -> str:
        """'deployed', 'changed' (saved differs from live) or 'not deployed'."""
        return self._publisher.deployed_state(definition, Stage.parse(stage))

    def listing(self, app: str | None = None, label: str | None = None) -> list[dict[str, Any]]:
        """Definitions as rows: their summary, the state on each stage ('deployed',
        'changed' or 'not deployed') and when they were last saved."""
        definitions = self.definitions(app, label)
        states = self._publisher.deployed_states(definitions)
        return [
            {
                **d.summary(),
                **{str(s): state for s, state in states[d.app, d.id].items()},
                "updated_at": d.updated_at,
            }
            for d in definitions
        ]

    def resources(self) -> dict[str, dict[str, Any]]:
        """Per stage: ``{"total": n, "apps": {app: n}}`` counted the spec's way."""
        return {str(stage): routing.count_resources(self.live(stage)) for stage in Stage}

    def resource_tree(self, stage: Stage | str) -> list[str]:
        return routing.resource_tree(self.live(stage))

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
        stage = Stage.parse(stage)
        key = new_api_key()
        with self.store.transaction():
            self.store.set_api_key(stage, key)
            self.store.bump_generation()
        return key

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

    def commit(self, app: str, repo: str | os.PathLike[str], message: str) -> str:
        """Commit the application's files to a git repository; returns the commit id."""
        from .commit import commit_application

        return commit_application(
            os.fspath(repo), self.application(app), self.store.list_definitions(app), message
        )

    # -- the sample --------------------------------------------------------------------

    def install_sample(self) -> Application:
        """Create (or restore) ``restapi_sample`` and its data, and deploy it to both
        stages. Running it again changes nothing that is already as the sample has it."""
        definitions = sample.sample_definitions()
        with self.database.transaction() as db:
            db.execute(sample.EMPLOYEE_TABLE)
            db.executemany(
                "INSERT OR REPLACE INTO employee (id, name, age) VALUES (?, ?, ?)", sample.EMPLOYEES
            )
        app = sample.SAMPLE_APP
        with self.store.transaction():
            if self.store.get_application(app.id) != app:
                self.store.put_application(app)
            for definition in definitions:
                current = self.store.get_definition(app.id, definition.id)
                if current is None or not same_content(current, definition):
                    self.store.replace_definition(definition.id, definition)
        for stage in Stage:
            if not self._publisher.is_live_as_saved(app.id, stage):
                self.deploy(app.id, stage)
        return app
