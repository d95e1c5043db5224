"""``DeployPanel``: deploy the application to dev / prod (prod confirmed), undeploy, and
show the definition's endpoint URLs with copy buttons and a ready-made ``curl`` line."""

from __future__ import annotations

import html
import shlex
from collections.abc import Callable, Mapping
from urllib.parse import quote

import ipywidgets as widgets

from ...domain.models import Definition, Stage, endpoint_url
from ...errors import ValidationError
from ...workspace.workspace import Workspace
from .copy import CopyButton
from .feedback import Status

__all__ = ["DeployPanel", "curl_line"]

_STAGE_NAMES = {Stage.DEV: "debug", Stage.PROD: "release"}


def curl_line(definition: Definition, url: str, key: str | None) -> str:
    """A shell command calling ``url`` as ``definition`` expects (key header when needed)."""
    parts = ["curl"]
    if "{" in url:
        parts.append("--globoff")  # an unfilled {param} is not a curl glob
    if definition.method != "GET":
        parts += ["-X", definition.method]
    parts.append(url)
    if definition.requires_auth and key:
        parts += ["-H", f"x-api-key: {key}"]
    if definition.method in ("POST", "PUT"):
        parts += ["-H", "Content-Type: application/json", "-d", "{}"]
    return " ".join(shlex.quote(p) for p in parts)


