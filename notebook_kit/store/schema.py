"""The workspace store's tables, and bringing an older store file up to them.

``PRAGMA user_version`` counts the migrations a file has had; opening a store applies the
rest, in one transaction with the rest of the opening.
"""

from __future__ import annotations

import sqlite3

from .dialect import Additive, Migration, apply_migrations
from .snapshots import content_address_deployments

__all__ = ["MIGRATIONS", "migrate"]


# Each entry moves the schema from version i to i+1: SQL statements, or a function of the
# connection for a change SQL cannot make. Append; never edit a shipped one.
MIGRATIONS: tuple[Migration, ...] = (
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO meta (key, value) VALUES ('generation', '0');
    CREATE TABLE applications (
        id TEXT PRIMARY KEY, type TEXT NOT NULL, label TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
    CREATE TABLE definitions (
        app_id TEXT NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
        api_id TEXT NOT NULL, label TEXT NOT NULL, method TEXT NOT NULL,
        resource TEXT NOT NULL, content_type TEXT, requires_auth INTEGER NOT NULL,
        action TEXT NOT NULL, functions TEXT NOT NULL, constants TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        PRIMARY KEY (app_id, api_id));
    CREATE TABLE deployments (
        id INTEGER PRIMARY KEY AUTOINCREMENT, app_id TEXT NOT NULL, stage TEXT NOT NULL,
        deployed_at TEXT NOT NULL, host TEXT NOT NULL, snapshot TEXT NOT NULL);
    CREATE INDEX deployments_by_app ON deployments (app_id, stage, id);
    CREATE TABLE live (
        stage TEXT NOT NULL, app_id TEXT NOT NULL,
        deployment_id INTEGER NOT NULL REFERENCES deployments (id),
        PRIMARY KEY (stage, app_id));
    CREATE TABLE api_keys (stage TEXT PRIMARY KEY, key TEXT NOT NULL, created_at TEXT NOT NULL);
    CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    """
    CREATE TABLE request_log (
        id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, stage TEXT NOT NULL,
        method TEXT NOT NULL, path TEXT NOT NULL, status INTEGER NOT NULL,
        duration_ms REAL NOT NULL);
    """,
    """
    CREATE TABLE users (
        email_key TEXT PRIMARY KEY, email TEXT NOT NULL, name TEXT NOT NULL,
        name_key TEXT NOT NULL, password_hash TEXT, attributes TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
    CREATE TABLE user_groups (
        name TEXT PRIMARY KEY, description TEXT NOT NULL, created_at TEXT NOT NULL);
    CREATE TABLE group_members (
        group_name TEXT NOT NULL REFERENCES user_groups (name) ON DELETE CASCADE,
        email_key TEXT NOT NULL
            REFERENCES users (email_key) ON DELETE CASCADE ON UPDATE CASCADE,
        PRIMARY KEY (group_name, email_key));
    CREATE INDEX group_members_by_user ON group_members (email_key);
    CREATE TABLE password_resets (
        token_hash TEXT PRIMARY KEY,
        email_key TEXT NOT NULL
            REFERENCES users (email_key) ON DELETE CASCADE ON UPDATE CASCADE,
        expires_at REAL NOT NULL, created_at TEXT NOT NULL);
    """,
    """
    CREATE TABLE action_stats (
        stage TEXT NOT NULL, app_id TEXT NOT NULL, api_id TEXT NOT NULL,
        requests INTEGER NOT NULL, errors INTEGER NOT NULL, last_status INTEGER,
        last_request_at TEXT, last_error TEXT, last_error_at TEXT,
        PRIMARY KEY (stage, app_id, api_id));
    """,
    # The request log is written in batches, one row a flush (the entries pickled: 0.1 µs
    # an entry, against 0.9 for JSON and several for one INSERT each), so a busy server
    # spends well under a microsecond a request on it. rows holds a BLOB (bytea later).
    """
    DROP TABLE request_log;
    CREATE TABLE request_log_batches (
        id INTEGER PRIMARY KEY AUTOINCREMENT, entries INTEGER NOT NULL, rows TEXT NOT NULL);
    """,
    # Each batch carries ``upto``, the running count of entries logged up to and including
    # it, so trimming to the newest N is an index range (upto <= total - N) instead of a
    # window sum over every kept batch: a flush costs the same whatever the log's size.
    """
    ALTER TABLE request_log_batches ADD COLUMN upto INTEGER NOT NULL DEFAULT 0;
    UPDATE request_log_batches SET upto = (
        SELECT SUM(older.entries) FROM request_log_batches AS older
        WHERE older.id <= request_log_batches.id);
    CREATE INDEX request_log_batches_by_upto ON request_log_batches (upto);
    """,
    # Issue 11: a definition's own time limit (NULL: the action_timeout setting), and how
    # many calls of an action ran past theirs.
    """
    ALTER TABLE definitions ADD COLUMN timeout REAL;
    ALTER TABLE action_stats ADD COLUMN timeouts INTEGER NOT NULL DEFAULT 0;
    """,
    # Issue 10: content-addressed history (see snapshots.py). ``deployments.snapshot`` keeps
    # the application document; ``versions`` the ranges of the version numbers it serves.
    """
    CREATE TABLE definition_versions (
        id INTEGER PRIMARY KEY AUTOINCREMENT, hash TEXT NOT NULL UNIQUE, body TEXT NOT NULL);
    ALTER TABLE deployments ADD COLUMN versions TEXT NOT NULL DEFAULT '';
    """,
    content_address_deployments,
    # Examples of definitions (domain/examples.py), and what each deployment's check of
    # them found: ``forced`` (deployed with force), ``checks`` (the report's JSON, '' when
    # the application had no examples or the deployment predates them).
    """
    CREATE TABLE examples (
        app_id TEXT NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
        api_id TEXT NOT NULL, name TEXT NOT NULL,
        request TEXT NOT NULL, expect TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        PRIMARY KEY (app_id, api_id, name));
    ALTER TABLE deployments ADD COLUMN forced INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE deployments ADD COLUMN checks TEXT NOT NULL DEFAULT '';
    """,
    # Canary releases (see docs/canary.md): a stage's live pointer may carry a second
    # deployment serving ``canary_percent`` % of the calls, since ``canary_started_at``;
    # ``canary_log_from`` is the request log's running count when it started;
    # ``canary_note`` says how the last one ended when it was rolled back automatically.
    """
    ALTER TABLE live ADD COLUMN canary_id INTEGER REFERENCES deployments (id);
    ALTER TABLE live ADD COLUMN canary_percent INTEGER;
    ALTER TABLE live ADD COLUMN canary_started_at TEXT;
    ALTER TABLE live ADD COLUMN canary_rollback_above REAL;
    ALTER TABLE live ADD COLUMN canary_log_from INTEGER;
    ALTER TABLE live ADD COLUMN canary_note TEXT;
    """,
    # A deployment's description: what the person deploying said it was for ('' if
    # nothing). Its own column, apart from any other record kept about a deploy.
    """
    ALTER TABLE deployments ADD COLUMN description TEXT NOT NULL DEFAULT '';
    """,
    # Issue 25: consumers (docs/consumers.md): named callers with their own keys (stored as
    # SHA-256 digests, ``prefix`` the first characters shown to tell them apart), limits, the
    # quota and rate units taken in each period or tick, and calls counted per UTC day.
    """
    CREATE TABLE consumers (
        name TEXT PRIMARY KEY, apps TEXT NOT NULL, stages TEXT NOT NULL,
        rate_count INTEGER, rate_seconds INTEGER, burst INTEGER,
        quota_count INTEGER, quota_period TEXT,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
    CREATE TABLE consumer_keys (
        digest TEXT PRIMARY KEY,
        consumer TEXT NOT NULL REFERENCES consumers (name) ON DELETE CASCADE,
        prefix TEXT NOT NULL, created_at TEXT NOT NULL, expires_at REAL,
        last_used_at TEXT);
    CREATE INDEX consumer_keys_by_consumer ON consumer_keys (consumer);
    CREATE TABLE consumer_quota (
        consumer TEXT NOT NULL REFERENCES consumers (name) ON DELETE CASCADE,
        period TEXT NOT NULL, used INTEGER NOT NULL, PRIMARY KEY (consumer, period));
    CREATE TABLE consumer_ticks (
        consumer TEXT NOT NULL REFERENCES consumers (name) ON DELETE CASCADE,
        tick INTEGER NOT NULL, used INTEGER NOT NULL, PRIMARY KEY (consumer, tick));
    CREATE TABLE consumer_usage (
        consumer TEXT NOT NULL, app_id TEXT NOT NULL, stage TEXT NOT NULL, day TEXT NOT NULL,
        calls INTEGER NOT NULL, client_errors INTEGER NOT NULL, server_errors INTEGER NOT NULL,
        PRIMARY KEY (consumer, app_id, stage, day));
    """,
    # Issue 25: secrets (docs/secrets.md): each set of a secret is a new immutable version
    # (``value``: the AES-GCM ciphertext, base64; NULL for a delete), encrypted with the
    # key ``key_id`` names (never the key itself); ``deployments.secrets`` pins the versions
    # a deployment serves.
    """
    CREATE TABLE secret_versions (
        id INTEGER PRIMARY KEY AUTOINCREMENT, app_id TEXT NOT NULL, stage TEXT NOT NULL,
        name TEXT NOT NULL, value TEXT, key_id TEXT NOT NULL, set_at TEXT NOT NULL);
    CREATE INDEX secret_versions_by_name ON secret_versions (app_id, stage, name, id);
    ALTER TABLE deployments ADD COLUMN secrets TEXT NOT NULL DEFAULT '';
    """,
    # Issue 26: a definition's contract (domain/contracts.py) as JSON; NULL: none declared.
    """
    ALTER TABLE definitions ADD COLUMN contract TEXT;
    """,
    # Issue 27: schedules (docs/schedules.md; store/schedules.py): saved schedules, their
    # pauses per stage, and the run log, whose UNIQUE tick row is the lease of a run.
    # Additive: a node that predates schedules serves the store (it runs none of them).
    Additive(
        """
    CREATE TABLE schedules (
        app_id TEXT NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
        name TEXT NOT NULL, definition TEXT NOT NULL, cron TEXT NOT NULL,
        timezone TEXT NOT NULL, overlap TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        PRIMARY KEY (app_id, name));
    CREATE TABLE schedule_states (
        stage TEXT NOT NULL, app_id TEXT NOT NULL, name TEXT NOT NULL,
        paused INTEGER NOT NULL, changed_at TEXT NOT NULL,
        PRIMARY KEY (stage, app_id, name));
    CREATE TABLE schedule_runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT, stage TEXT NOT NULL, app_id TEXT NOT NULL,
        schedule TEXT NOT NULL, tick TEXT NOT NULL, manual INTEGER NOT NULL,
        node TEXT NOT NULL, status TEXT NOT NULL, claimed_at TEXT NOT NULL,
        started_at TEXT, finished_at TEXT, duration_ms REAL, error TEXT,
        lease_until REAL NOT NULL,
        UNIQUE (stage, app_id, schedule, tick));
    CREATE INDEX schedule_runs_open ON schedule_runs (status, lease_until);
    """
    ),
)


def migrate(conn: sqlite3.Connection, where: str) -> None:
    """Apply the migrations ``conn``'s file (``where``) has not had, inside the caller's
    transaction; ``PRAGMA user_version`` counts them."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if apply_migrations(MIGRATIONS, version, conn, conn.execute, where):
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
