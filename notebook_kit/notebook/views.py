"""The notebook conveniences of ``Workspace``: pandas views, the user directory, serving.

Each is a composition of the workspace's own public methods, kept apart from the rules
so the facade stays readable; ``Workspace`` inherits them, so they are called as
``ws.definitions_frame()``. pandas and the server are imported on first use, so the core
starts without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..builtins.functions import Functions

if TYPE_CHECKING:
    import pandas as pd

    from ..builtins.users import UserDirectory
    from ..runtime.server import BackgroundServer
    from ..runtime.server_process import ServerProcess
    from ..workspace.workspace import Workspace

__all__ = ["NotebookViews"]


class NotebookViews:
    """Mixed into ``Workspace``: every method's ``self`` is the workspace."""

    @property
    def _ws(self) -> Workspace:
        return cast("Workspace", self)

    # -- pandas views ------------------------------------------------------------------

    def definitions_frame(self, app: str | None = None, label: str | None = None) -> pd.DataFrame:
        from .frames import definitions_frame

        return definitions_frame(self._ws.listing(app, label))

    def deployments_frame(self, app: str | None = None) -> pd.DataFrame:
        from .frames import deployments_frame

        return deployments_frame(self._ws.deployments(app))

    def resources_frame(self) -> pd.DataFrame:
        from .frames import resources_frame

        return resources_frame(self._ws.resources())

    def users(self) -> UserDirectory:
        """The execution environment's user directory (what ``fn.getUsers`` and friends
        use), for managing users from a notebook; it mails reset tokens as ``fn`` does."""
        return Functions(self._ws)._users("users")

    def users_frame(self) -> pd.DataFrame:
        from .frames import users_frame

        return users_frame(self._ws.users().all_users())

    def groups_frame(self) -> pd.DataFrame:
        from .frames import groups_frame

        return groups_frame(self._ws.users().all_groups())

    def request_log_frame(self, limit: int | None = None) -> pd.DataFrame:
        """The newest ``limit`` (default: all kept) requests any server of this workspace
        answered: time, stage, method, path, status, duration in ms."""
        from .frames import request_log_frame

        keep = self._ws.setting("request_log_size")
        return request_log_frame(
            self._ws.store.request_log(keep if limit is None else min(limit, keep))
        )

    # -- serving from a notebook -------------------------------------------------------

    def serve(self, port: int = 0, host: str = "127.0.0.1") -> BackgroundServer:
        """Serve this workspace in a background thread of this process; returns the
        handle (``url``, ``stop()``). Calling it again (a re-run cell) first stops the
        server it started before for this workspace and port. ``port=0``: a free port."""
        from ..runtime.server import serve_in_background  # server sits above workspace

        return serve_in_background(self._ws, host=host, port=port)

    def serve_process(
        self, port: int = 8000, host: str = "127.0.0.1", workers: int = 1
    ) -> ServerProcess:
        """Start ``notebook-kit serve`` for this workspace as a child process (how callers
        are served for real, several workers if wanted); it dies with this process.
        Calling it again first stops the child it started for this port."""
        from ..runtime.server_process import start_server_process

        return start_server_process(self._ws.home, host=host, port=port, workers=workers)
