"""Deployment history, content-addressed: each distinct definition version stored once.

Table ``definition_versions`` holds one row per distinct definition (its canonical JSON,
keyed by the SHA-256 of that text, numbered by ``id``). A ``deployments`` row keeps the
application document in ``snapshot`` (without the definitions) and, in ``versions``, the
ordered version numbers it serves, written as ranges (``"1-4999,10001,5001-10000"``):
versions are numbered in the order they are first stored, so an application redeployed
with one change costs its deployment row, a few characters of ranges and one version.

Version numbers are never reused (AUTOINCREMENT; a sequence on PostgreSQL), so a number
names one immutable definition forever: a server may cache what it compiled by number.

Retention (``prune``) keeps the newest deployments of one application and stage, plus the
live one and a canary, and deletes the versions no remaining deployment refers to.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..domain.clock import now
from ..domain.models import Stage
from .dialect import StoreDB

__all__ = [
    "Snapshots",
    "canonical",
    "content_address",
    "decode_ids",
    "encode_ids",
    "store_versions",
    "version_of",
]

# Placeholders per IN (...) list: far under SQLite's and PostgreSQL's limits.
_CHUNK = 500


def canonical(definition: dict[str, Any]) -> str:
    """A definition's JSON in one spelling: the text that is hashed and stored."""
    return json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_address(text: str) -> str:
    """The SHA-256 (hex) of a canonical definition text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def version_of(definition: dict[str, Any]) -> tuple[str, str]:
    """A definition's (content hash, canonical text): its identity in the store."""
    text = canonical(definition)
    return content_address(text), text


def encode_ids(ids: Sequence[int]) -> str:
    """Ordered version numbers as comma-separated runs: ``[3, 4, 5, 9]`` -> ``"3-5,9"``."""
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


def decode_ids(text: str) -> list[int]:
    """The inverse of ``encode_ids``."""
    ids: list[int] = []
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        ids.extend(range(int(first), int(last or first) + 1))
    return ids


