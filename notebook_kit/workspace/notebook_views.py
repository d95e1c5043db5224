"""The notebook's conveniences on ``Workspace``: ``ws.serve()``, ``ws.definitions_frame()``...

Each is a one-line delegation to the notebook face that owns it (``notebook/serving.py``,
``notebook/frames.py``), imported on first use, so importing the workspace loads neither
Sanic nor pandas and the import points one way. They hold no rule: the data comes from
the ``Workspace`` methods they name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from ..builtins.users import UserDirectory
    from ..domain.models import Deployment
    from ..runtime.server import BackgroundServer, ServerProcess

__all__ = ["NotebookViews"]


class NotebookViews:
    """The ``Workspace`` methods that hand its data to the notebook face."""

    # What the delegations read, provided by ``Workspace``.
    if TYPE_CHECKING:

        def listing(
            self, app: str | None = None, label: str | None = None
        ) -> list[dict[str, Any]]: ...
        def deployments(self, app: str | None = None) -> list[Deployment]: ...
        def resources(self) -> dict[str, dict[str, Any]]: ...
        def users(self) -> UserDirectory: ...
        def request_log(self, limit: int | None = None) -> list[dict[str, Any]]: ...

    def serve(self, port: int = 0, host: str = "127.0.0.1") -> BackgroundServer:
        """Serve in a background thread of this process (``notebook_kit.serve``)."""
        from ..notebook.serving import serve

        return serve(self, port=port, host=host)  # type: ignore[arg-type]

    def serve_process(
        self, port: int = 8000, host: str = "127.0.0.1", workers: int = 1
    ) -> ServerProcess:
        """Serve from a child process (``notebook_kit.serve_process``)."""
        from ..notebook.serving import serve_process

        return serve_process(self, port=port, host=host, workers=workers)  # type: ignore[arg-type]

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


def _frames() -> Any:
    """The notebook face's pandas frames, imported (with pandas) on first use."""
    from ..notebook import frames

    return frames
