"""``DeployPanel``: the Deploy tab of one application.

Deploy to dev or prod (prod confirmed), with an optional description, and the stage,
deployment ID and time next to the buttons; what each stage serves against what is saved
(the core's ``Workspace.diff``); the deployments of each stage with the live one marked and
a Rollback button on the others; roll back to any kept deployment and undeploy (only a
stage that serves the application), both confirmed; then the current definition's endpoint
URLs and a curl line (the key masked unless revealed, path parameters from the Test tab).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping

import ipywidgets as widgets

from ...domain.models import Definition, Deployment, Stage, endpoint_url
from ...errors import NotFoundError, ValidationError
from ...workspace.workspace import Workspace
from .canary import CanaryPanel
from .clickable import ClickableHtml
from .copy import CopyButton
from .curl import curl_line, fill_resource
from .diff_view import STAGE_NAMES, deployments_html, diff_html, local_time
from .feedback import Confirm, Status
from .history import wrapping

__all__ = ["DeployPanel", "curl_line"]


def _button(description: str, css: str, **extra: str) -> widgets.Button:
    button = widgets.Button(description=description, layout=widgets.Layout(width="auto"), **extra)
    button.add_class(css)
    return button


class DeployPanel(widgets.VBox):
    """The Deploy tab; ``on_deployed()`` runs after anything changed what a stage serves."""

    def __init__(
        self,
        workspace: Workspace,
        base_url: Callable[[], str],
        on_deployed: Callable[[], None] | None = None,
        path_parameters: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        """``path_parameters()``: the values the curl line fills in (the Test tab's)."""
        self.workspace = workspace
        self.base_url = base_url
        self.on_deployed = on_deployed
        self.path_parameters = path_parameters or dict
        self.app = ""
        self.definition: Definition | None = None
        self.title = widgets.HTML("<h4>Deploy</h4>")
        # The two deploys stand out from the undeploys (Save's blue; prod in warning).
        self.deploy_dev = _button(
            "Deploy to dev", "nk-deploy-dev", icon="upload", button_style="primary"
        )
        self.deploy_prod = _button(
            "Deploy to prod", "nk-deploy-prod", icon="upload", button_style="warning"
        )
        self.undeploy_dev = _button("Undeploy dev", "nk-undeploy-dev")
        self.undeploy_prod = _button("Undeploy prod", "nk-undeploy-prod")
        self.description = widgets.Text(
            placeholder="what this deploy is for (optional)",
            layout=widgets.Layout(flex="1 1 16em", width="auto", min_width="0", max_width="40em"),
        )
        self.description.add_class("nk-deploy-description")
        self.status = Status("nk-deploy-status")
        self.prod_ask = Confirm(self.status, "Confirm deploy to prod", "nk-deploy-prod-ask")
        self.undeploy_ask = Confirm(self.status, "Confirm undeploy", "nk-undeploy-ask")
        self.diff = widgets.HTML()
        self.diff.add_class("nk-diff")
        self.deployments = ClickableHtml()  # the history, a Rollback button per row
        self.deployments.add_class("nk-deployments")
        self.deployments.on_event("rollback", self._on_row_rollback)
        self.rollback_stage = widgets.Dropdown(
            options=[str(s) for s in Stage],
            value="dev",
            description="Roll back",
            style={"description_width": "initial"},
        )
        self.rollback_target = widgets.Dropdown(
            options=[], description="to", style={"description_width": "initial"}
        )
        self.rollback = _button("Roll back", "nk-rollback", icon="undo")
        self.rollback_status = Status("nk-rollback-status")
        self.rollback_ask = Confirm(self.rollback_status, "Confirm rollback", "nk-rollback-ask")
        self.rollback_stage.add_class("nk-rollback-stage")
        self.rollback_target.add_class("nk-rollback-target")
        self.urls = widgets.HTML()
        self.urls.add_class("nk-urls")
        shrinks = {"flex": "1 1 auto", "width": "auto", "min_width": "0"}  # narrow panes
        self.url_texts = {
            s: widgets.Text(layout=widgets.Layout(max_width="40em", **shrinks)) for s in Stage
        }
        self.url_copies = {s: CopyButton() for s in Stage}
        self.curl = widgets.Textarea(layout=widgets.Layout(height="4em", **shrinks))
        self.curl.add_class("nk-curl")
        self.curl_reveal = widgets.ToggleButton(
            description="Reveal key", icon="eye", layout=widgets.Layout(width="auto"), value=False
        )
        self.curl_reveal.add_class("nk-curl-reveal")
        self.curl_reveal.observe(self._on_curl_reveal_value, names="value")
        self.curl_copy = CopyButton()
        for fixed in (self.curl_reveal, self.curl_copy, *self.url_copies.values()):
            fixed.layout.flex, fixed.layout.width = "0 0 auto", "auto"  # the texts take the rest
        for stage, text in self.url_texts.items():
            text.add_class("nk-url-text")
            text.add_class(f"nk-url-text-{stage}")
        self.deploy_dev.on_click(self._on_deploy_dev_click)
        self.deploy_prod.on_click(self._on_deploy_prod_click)
        self.undeploy_dev.on_click(self._on_undeploy_click)
        self.undeploy_prod.on_click(self._on_undeploy_click)
        self.rollback.on_click(self._on_rollback_click)
        self.rollback_stage.observe(self._on_rollback_stage_value, names="value")
        self.canary = CanaryPanel(workspace, self._changed)  # the split on prod (canary.py)
        self.links = widgets.VBox(
            [
                self.urls,
                *(widgets.HBox([self.url_texts[s], self.url_copies[s]]) for s in Stage),
                widgets.HTML("<b>curl</b> <i>(path parameters from the Test tab)</i>"),
                wrapping(self.curl, self.curl_reveal, self.curl_copy),
            ]
        )
        self.links.layout.display = "none"
        super().__init__(
            [
                self.title,
                wrapping(self.deploy_dev, self.deploy_prod, self.undeploy_dev, self.undeploy_prod),
                wrapping(widgets.HTML("Description"), self.description),
                self.prod_ask,
                self.undeploy_ask,
                self.status,
                widgets.HTML("<b>Saved against live</b>"),
                self.diff,
                widgets.HTML("<b>Deployments</b>"),
                self.deployments,
                wrapping(self.rollback_stage, self.rollback_target, self.rollback),
                self.rollback_ask,
                self.rollback_status,
                self.canary,
                self.links,
            ]
        )
        self.add_class("nk-deploy")

    @property
    def buttons(self) -> tuple[widgets.Button, ...]:
        return (self.deploy_dev, self.deploy_prod, self.undeploy_dev, self.undeploy_prod)

    # -- what is shown -----------------------------------------------------------------

    def load(self, app: str, definition: Definition | None, refresh: bool = True) -> None:
        """Work on ``app``; the URLs are those of ``definition`` (None: no URLs).
        ``refresh=False`` only remembers them (the tab is hidden; the studio calls
        ``load`` again when it is shown)."""
        if app != self.app:
            for ask in (self.prod_ask, self.undeploy_ask, self.rollback_ask):
                ask.close_question()
            self.status.clear()
            self.rollback_status.clear()
        self.app = app
        self.definition = definition
        self.title.value = f"<h4>Deploy {html.escape(app)}</h4>" if app else "<h4>Deploy</h4>"
        if refresh:
            self.refresh()

    def refresh(self) -> None:
        """Read deployments, what is live and what is saved again."""
        history = self._history()
        self.deployments.value = (
            deployments_html(history) if self.app else "<i>Choose an application.</i>"
        )
        try:
            diffs = [self.workspace.diff(self.app, s) for s in Stage] if self.app else []
        except NotFoundError:
            diffs = []  # an application ID typed but not created yet
        self.diff.value = diff_html(diffs) if diffs else "<i>Nothing saved yet.</i>"
        self._show_targets(history)
        self.canary.load(self.app)
        self._show_undeploys(history)
        self.show_urls()

    def _show_undeploys(self, history: list[Deployment]) -> None:
        """Undeploy only where the application is served: never-deployed or undeployed
        stages have nothing to take down."""
        live = {d.stage for d in history if d.active}
        self.undeploy_dev.disabled = Stage.DEV not in live
        self.undeploy_prod.disabled = Stage.PROD not in live

    def _history(self) -> list[Deployment]:
        return self.workspace.deployments(self.app) if self.app else []

    def _show_targets(self, history: list[Deployment]) -> None:
        """The deployments of the chosen stage a rollback can go to (all but the live one),
        newest first; the one chosen stays, else the one before the live one is chosen."""
        stage = Stage.parse(self.rollback_stage.value)
        rows = sorted((d for d in history if d.stage == stage), key=lambda d: -d.id)
        live = next((d.id for d in rows if d.active), None)
        options = [
            (f"{d.id} · {local_time(d.deployed_at)} · {d.host}", d.id) for d in rows if d.id != live
        ]
        earlier = [d.id for d in rows if live is not None and d.id < live and d.id != live]
        chosen = self.rollback_target.value  # kept across a refresh while still offered
        self.rollback_target.options = options
        if chosen not in [value for _, value in options]:
            chosen = earlier[0] if earlier else (options[0][1] if options else None)
        self.rollback_target.value = chosen
        self.rollback_target.disabled = not options  # nothing to go back to (yet)

    def _app(self) -> str:
        if not self.app:
            raise ValidationError("choose an application first", field="app")
        return self.app

    # -- deploy, undeploy, rollback ----------------------------------------------------

    def _changed(self) -> None:
        self.rollback_target.options = ()  # what is live moved: choose the default again
        self.refresh()
        if self.on_deployed is not None:
            self.on_deployed()

    def _deploy(self, stage: Stage) -> None:
        deployment = self.workspace.deploy(self._app(), stage, description=self.description.value)
        self.description.value = ""  # said of this deployment; the next one says its own
        self._changed()
        self.show_urls(stage)
        self.status.ok(
            f"Deployed {deployment.app} to {stage} ({STAGE_NAMES[stage]}): deployment "
            f"{deployment.id} at {local_time(deployment.deployed_at)}, live within a second "
            "on every server"
        )

    def _on_deploy_dev_click(self, _button: widgets.Button) -> None:
        with self.status.working(*self.buttons):
            self._deploy(Stage.DEV)
        self._show_undeploys(self._history())  # ``working`` put back the states before

    def _on_deploy_prod_click(self, _button: widgets.Button) -> None:
        with self.status.working(*self.buttons):
            app = self._app()
            self.status.info("Deploying to prod changes what callers get: confirm or cancel")
            self.prod_ask.ask(f"Deploy the saved {app} to prod?", lambda: self._deploy(Stage.PROD))
        self._show_undeploys(self._history())

    def _undeploy(self, stage: Stage) -> None:
        self.workspace.undeploy(self._app(), stage)
        self._changed()
        self.status.ok(f"Undeployed {self.app} from {stage}: its URLs answer 404")

    def _on_undeploy_click(self, button: widgets.Button) -> None:
        stage = Stage.DEV if button is self.undeploy_dev else Stage.PROD
        with self.status.working(*self.buttons):
            app = self._app()
            self.undeploy_ask.ask(
                f"Take {app} off {stage}? Its callers get 404.",
                lambda: self._undeploy(stage),
                confirm_label=f"Confirm undeploy {stage}",
            )
        self._show_undeploys(self._history())

    def _rollback(self, stage: Stage, to: int) -> None:
        deployment = self.workspace.rollback(self._app(), stage, to=to)
        self._changed()
        self.rollback_status.ok(
            f"Rolled {deployment.app} back on {stage}: deployment {deployment.id} "
            f"(of {local_time(deployment.deployed_at)}) is live"
        )

    def _on_row_rollback(self, deployment_id: str) -> None:
        """A row's Rollback button: ask, then serve that deployment on its stage again."""
        with self.rollback_status.working(self.rollback):
            app = self._app()
            found = next((d for d in self._history() if str(d.id) == deployment_id), None)
            if found is None:
                raise ValidationError(f"no deployment {deployment_id} of {app} (pruned?)")
            self.rollback_ask.ask(
                f"Serve deployment {found.id} of {app} "
                f"({local_time(found.deployed_at)}) on {found.stage} again?",
                lambda: self._rollback(found.stage, found.id),
                confirm_label=f"Confirm rollback to {found.id}",
            )

    def _on_rollback_click(self, _button: widgets.Button) -> None:
        with self.rollback_status.working(self.rollback):
            app = self._app()
            stage = Stage.parse(self.rollback_stage.value)
            to = self.rollback_target.value
            if to is None:
                raise ValidationError(f"{app} has no other deployment on {stage} to go back to")
            self.rollback_ask.ask(
                f"Serve deployment {to} of {app} on {stage}?",
                lambda: self._rollback(stage, to),
                confirm_label=f"Confirm rollback to {to}",
            )

    def _on_rollback_stage_value(self, _change: dict[str, object]) -> None:
        self.rollback_ask.close_question()
        self._show_targets(self._history())

    # -- URLs --------------------------------------------------------------------------

    def show_urls(self, stage: Stage | None = None) -> None:
        """Show the current definition's URLs; the curl line calls ``stage`` (default: the
        first stage it is live on)."""
        d = self.definition
        states = {s: self.workspace.deployed_state(d, s) for s in Stage} if d else {}
        live = [s for s, state in states.items() if state in ("deployed", "changed")]
        if d is None or not live:
            self.links.layout.display = "none"
            return
        keys = self.workspace.keys()
        base = self.base_url()
        urls = {s: endpoint_url(base, s, d.app, d.resource) for s in Stage}
        items = []
        for s in Stage:
            url = html.escape(urls[s])
            link = f'<a class="nk-url-{s}" href="{url}" target="_blank">{url}</a>'
            items.append(f"<li>{s} ({STAGE_NAMES[s]}, {states[s]}): {link}</li>")
            self.url_texts[s].value = urls[s]
            self.url_copies[s].text = urls[s]
        self.urls.value = "<b>Endpoint URLs</b><ul>" + "".join(items) + "</ul>"
        chosen = stage if stage in live else live[0]
        self._curl_stage = chosen
        filled = endpoint_url(base, chosen, d.app, fill_resource(d, self.path_parameters()))
        key = keys[str(chosen)] if d.requires_auth else None
        self.curl_reveal.layout.display = None if key else "none"  # nothing to reveal
        self.curl.value = curl_line(d, filled, key, reveal=self.curl_reveal.value)
        self.curl_copy.text = curl_line(d, filled, key, reveal=True)  # it runs as copied
        self.links.layout.display = None

    def _on_curl_reveal_value(self, change: dict[str, object]) -> None:
        self.curl_reveal.description = "Hide key" if change["new"] else "Reveal key"
        self.show_urls(getattr(self, "_curl_stage", None))
