"""``notebook_kit.Workspace``: the core ``Workspace`` and what a notebook adds to it.

A notebook serves from a background thread (``ws.serve()``), starts a server process
(``ws.serve_process()``) and looks at the workspace as pandas frames
(``ws.definitions_frame()`` ...). Those belong to this face: the core workspace knows
nothing of them, and this class extends it one way. Each method hands the core's data to
the module that owns the view (``serving``, ``frames``), imported on first use, so
``import notebook_kit`` loads neither Sanic nor pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..workspace.workspace import Workspace as CoreWorkspace

if TYPE_CHECKING:
    import pandas as pd

    from ..runtime.process.handles import BackgroundServer, ServerProcess

__all__ = ["Workspace"]


class Workspace(CoreWorkspace):
    """A notebook_kit workspace (see ``notebook_kit.workspace.workspace.Workspace`` for
    every rule it holds), with the notebook's conveniences."""

    def serve(
        self, port: int = 0, host: str = "127.0.0.1", admin_port: int | None = None
    ) -> BackgroundServer:
        """Serve from a background thread of this process (``notebook_kit.serve``)."""
        from .serving import serve

        return serve(self, port=port, host=host, admin_port=admin_port)

    def serve_process(
        self,
        port: int = 8000,
        host: str = "127.0.0.1",
        workers: int = 1,
        admin_port: int | None = None,
    ) -> ServerProcess:
        """Serve from a child process (``notebook_kit.serve_process``)."""
        from .serving import serve_process

        return serve_process(self, port=port, host=host, workers=workers, admin_port=admin_port)

    def definitions_frame(self, app: str | None = None, label: str | None = None) -> pd.DataFrame:
        """``listing()`` as a DataFrame (as are the other ``*_frame`` methods)."""
        return _frames().definitions_frame(self.listing(app, label))

    def deployments_frame(self, app: str | None = None) -> pd.DataFrame:
        """``deployments(app)`` as a DataFrame: id, app, stage, deployed_at, host, active."""
        return _frames().deployments_frame(self.deployments(app))

    def resources_frame(self) -> pd.DataFrame:
        """``resources()`` as a DataFrame: one row per stage and application plus the root."""
        return _frames().resources_frame(self.resources())

    def users_frame(self) -> pd.DataFrame:
        """The user directory as a DataFrame, one row per user (never a password)."""
        return _frames().users_frame(self.users().all_users())

    def groups_frame(self) -> pd.DataFrame:
        """The groups as a DataFrame, one row per group with its number of users."""
        return _frames().groups_frame(self.users().all_groups())

    def request_log_frame(self, limit: int | None = None) -> pd.DataFrame:
        """The newest ``limit`` (default: all kept) requests any server answered."""
        return _frames().request_log_frame(self.request_log(limit))

    def usage(self, consumer: str | None = None) -> pd.DataFrame:
        """``consumers.usage()`` as a DataFrame: consumer, application, stage, calls, 4xx,
        5xx, quota used and left."""
        return _frames().usage_frame(self.consumers.usage(consumer))

    def consumers_frame(self) -> pd.DataFrame:
        """``consumers.list()`` as a DataFrame: one row per consumer (keys by prefix only)."""
        return _frames().consumers_frame([c.to_dict() for c in self.consumers.list()])

    def schedule_runs_frame(
        self, app: str | None = None, name: str | None = None, limit: int | None = 100
    ) -> pd.DataFrame:
        """``schedule_runs()`` as a DataFrame: the run log of schedules, newest first."""
        return _frames().schedule_runs_frame(self.schedule_runs(app, name, limit=limit))


def _frames() -> Any:
    """The notebook face's pandas frames, imported (with pandas) on first use."""
    from . import frames

    return frames