def _chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _ids_by_hash(conn: Any, hashes: Sequence[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for chunk in _chunks(hashes):
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT hash, id FROM definition_versions WHERE hash IN ({marks})"
        found.update((r[0], int(r[1])) for r in conn.execute(sql, tuple(chunk)))
    return found


def store_versions(conn: Any, versions: Iterable[tuple[str, str]]) -> list[int]:
    """Store each (hash, text) version unless it is there already; their numbers, in
    order. ``conn`` is anything with ``execute(sql, params)`` (inside a transaction)."""
    pairs = list(versions)
    hashes = [h for h, _ in pairs]
    texts = [t for _, t in pairs]
    known = _ids_by_hash(conn, list(dict.fromkeys(hashes)))
    for digest, text in zip(hashes, texts, strict=True):
        if digest not in known:
            row = conn.execute(
                "INSERT INTO definition_versions (hash, body) VALUES (?, ?) "
                "ON CONFLICT (hash) DO NOTHING RETURNING id",
                (digest, text),
            ).fetchone()
            known[digest] = int(row[0]) if row else _ids_by_hash(conn, [digest])[digest]
    return [known[h] for h in hashes]


def content_address_deployments(conn: Any) -> None:
    """Move every deployment's definitions out of its snapshot into
    ``definition_versions`` (each distinct one once), leaving the ranges of their numbers.
    A migration step on both stores: ``conn`` is a SQLite connection or the PostgreSQL
    ``PgConnection``, inside the migration's transaction."""
    rows = conn.execute("SELECT id, snapshot FROM deployments ORDER BY id").fetchall()
    for deployment_id, text in rows:
        snapshot = json.loads(text)
        ids = store_versions(conn, map(version_of, snapshot.pop("definitions", [])))
        conn.execute(
            "UPDATE deployments SET snapshot = ?, versions = ? WHERE id = ?",
            (json.dumps(snapshot), encode_ids(ids), deployment_id),
        )


class Snapshots:
    """The ``deployments`` and ``definition_versions`` tables."""

    def __init__(self, db: StoreDB) -> None:
        self._db = db

    def known(self, hashes: Sequence[str]) -> set[str]:
        """Which of ``hashes`` are stored versions (each was validated by a deploy)."""
        return set(_ids_by_hash(self._db, list(hashes)))

    def add(
        self,
        app_id: str,
        stage: Stage,
        host: str,
        document: dict[str, Any],
        versions: Sequence[tuple[str, str]],
        description: str = "",
    ) -> int:
        """Record a deployment of the definitions ``versions`` ((hash, canonical text)
        pairs, in order; ``document`` is the rest of the snapshot: the application record,
        format, time). Inside a transaction."""
        ids = store_versions(self._db, versions)
        head = {k: v for k, v in document.items() if k != "definitions"}
        row = self._db.write(
            "INSERT INTO deployments "
            "(app_id, stage, deployed_at, host, snapshot, versions, description) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (app_id, str(stage), now(), host, json.dumps(head), encode_ids(ids), description),
        ).fetchone()
        return int(row[0])

    def version_ids(self, deployment_id: int) -> tuple[dict[str, Any], list[int]] | None:
        """A deployment's document (without definitions) and its version numbers; the
        document's ``secrets`` lists the secret versions it pins, when it pins any (their
        ids: the values stay in ``secret_versions``)."""
        row = self._db.execute(
            "SELECT snapshot, versions, secrets FROM deployments WHERE id = ?", (deployment_id,)
        ).fetchone()
        if row is None:
            return None
        head = json.loads(row[0])
        if row[2]:
            head["secrets"] = decode_ids(row[2])
        return head, decode_ids(row[1])

    def bodies(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The definitions (as dicts) stored under version numbers ``ids``."""
        found: dict[int, dict[str, Any]] = {}
        unique = list(dict.fromkeys(ids))
        for chunk in _chunks(unique):
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT id, body FROM definition_versions WHERE id IN ({marks})"
            found.update((int(r[0]), json.loads(r[1])) for r in self._db.execute(sql, chunk))
        return found

    def snapshot(self, head: dict[str, Any], ids: Sequence[int]) -> dict[str, Any]:
        """The whole snapshot: ``head`` with the definitions of ``ids`` in order."""
        bodies = self.bodies(ids)
        return {**head, "definitions": [bodies[i] for i in ids]}

    def prune(self, app_id: str, stage: Stage, keep: int) -> int:
        """Delete all but the newest ``keep`` deployments of ``app_id`` on ``stage`` (the
        live one always stays) and the versions nothing refers to any more. Returns how
        many deployments went. Inside a transaction. (A canary counts as live here.)"""
        rows = self._db.execute(
            "SELECT d.id, d.versions, l.deployment_id IS NOT NULL AS active "
            "FROM deployments d LEFT JOIN live l "
            "ON l.deployment_id = d.id OR l.canary_id = d.id "
            "WHERE d.app_id = ? AND d.stage = ? ORDER BY d.id DESC",
            (app_id, str(stage)),
        ).fetchall()
        doomed = [r for r in rows[keep:] if not r[2]]
        if not doomed:
            return 0
        candidates: set[int] = set()
        for row in doomed:
            candidates.update(decode_ids(row[1]))
        for chunk in _chunks([int(r[0]) for r in doomed]):
            marks = ",".join("?" * len(chunk))
            self._db.write(f"DELETE FROM deployments WHERE id IN ({marks})", tuple(chunk))
        for (versions,) in self._db.execute("SELECT versions FROM deployments"):
            candidates.difference_update(decode_ids(versions))
            if not candidates:
                break
        for chunk in _chunks(sorted(candidates)):
            marks = ",".join("?" * len(chunk))
            self._db.write(f"DELETE FROM definition_versions WHERE id IN ({marks})", chunk)
        return len(doomed)
