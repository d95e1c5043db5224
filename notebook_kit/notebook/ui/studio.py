"""``Studio``: the whole notebook studio, wiring the panels to one ``Workspace``.

Two panes: on the left the application bar, the search, New and the definition list; on
the right the tabs Edit | Test | Contract | Deploy | Logs | Resources | Server | Consumers |
Secrets | Schedules. The studio
owns the state every panel agrees on: the application shown, the definition open
(``current``), and whether the form holds unsaved edits (then New, another row or another
application first asks to discard them). A ``StorePoller`` refreshes everything within a
second or two of a change made by another process, keeping unsaved edits.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from ...domain.models import Definition, Stage
from ...errors import NotFoundError
from ...runtime.process.handles import BackgroundServer
from ...workspace.replay import LoggedCall
from ...workspace.workspace import Workspace
from ..serving import background_servers
from .applications import ApplicationBar
from .consumers import ConsumersPanel
from .contract import ContractPanel
from .definition_list import DefinitionList, list_rows
from .deploy import DeployPanel
from .feedback import Confirm, Status, StatusBoard
from .form import DefinitionForm
from .logs import LogsPanel
from .manage import ManagePanel
from .refresh import StorePoller
from .replay import fill_test_panel
from .resources import ResourcesPanel
from .schedules import SchedulesPanel
from .secrets import SecretsPanel
from .server_panel import ServerPanel
from .style import STUDIO_STYLE
from .sync import SAVE_FIELDS, FrontEndSync
from .tester import TestPanel

__all__ = ["TAB_TITLES", "Studio"]

TAB_TITLES = (
    "Edit",
    "Test",
    "Contract",
    "Deploy",
    "Logs",
    "Resources",
    "Server",
    "Consumers",
    "Secrets",
    "Schedules",
)
_LOGS_TAB = TAB_TITLES.index("Logs")
_CONSUMERS_TAB = TAB_TITLES.index("Consumers")


class Studio(widgets.HBox):
    """Pick an application, then list, create, edit, test, deploy and manage its definitions.

    ``server``: a background server already running for ``workspace`` (by default the one
    ``workspace.serve()`` started in this process, if any). ``poll_interval``: seconds
    between checks for changes made elsewhere (``None``: no background polling; call
    ``refresh()`` yourself).
    """

    def __init__(
        self,
        workspace: Workspace,
        server: BackgroundServer | None = None,
        poll_interval: float | None = 1.0,
    ) -> None:
        self.workspace = workspace
        self.poller: StorePoller | None = None
        self.current: Definition | None = None  # the saved definition open in the form
        # One status board: a status belongs to the latest action (see feedback.py). Its
        # lock is held by every action and by the poller's refresh.
        self.board = StatusBoard()
        self._lock = self.board.lock
        self._own_stamp = workspace.change_stamp()  # the store as our last action left it
        if server is None:
            running = background_servers(workspace)
            server = running[-1] if running else None
        self.server_panel = ServerPanel(workspace, server)
        self.app_bar = ApplicationBar(workspace, request_switch=self._request_switch)
        self.search = widgets.Text(
            placeholder="search label, path or ID", layout=widgets.Layout(width="auto")
        )
        self.new = widgets.Button(
            description="New definition", icon="plus", layout=widgets.Layout(width="auto")
        )
        self.sidebar_status = Status("nk-sidebar-status")
        self.discard_ask = Confirm(self.sidebar_status, "Discard changes", "nk-discard-ask")
        self.discard_ask.layout.flex_flow = "row wrap"
        self.discard_ask.cancel.on_click(self._on_discard_cancel_click)
        self._after_cancel: Callable[[], None] | None = None
        self.definitions = DefinitionList()
        self.search.add_class("nk-search")
        self.new.add_class("nk-new")
        self.form = DefinitionForm(workspace, on_saved=self._on_form_saved, on_run=self._run_edited)
        self.manage = ManagePanel(workspace, on_changed=self._on_manage_changed)
        self.tester = TestPanel(
            workspace, base_url=self.server_panel.base_url, draft=self.form.draft
        )
        self.contract = ContractPanel(workspace)
        self.deploy = DeployPanel(
            workspace,
            base_url=self.server_panel.base_url,
            on_deployed=self._on_deployed,
            path_parameters=self.tester.path_parameters,  # the curl line fills them in
        )
        self.logs = LogsPanel(workspace)
        self.logs.replay.on_open = self._open_logged  # a logged call into the Test tab
        self.resources = ResourcesPanel(workspace)
        self.consumers = ConsumersPanel(workspace)
        self.secrets = SecretsPanel(workspace, lambda: self.app)
        self.schedules = SchedulesPanel(workspace, lambda: self.app)
        self.definitions.on_pick(self._on_definition_pick)
        self.search.observe(self._on_search_value, names="value")
        self.new.on_click(self._on_new_click)
        self.sidebar = widgets.VBox(
            [
                self.app_bar,
                widgets.HTML("<b>Definitions</b>"),
                self.search,
                self.new,
                self.discard_ask,
                self.sidebar_status,
                self.definitions,
            ],
            layout=widgets.Layout(padding="0 8px 0 0"),
        )
        self.sidebar.add_class("nk-sidebar")
        self.form.place_actions(self.manage)  # under Save: no scrolling past the form
        edit = widgets.VBox([self.form], layout=widgets.Layout(width="100%"))
        panes = (
            edit,
            self.tester,
            self.contract,
            self.deploy,
            self.logs,
            self.resources,
            self.server_panel,
            self.consumers,
            self.secrets,
            self.schedules,
        )
        self.tabs = widgets.Tab(children=panes, titles=TAB_TITLES)
        self.tabs.add_class("nk-tabs")
        self.tabs.observe(self._on_tabs_selected_index, names="selected_index")
        # A panel re-reads the store only while its tab is shown; a hidden one is marked
        # stale and re-reads when its tab is selected (a refresh costs what one tab shows).
        self._panels = {TAB_TITLES.index(t): p for t, p in zip(TAB_TITLES, panes, strict=True)}
        self._stale: set[int] = set()
        # Clicks, Ctrl/Cmd+S and Ctrl/Cmd+Enter act on what the user sees (see sync.py).
        self.sync = FrontEndSync(on_save=self.form.save.click, save_fields=SAVE_FIELDS)
        super().__init__([widgets.HTML(STUDIO_STYLE), self.sidebar, self.tabs, self.sync])
        self.add_class("nk-studio")
        self.board.join(self)
        self.board.after_action = self._acted
        self.sync.guard_all(self)
        self._show_app(self.app_bar.app)
        self.poller = StorePoller(workspace, self.refresh, poll_interval or 1.0)
        if poll_interval is not None:
            self.poller.start()

    def __repr__(self) -> str:
        # The text a notebook stores next to the widget: stable (no keys, paths or ports),
        # so nbval can compare it.
        return f"<notebook_kit Studio: application {self.app!r}>"

    @property
    def app(self) -> str:
        return self.app_bar.app

    def close(self) -> None:
        """Stop the background refresh (and the Logs tab's), then close the widgets."""
        if self.poller is not None:
            self.poller.stop()
        if hasattr(self, "logs"):
            self.logs.set_active(False)
            self.logs.close()
        super().close()

    # -- what is shown -----------------------------------------------------------------

    def _show_app(self, app: str) -> None:
        """Show ``app`` with a new, empty definition in the form."""
        self.form.app = app
        self.form.new()
        self._open(None)
        self._refresh_shown(self.secrets, self.schedules)

    def _open(self, definition: Definition | None) -> None:
        """Make ``definition`` the one every panel works on (None: a new one)."""
        self.current = definition
        self.board.clear()  # another context: what the status lines said is past
        self._show_list()
        self.tester.load(definition)
        self.contract.load(definition)
        self.deploy.load(self.app, definition, refresh=self._shown(self.deploy))
        self.manage.load(self.app, definition)
        if self._shown(self.logs):
            self.logs.load(self.app)

    def _shown(self, panel: widgets.Widget) -> bool:
        """True if ``panel``'s tab is the one shown; else it is marked to re-read when
        its tab is selected."""
        index = next(i for i, shown in self._panels.items() if shown is panel)
        if index == self.tabs.selected_index:
            return True
        self._stale.add(index)
        return False

    def _refresh_shown(self, *panels: widgets.Widget) -> None:
        """Re-read those of ``panels`` whose tab is shown; mark the others stale."""
        for panel in panels:
            if self._shown(panel):
                panel.refresh()  # type: ignore[attr-defined]

    def _show_list(self) -> None:
        app, search = self.app, self.search.value
        try:
            rows = self.workspace.definitions(app, search=search) if app else []
            listing = self.workspace.listing(app) if rows else []
            states = {row["id"]: [row[str(s)] for s in Stage] for row in listing}
        except NotFoundError:
            rows, states = [], {}
        self.definitions.empty_text = (
            "Create or pick an application first."
            if not app
            else "No definition matches the search."
            if search
            else "No definitions yet: New definition."
        )
        self.definitions.rows = list_rows(rows, states)
        self.definitions.selected = self.current.id if self.current is not None else ""

    def select(self, app: str, api_id: str | None = None) -> None:
        """Show ``app`` and, if given, open its definition ``api_id`` (no question asked)."""
        self.app_bar.refresh()
        self.app_bar.show(app)
        self._show_app(app)
        if api_id is not None:
            definition = self.workspace.get(app, api_id)
            self.form.load(definition)
            self._open(definition)

    def refresh(self) -> None:
        """Re-read the store (another process may have changed it): the applications, the
        list and its states, every panel; reload the open definition if it changed and
        the form holds no unsaved edits, else say so next to Save."""
        with self._lock:
            if self.workspace.change_stamp() != self._own_stamp:
                self.board.clear()  # changed elsewhere: the status lines spoke of the old
                self._own_stamp = self.workspace.change_stamp()
            self.app_bar.refresh()
            if self.app and self.app not in {a.id for a in self.workspace.applications()}:
                if not self.form.dirty:
                    self.select(self.app_bar.app)
                    return
                self.form.save_status.info(f"application {self.app} was deleted elsewhere")
            if self.current is not None:
                try:
                    saved: Definition | None = self.workspace.get(self.current.app, self.current.id)
                except NotFoundError:
                    saved = None
                if saved != self.current:
                    self._reconcile(saved)
            self._show_list()
            self._refresh_shown(
                self.tester,
                self.deploy,
                self.logs,
                self.resources,
                self.server_panel,
                self.consumers,
                self.schedules,
            )

    def _reconcile(self, saved: Definition | None) -> None:
        """The open definition changed elsewhere (``saved``: None if deleted there)."""
        assert self.current is not None
        name = f"{self.current.app} / {self.current.id}"
        if self.form.dirty:
            what = "deleted" if saved is None else "changed"
            self.form.save_status.info(
                f"{name} was {what} in another process; Save overwrites it with your edits"
                if saved is not None
                else f"{name} was deleted in another process; your edits are not saved"
            )
            if saved is not None:
                self.current = saved
                self.form.editing = saved
            return
        if saved is None:
            self.form.new()
            self._open(None)
            self.form.save_status.info(f"{name} was deleted in another process")
        else:
            self.form.load(saved)
            self._open(saved)
            self.form.save_status.info(f"{name} was changed in another process: reloaded")

    def _acted(self) -> None:
        """After each action: the store as it left it (a later refresh that finds the
        same clears no status line)."""
        self._own_stamp = self.workspace.change_stamp()

    # -- asking before unsaved edits are lost ------------------------------------------

    def _guard(
        self, what: str, proceed: Callable[[], None], cancelled: Callable[[], None] | None = None
    ) -> None:
        """Run ``proceed`` now if the form is clean, else after "Discard changes"."""
        self.discard_ask.close_question()
        if not self.form.dirty:
            proceed()
            return
        self._after_cancel = cancelled
        name = self.current.id if self.current is not None else "the new definition"
        self.discard_ask.ask(
            f"Discard unsaved changes to {name} and {what}?", lambda: self._discarded(proceed)
        )

    def _discarded(self, proceed: Callable[[], None]) -> None:
        with self._lock:
            self._after_cancel = None
            proceed()

    def _on_discard_cancel_click(self, _button: widgets.Button) -> None:
        after, self._after_cancel = self._after_cancel, None
        self.sidebar_status.info("Kept your unsaved changes")
        if after is not None:
            after()

    def _request_switch(self, app: str, proceed: Callable[[], None]) -> None:
        """The application bar asks to show ``app``; ``proceed()`` makes it current."""
        previous = self.app

        def switch() -> None:
            proceed()
            self.search.value = ""
            self._show_app(app)

        with self._lock:
            self._guard(
                f"open application {app or '(none)'}", switch, lambda: self.app_bar.show(previous)
            )

    # -- callbacks ---------------------------------------------------------------------

    def _on_search_value(self, change: dict[str, object]) -> None:
        with self._lock, self.sidebar_status.working():
            self._show_list()

    def _on_new_click(self, _button: widgets.Button) -> None:
        def start_new() -> None:
            self._show_app(self.app)
            self.tabs.selected_index = 0
            self.sidebar_status.ok(
                f"New definition in {self.app}" if self.app else "Create an application first"
            )

        with self._lock, self.sidebar_status.working(self.new):
            self._guard("start a new one", start_new)

    def _on_definition_pick(self, api_id: str) -> None:
        def open_it() -> None:
            definition = self.workspace.get(self.app, api_id)
            self.form.load(definition)
            self._open(definition)

        with self._lock, self.sidebar_status.working():
            self._guard(f"open {api_id}", open_it)

    def _run_edited(self) -> None:
        """Ctrl/Cmd+Enter in an editor: run the edited version in the Test tab."""
        self.tabs.selected_index = TAB_TITLES.index("Test")
        self.tester.run_edited()

    def _open_logged(self, call: LoggedCall) -> None:
        """Show a recorded call's definition in the Test tab, its request filled in."""

        def show() -> None:
            self.select(call.app, call.api_id)
            self.tabs.selected_index = TAB_TITLES.index("Test")
            fill_test_panel(self.tester, call)

        with self._lock:
            self._guard(f"open {call.app} / {call.api_id}", show)

    def _on_form_saved(self, definition: Definition) -> None:
        with self._lock:
            self.app_bar.refresh()
            if self.app != definition.app:
                self.app_bar.show(definition.app)
            self._open(definition)
            if self.poller is not None:  # our own change: shown already
                self.poller.stamp = self.workspace.change_stamp()

    def _on_deployed(self) -> None:
        self._show_list()
        self._refresh_shown(self.resources, self.logs)

    def _on_manage_changed(self, app: str, api_id: str | None) -> None:
        """After a copy or an import, show what it made (asking first if that would drop
        unsaved edits); after a delete of the open definition, there is nothing to keep."""
        current = self.current
        gone = current is None or not any(
            d.id == current.id for d in self.workspace.definitions(current.app)
        )
        with self._lock:
            if gone:
                self.select(app, api_id)
            else:
                self._guard(
                    f"open {app} / {api_id or ''}".rstrip(" /"), lambda: self.select(app, api_id)
                )

    def _on_tabs_selected_index(self, change: dict[str, object]) -> None:
        index = change["new"]
        if index in self._stale:
            self._stale.discard(index)  # type: ignore[arg-type]
            with self._lock:
                if index == _LOGS_TAB:
                    self.logs.load(self.app)
                elif self._panels[index] is self.deploy:  # type: ignore[index]
                    self.deploy.load(self.app, self.current)
                else:
                    self._panels[index].refresh()  # type: ignore[index, attr-defined]
        elif self._panels[index] is self.deploy:  # type: ignore[index]
            with self._lock:
                self.deploy.show_urls()  # the Test tab's path parameters may have changed
        self.logs.set_active(index == _LOGS_TAB)
        if index != _CONSUMERS_TAB:
            self.consumers.forget_key()  # a new key is shown once, while its tab is shown
