"""``Studio``: the whole notebook studio, wiring the panels to one ``Workspace``."""

from __future__ import annotations

import ipywidgets as widgets

from ...domain.models import Definition
from ...runtime.server import BackgroundServer
from ...workspace.workspace import Workspace
from ..serving import background_servers
from .deploy import DeployPanel
from .feedback import Status
from .form import DefinitionForm
from .manage import ManagePanel
from .resources import ResourcesPanel
from .server_panel import ServerPanel
from .table import DefinitionTable
from .tester import TestPanel

__all__ = ["Studio"]


class Studio(widgets.VBox):
    """Pick an application, then list, create, edit, test, deploy and manage its definitions.

    ``server``: a background server already running for ``workspace`` (by default the one
    ``workspace.serve()`` started in this process, if any).
    """

    def __init__(self, workspace: Workspace, server: BackgroundServer | None = None) -> None:
        self.workspace = workspace
        if server is None:
            running = background_servers(workspace)
            server = running[-1] if running else None
        self.status = Status()
        self.app_picker = widgets.Combobox(
            description="Application",
            placeholder="pick one or type a new ID",
            ensure_option=False,
            continuous_update=True,
        )
        self.search = widgets.Text(description="Search", placeholder="label contains ...")
        self.new = widgets.Button(description="New", icon="plus")
        for widget, css in (
            (self.app_picker, "nk-app-picker"),
            (self.search, "nk-search"),
            (self.new, "nk-new"),
        ):
            widget.add_class(css)
        self.server_panel = ServerPanel(workspace, self.status, server)
        self.table = DefinitionTable(workspace, on_pick=self._on_table_pick)
        self.form = DefinitionForm(workspace, self.status, on_saved=self._on_form_saved)
        self.tester = TestPanel(workspace, self.status, base_url=self.server_panel.base_url)
        self.deploy = DeployPanel(
            workspace,
            self.status,
            base_url=self.server_panel.base_url,
            path_parameters=self.tester.path_parameters,
            on_deployed=self._on_deploy_done,
        )
        self.manage = ManagePanel(workspace, self.status, on_changed=self._on_manage_changed)
        self.resources = ResourcesPanel(workspace)
        self.app_picker.observe(self._on_app_picker_value, names="value")
        self.search.observe(self._on_search_value, names="value")
        self.new.on_click(self._on_new_click)
        super().__init__(
            [
                widgets.HTML("<h3>notebook_kit studio</h3>"),
                self.status,
                widgets.HBox([self.app_picker, self.search, self.new]),
                self.form.errors["app"],
                self.table,
                self.form,
                self.tester,
                self.deploy,
                self.manage,
                self.resources,
                self.server_panel,
            ]
        )
        self.add_class("nk-studio")
        apps = self._refresh_apps()
        self.app_picker.value = apps[0] if apps else ""
        self._show_app(self.app_picker.value)

    def __repr__(self) -> str:
        # The text a notebook stores next to the widget: stable (no keys, paths or ports),
        # so nbval can compare it.
        return f"<notebook_kit Studio: application {self.app!r}>"

    @property
    def app(self) -> str:
        return self.app_picker.value.strip()

    def _refresh_apps(self) -> list[str]:
        apps = [a.id for a in self.workspace.applications()]
        self.app_picker.options = apps
        return apps

    def _show_app(self, app: str, clear_form: bool = True) -> None:
        """Show ``app`` with nothing picked: its table and an empty form (a draft of a new
        definition is kept when ``clear_form`` is false)."""
        if clear_form or self.form.editing is not None:
            self.form.new()
        self.form.app = app
        self.table.refresh(app=app)
        self._show_definition(None)

    def _show_definition(self, definition: Definition | None) -> None:
        """Make ``definition`` the one every panel works on (None: a new one)."""
        self.tester.load(definition)
        self.deploy.load(self.app, definition)
        self.manage.load(self.app, definition)

    def select(self, app: str, api_id: str | None = None) -> None:
        """Show ``app`` and, if given, put definition ``api_id`` in the form."""
        self._refresh_apps()
        if self.app_picker.value != app:
            self.app_picker.value = app  # shows the app through _on_app_picker_value
        else:
            self._show_app(app)
        if api_id is not None:
            definition = self.workspace.get(app, api_id)
            self.table.select(api_id)
            self.form.load(definition)
            self._show_definition(definition)

    # -- callbacks ---------------------------------------------------------------------

    def _on_app_picker_value(self, change: dict[str, object]) -> None:
        with self.status.working(self.new):
            self._show_app(str(change["new"]).strip(), clear_form=False)

    def _on_search_value(self, change: dict[str, object]) -> None:
        with self.status.working():
            self.table.refresh(search=str(change["new"]))

    def _on_new_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.new):
            self.table.select(None)
            self._show_app(self.app)
            self.status.ok(f"New definition in {self.app}" if self.app else "Choose an application")

    def _on_table_pick(self, definition: Definition | None) -> None:
        with self.status.working():
            if definition is None:
                self._show_app(self.app)
                return
            self.form.load(definition)
            self._show_definition(definition)

    def _on_form_saved(self, definition: Definition) -> None:
        self._refresh_apps()
        if self.app != definition.app:
            self.app_picker.value = definition.app
        self.table.refresh(app=definition.app)
        self.table.select(definition.id)
        self.form.load(definition)
        self._show_definition(definition)

    def _on_deploy_done(self) -> None:
        self.table.refresh()
        self.resources.refresh()

    def _on_manage_changed(self, app: str, api_id: str | None) -> None:
        self.select(app, api_id)
