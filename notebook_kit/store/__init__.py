"""The workspace store: the one source of truth (SQLite by default). Owns all of its SQL."""

from .store import Store, new_api_key

__all__ = ["Store", "new_api_key"]
