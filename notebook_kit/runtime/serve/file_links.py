"""Answering presigned file links (``/_files/{path}?expires=..&signature=..``).

The rule, with no web framework: the trusted side checks the link's signature (the key
that signs links never reaches a worker: ``Services.check_link``), then the worker reads
or writes the one file it names, in the files root it may touch. The answers are
``domain.answers``'; see presign.py for how links are made and signed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from ...builtins.presign import PREFIX
from ...builtins.services import Services
from ...builtins.storage import LocalFileStorage, default_content_type, resolve_root
from ...domain import answers
from ...domain.answers import Answer
from ...errors import NotFoundError

__all__ = ["answer_file_link"]


def answer_file_link(
    services: Services,
    home: Path,
    settings: Mapping[str, Any],
    method: str,
    raw_path: str,
    expires: str | None,
    signature: str | None,
    body: bytes,
    content_type: str | None,
) -> Answer:
    """GET serves the file (HEAD: a GET link's answer, which the server sends without
    its body); PUT stores ``body`` (201 created, 200 replaced); OPTIONS answers a
    browser's preflight. Anything else is 405."""
    if method == "OPTIONS":
        return answers.file_preflight()
    if method == "HEAD":
        method = "GET"
    if method not in ("GET", "PUT"):
        return answers.method_not_allowed(("GET", "HEAD", "OPTIONS", "PUT"))
    path = unquote(raw_path[len(PREFIX) :])
    reason = services.check_link(method, path, expires, signature)
    if reason is not None:
        return answers.forbidden(reason)
    try:
        storage = LocalFileStorage(resolve_root(home, settings.get("files_root")))
        if method == "GET":
            stored = storage.read(path)
            filename = stored.info.metadata.get("filename")
            disposition = f"inline; filename*=UTF-8''{quote(filename)}" if filename else None
            return answers.file(stored.data, stored.info.content_type, disposition)
        limit = int(settings["max_file_bytes"])
        if len(body) > limit:
            return answers.file_too_large(limit)
        try:
            storage.stat(path)
            created = False
        except NotFoundError:
            created = True
        info = storage.write(path, body, content_type or default_content_type(path, body))
    except Exception as exc:
        refused = answers.refusal(exc)
        if refused is None:
            raise
        return refused
    stored_info = {
        "path": info.path,
        "contentType": info.content_type,
        "size": info.size,
        "modified": info.modified,
    }
    return answers.file_stored(json.dumps(stored_info).encode(), created)
