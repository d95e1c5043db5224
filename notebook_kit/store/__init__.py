"""The workspace store: the one source of truth (SQLite by default). Owns all of its SQL.

``Store`` and ``new_api_key`` load on first use: the environment database's helpers
(``store.connection``) are imported by sandboxed processes, which never open the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import Store, new_api_key

__all__ = ["Store", "new_api_key"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import store

        return getattr(store, name)
    raise AttributeError(f"module 'notebook_kit.store' has no attribute {name!r}")
