"""The workspace store: the one source of truth (SQLite by default). Owns all of its SQL."""
