"""``ServerPanel``: the in-kernel server (start / stop), its base URL, and the API keys
(masked unless revealed; rotate per stage)."""

from __future__ import annotations

import html

import ipywidgets as widgets

from ...domain.models import Stage
from ...errors import NotebookKitError
from ...runtime.process.handles import BackgroundServer
from ...workspace.workspace import Workspace
from ..serving import serve
from .feedback import Confirm, Status

__all__ = ["ServerPanel", "mask_key"]

DEFAULT_BASE_URL = "http://127.0.0.1:8000"  # where `notebook-kit serve` listens by default


def mask_key(key: str) -> str:
    """A key as a screen shows it by default: only its last four characters."""
    return "•" * 8 + key[-4:]


class ServerPanel(widgets.VBox):
    """Start and stop ``Workspace.serve`` from the studio; show and rotate the keys."""

    def __init__(self, workspace: Workspace, server: BackgroundServer | None = None) -> None:
        self.workspace = workspace
        self.status = Status("nk-server-status")
        self.keys_status = Status("nk-keys-status")
        self.server = server
        auto = widgets.Layout(width="auto")
        self.port = widgets.IntText(value=0, layout=widgets.Layout(width="8em"))
        self.start = widgets.Button(description="Start server", icon="play", layout=auto)
        self.stop = widgets.Button(description="Stop server", icon="stop", layout=auto)
        self.url = widgets.Text(
            value=DEFAULT_BASE_URL,
            layout=widgets.Layout(width="auto", flex="1 1 20em"),
            tooltip="The base URL the studio's links and 'Send to dev' use",
        )
        self.state = widgets.HTML()
        self.key_views = {s: widgets.HTML() for s in Stage}
        self.rotate_ask = Confirm(self.keys_status, "Confirm rotate", "nk-rotate-ask")
        self.reveal = widgets.ToggleButton(description="Reveal keys", icon="eye", layout=auto)
        self.rotate = {s: widgets.Button(description=f"Rotate {s} key", layout=auto) for s in Stage}
        for widget, css in (
            (self.port, "nk-server-port"),
            (self.start, "nk-server-start"),
            (self.stop, "nk-server-stop"),
            (self.url, "nk-server-url"),
            (self.state, "nk-server-state"),
            (self.reveal, "nk-keys-reveal"),
        ):
            widget.add_class(css)
        for stage in Stage:
            self.key_views[stage].add_class(f"nk-key-{stage}")
            self.rotate[stage].add_class(f"nk-rotate-{stage}")
            self.rotate[stage].on_click(self._on_rotate_click)
        self.start.on_click(self._on_start_click)
        self.stop.on_click(self._on_stop_click)
        self.reveal.observe(self._on_reveal_value, names="value")
        row = {"flex_flow": "row wrap", "align_items": "center"}
        super().__init__(
            [
                widgets.HTML("<h4>Server in this kernel</h4>"),
                self.state,
                widgets.HBox(
                    [widgets.HTML("Port (0: a free one)"), self.port, self.start, self.stop],
                    layout=row,
                ),
                self.status,
                widgets.HBox(
                    [widgets.HTML("Base URL for links and Send to dev"), self.url], layout=row
                ),
                widgets.HTML("<h4>API keys</h4>"),
                *(widgets.HBox([self.key_views[s], self.rotate[s]], layout=row) for s in Stage),
                self.rotate_ask,
                widgets.HBox([self.reveal, self.keys_status], layout=row),
            ]
        )
        self.add_class("nk-server")
        self._show_state()
        self.show_keys()

    def base_url(self) -> str:
        return self.url.value.strip() or DEFAULT_BASE_URL

    def _show_state(self) -> None:
        running = self.server is not None and self.server.running
        self.start.disabled = running
        self.stop.disabled = not running
        if running:
            assert self.server is not None
            self.url.value = self.server.url
            self.port.value = self.server.port  # the real port, also when 0 picked a free one
            self.state.value = (
                f"<b>running</b> on {html.escape(self.server.url)} (port {self.server.port})"
            )
        else:
            self.state.value = "<b>stopped</b>"

    def refresh(self) -> None:
        """Re-read the keys and the server's state (another process may have rotated)."""
        self._show_state()
        self.show_keys()

    def show_keys(self) -> None:
        keys = self.workspace.keys()
        for stage in Stage:
            key = keys[str(stage)]
            shown = key if self.reveal.value else mask_key(key)
            self.key_views[stage].value = f"{stage} key: <code>{html.escape(shown)}</code>"

    def _on_start_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.start, self.stop):
            try:
                self.server = serve(self.workspace, port=self.port.value)
            except OSError as exc:  # the port is taken by another process
                raise NotebookKitError(str(exc)) from None
            self.status.ok(f"Serving on {self.server.url} (port {self.server.port})")
        self._show_state()

    def _on_stop_click(self, _button: widgets.Button) -> None:
        with self.status.working(self.start, self.stop):
            if self.server is not None:
                self.server.stop()
                self.status.ok(f"Stopped the server on {self.server.url}")
        self._show_state()

    def _on_reveal_value(self, change: dict[str, object]) -> None:
        self.reveal.description = "Hide keys" if change["new"] else "Reveal keys"
        self.show_keys()

    def _on_rotate_click(self, button: widgets.Button) -> None:
        stage = next(s for s, b in self.rotate.items() if b is button)
        self.keys_status.clear()
        self.rotate_ask.ask(
            f"Rotate the {stage} key? Callers using the old key are refused from then on.",
            lambda: self._rotate(stage),
            f"Confirm rotate the {stage} key",
        )

    def _rotate(self, stage: Stage) -> None:
        self.workspace.rotate_key(stage)
        self.show_keys()
        self.keys_status.ok(f"Rotated the {stage} key; callers need the new one from now on")
