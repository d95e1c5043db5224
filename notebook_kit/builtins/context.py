"""What the built-ins are given: a small context, never the Workspace.

``BuiltinContext`` holds the store (users, action counters, the presign secret), the
workspace directory (file storage, the default environment database) and a way to read
the settings. The notebook's workspace reads them fresh from the store; a server worker
hands in the snapshot it took at its last reload, so a built-in call does no store query
for settings on the request path.

``ActionEnvironment`` is what every action sees besides ``req``, ``res`` and ``const``:
``fn``, ``db`` and ``http``, built once per context.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..store.store import Store
from .db import open_database

__all__ = ["ActionEnvironment", "BuiltinContext"]

Settings = Callable[[], Mapping[str, Any]]


@dataclass(frozen=True)
class BuiltinContext:
    """The store, the workspace directory and the settings in force (a callable: the
    workspace reads the store, a server its reload snapshot)."""

    store: Store
    home: Path
    settings: Settings

    def setting(self, name: str) -> Any:
        return self.settings()[name]

    def notify(self, to: str, subject: str, text: str) -> bool:
        """Mail ``text`` to ``to`` when SMTP is configured; False when it is not."""
        from .mail import SmtpConfig, send_mail

        config = SmtpConfig.from_settings(self.settings())
        if not config.configured:
            return False
        send_mail({"to": to, "subject": subject, "text": text}, config)
        return True


class ActionEnvironment:
    """``fn``, ``db`` and ``http`` over one context, made on first use (so a workspace that
    never runs an action never loads the HTTP client). ``db`` follows the
    ``database_url`` setting: it is reopened when the setting changes."""

    def __init__(self, context: BuiltinContext) -> None:
        self.context = context
        self._names: dict[str, Any] = {}
        self._database_url: Any = object()  # nothing opened yet
        self._database: Any = None

    @property
    def database(self) -> Any:
        """``db`` for the ``database_url`` in force."""
        url = self.context.setting("database_url")
        if url != self._database_url:
            self._database = open_database(url, self.context.home / "environment.sqlite3")
            self._database_url = url
        return self._database

    def names(self) -> dict[str, Any]:
        """The names actions compile with."""
        if not self._names:
            from .functions import Functions
            from .http import HttpClient

            context = self.context
            self._names = {
                "fn": Functions(context),
                "http": HttpClient(lambda: context.setting("http_timeout")),
            }
        return {**self._names, "db": self.database}
