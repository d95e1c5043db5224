"""Answering presigned file links (``/_files/{path}?expires=..&signature=..``).

The rule, with no web framework: check the link (403 before anything is read or written),
then read or write the one file it names. The runtime turns the ``Answer`` into its HTTP
response; see presign.py for how links are made and signed.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from ..builtins.presign import PREFIX, check_signature, workspace_secret
from ..builtins.storage import LocalFileStorage, default_content_type, resolve_root
from ..errors import NotFoundError
from .answers import CORS, Answer, error_status, message

if TYPE_CHECKING:
    from ..builtins.context import BuiltinContext

__all__ = ["answer_file_link"]

# A served file may be HTML someone uploaded: never let it script this origin.
_FILE_HEADERS = {
    **CORS,
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "sandbox",
    "Cache-Control": "private, no-store",
}


def answer_file_link(
    context: BuiltinContext,
    method: str,
    raw_path: str,
    expires: str | None,
    signature: str | None,
    body: bytes,
    content_type: str | None,
) -> Answer:
    """GET serves the file; PUT stores ``body`` (201 created, 200 replaced); OPTIONS
    answers a browser's preflight. Anything else is 405."""
    if method == "OPTIONS":
        allow = {"Access-Control-Allow-Methods": "GET, PUT, OPTIONS"}
        allow["Access-Control-Allow-Headers"] = "content-type"
        return Answer(204, {**CORS, **allow}, b"", None)
    if method not in ("GET", "PUT"):
        return message(405, "Method Not Allowed", {"Allow": "GET, PUT, OPTIONS"})
    path = unquote(raw_path[len(PREFIX) :])
    secret = workspace_secret(context.store, context.setting("presign_secret"))
    reason = check_signature(secret, method, path, expires, signature)
    if reason is not None:
        return message(403, f"Forbidden: {reason}")
    try:
        root = resolve_root(context.home, context.setting("files_root"))
        storage = LocalFileStorage(root, guarded=context.store.path)
        if method == "GET":
            stored = storage.read(path)
            headers = dict(_FILE_HEADERS)
            filename = stored.info.metadata.get("filename")
            if filename:
                headers["Content-Disposition"] = f"inline; filename*=UTF-8''{quote(filename)}"
            return Answer(200, headers, stored.data, stored.info.content_type)
        limit = context.setting("max_file_bytes")
        if len(body) > limit:
            return message(413, f"The file is larger than {limit} bytes")
        try:
            storage.stat(path)
            created = False
        except NotFoundError:
            created = True
        info = storage.write(path, body, content_type or default_content_type(path, body))
    except Exception as exc:
        status = error_status(exc)
        if status is None:
            raise
        return message(status, str(exc))
    stored_info = {
        "path": info.path,
        "contentType": info.content_type,
        "size": info.size,
        "modified": info.modified,
    }
    return Answer(
        201 if created else 200, dict(CORS), json.dumps(stored_info).encode(), "application/json"
    )