class DeployPanel(widgets.VBox):
    """Deploy, confirm, undeploy; then the URLs of the current definition."""

    def __init__(
        self,
        workspace: Workspace,
        base_url: Callable[[], str] | None = None,
        on_deployed: Callable[[], None] | None = None,
        path_parameters: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        self.workspace = workspace
        self.status = Status("nk-deploy-status")
        self.base_url = base_url or (lambda: "http://127.0.0.1:8000")
        self.path_parameters = path_parameters or dict
        self.on_deployed = on_deployed
        self.app = ""
        self.definition: Definition | None = None
        self.deploy_dev = widgets.Button(description="Deploy to dev", icon="upload")
        self.deploy_prod = widgets.Button(description="Deploy to prod", icon="upload")
        self.confirm_prod = widgets.Button(
            description="Confirm deploy to prod", button_style="danger", icon="check"
        )
        self.confirm_prod.layout.display = "none"
        self.undeploy_dev = widgets.Button(description="Undeploy dev")
        self.undeploy_prod = widgets.Button(description="Undeploy prod")
        self.urls = widgets.HTML()
        self.url_texts = {s: widgets.Text(layout=widgets.Layout(width="48em")) for s in Stage}
        self.url_copies = {s: CopyButton() for s in Stage}
        self.curl = widgets.Textarea(layout=widgets.Layout(width="100%", height="4em"))
        self.curl_copy = CopyButton()
        for widget, css in (
            (self.deploy_dev, "nk-deploy-dev"),
            (self.deploy_prod, "nk-deploy-prod"),
            (self.confirm_prod, "nk-deploy-prod-confirm"),
            (self.undeploy_dev, "nk-undeploy-dev"),
            (self.undeploy_prod, "nk-undeploy-prod"),
            (self.urls, "nk-urls"),
            (self.curl, "nk-curl"),
        ):
            widget.add_class(css)
        for stage, text in self.url_texts.items():
            text.add_class("nk-url-text")
            text.add_class(f"nk-url-text-{stage}")
        self.deploy_dev.on_click(self._on_deploy_dev_click)
        self.deploy_prod.on_click(self._on_deploy_prod_click)
        self.confirm_prod.on_click(self._on_confirm_prod_click)
        self.undeploy_dev.on_click(self._on_undeploy_dev_click)
        self.undeploy_prod.on_click(self._on_undeploy_prod_click)
        self.links = widgets.VBox(
            [
                self.urls,
                *(widgets.HBox([self.url_texts[s], self.url_copies[s]]) for s in Stage),
                widgets.HTML("<b>curl</b>"),
                widgets.HBox([self.curl, self.curl_copy]),
            ]
        )
        self.links.layout.display = "none"
        super().__init__(
            [
                widgets.HTML("<h4>Deploy</h4>"),
                widgets.HBox([self.deploy_dev, self.deploy_prod, self.confirm_prod, self.status]),
                widgets.HBox([self.undeploy_dev, self.undeploy_prod]),
                self.links,
            ]
        )
        self.add_class("nk-deploy")

    @property
    def buttons(self) -> tuple[widgets.Button, ...]:
        return (
            self.deploy_dev,
            self.deploy_prod,
            self.confirm_prod,
            self.undeploy_dev,
            self.undeploy_prod,
        )

    def refresh(self) -> None:
        self.show_urls()

    def load(self, app: str, definition: Definition | None) -> None:
        self.app = app
        self.definition = definition
        self.confirm_prod.layout.display = "none"
        self.show_urls()

    def _app(self) -> str:
        if not self.app:
            raise ValidationError("choose an application first", field="app")
        return self.app

    def _deploy(self, stage: Stage) -> None:
        deployment = self.workspace.deploy(self._app(), stage)
        self.status.ok(
            f"Deployed {deployment.app} to {stage} ({_STAGE_NAMES[stage]}), deployment "
            f"{deployment.id}; live within a second on every server"
        )
        self.show_urls(stage)
        if self.on_deployed is not None:
            self.on_deployed()

    def _on_deploy_dev_click(self, _button: widgets.Button) -> None:
        with self.status.working(*self.buttons):
            self._deploy(Stage.DEV)

    def _on_deploy_prod_click(self, _button: widgets.Button) -> None:
        with self.status.working(*self.buttons):
            app = self._app()
            self.confirm_prod.layout.display = None
            self.status.ok(f"Deploying {app} to prod replaces what callers get: confirm it")

    def _on_confirm_prod_click(self, _button: widgets.Button) -> None:
        with self.status.working(*self.buttons):
            self.confirm_prod.layout.display = "none"
            self._deploy(Stage.PROD)

    def _undeploy(self, stage: Stage) -> None:
        self.workspace.undeploy(self._app(), stage)
        self.status.ok(f"Undeployed {self.app} from {stage}")
        self.show_urls()
        if self.on_deployed is not None:
            self.on_deployed()

    def _on_undeploy_dev_click(self, _button: widgets.Button) -> None:
        with self.status.working(*self.buttons):
            self._undeploy(Stage.DEV)

    def _on_undeploy_prod_click(self, _button: widgets.Button) -> None:
        with self.status.working(*self.buttons):
            self._undeploy(Stage.PROD)

    # -- URLs --------------------------------------------------------------------------

    def _resource(self, definition: Definition) -> str:
        values = self.path_parameters()
        return "/".join(
            quote(values[s[1:-1]], safe="") if s.startswith("{") and values.get(s[1:-1]) else s
            for s in definition.segments
        )

    def show_urls(self, stage: Stage | None = None) -> None:
        """Show the current definition's URLs; the curl line calls ``stage`` (default: the
        first stage it is deployed to)."""
        d = self.definition
        live = [
            s
            for s in Stage
            if d is not None and self.workspace.deployed_state(d, s) in ("deployed", "changed")
        ]
        if d is None or not live:
            self.links.layout.display = "none"
            return
        keys = self.workspace.keys()
        base = self.base_url()
        urls = {s: endpoint_url(base, s, d.app, self._resource(d)) for s in Stage}
        items = []
        for s in Stage:
            state = self.workspace.deployed_state(d, s)
            url = html.escape(urls[s])
            link = f'<a class="nk-url-{s}" href="{url}" target="_blank">{url}</a>'
            items.append(f"<li>{s} ({_STAGE_NAMES[s]}, {state}): {link}</li>")
            self.url_texts[s].value = urls[s]
            self.url_copies[s].text = urls[s]
        self.urls.value = "<b>Endpoint URLs</b><ul>" + "".join(items) + "</ul>"
        chosen = stage if stage in live else live[0]
        self.curl.value = curl_line(d, urls[chosen], keys[str(chosen)])
        self.curl_copy.text = self.curl.value
        self.links.layout.display = None
