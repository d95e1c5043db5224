"""Serving from a notebook: a cell that runs again replaces the server it started.

``serve`` runs the server's supervisor in a background thread of the kernel (prototyping:
starts in under a second; the kernel holds the store and the keys as a server's supervisor
does, the workers and actions run sandboxed); ``serve_process`` runs ``notebook-kit serve``
as a child process that dies with the kernel (how callers are served for real, several
workers if wanted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..runtime.process.handles import (
    BackgroundServer,
    ServerProcess,
    replace_server,
    running_servers,
)

if TYPE_CHECKING:
    from ..workspace.workspace import Workspace

__all__ = ["background_servers", "serve", "serve_process"]


def serve(
    workspace: Workspace, port: int = 0, host: str = "127.0.0.1", admin_port: int | None = None
) -> BackgroundServer:
    """Serve ``workspace`` in a background thread of this process; returns the handle
    (``url``, ``stop()``). Calling it again (a re-run cell) first stops the server it
    started before for this workspace and port. ``port=0``: a free port. ``admin_port``:
    the admin listener's (``/live``, ``/ready``, ``/metrics``; 0: a free one,
    ``admin_url``)."""
    server = BackgroundServer(workspace, host, port, admin_port=admin_port)
    return replace_server(server, port)


def serve_process(
    workspace: Workspace,
    port: int = 8000,
    host: str = "127.0.0.1",
    workers: int = 1,
    admin_port: int | None = None,
) -> ServerProcess:
    """Start ``notebook-kit serve`` for ``workspace`` as a child process that dies with this
    one (``admin_port``: its admin listener's). Calling it again first stops the child it
    started for this port."""
    store = workspace.store.url or ""
    server = ServerProcess(workspace.home, host, port, workers, store, admin_port=admin_port)
    return replace_server(server, port)


def background_servers(workspace: Workspace) -> list[BackgroundServer]:
    """The running background servers ``serve`` started for ``workspace``."""
    return [
        s
        for s in running_servers(workspace.home, BackgroundServer)
        if isinstance(s, BackgroundServer)
    ]
