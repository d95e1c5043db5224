"""Paths outside the stages: ``OPTIONS *``, the OpenAPI documents, presigned files.

The deployed-API path (``app.Runtime.handle``) sends every request whose first segment is
not a stage here; what is not one of these is 404.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sanic.request import Request
from sanic.response import HTTPResponse

from ..builtins.context import BuiltinContext
from ..builtins.presign import PREFIX as FILES_PREFIX
from ..domain.openapi import OPENAPI_PREFIX, build_document
from .answers import CORS, Answer, message
from .file_links import answer_file_link
from .live import LiveState
from .responses import RuntimeAnswer

__all__ = ["FILES_SEGMENT", "ReservedPaths", "runtime_answer"]

FILES_SEGMENT = FILES_PREFIX.strip("/")  # presigned links; never a stage name


def runtime_answer(
    status: int,
    text: str,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> HTTPResponse:
    """An answer the runtime makes itself (see ``answers.message``)."""
    answer = message(status, text, headers, extra)
    return RuntimeAnswer(answer.body, status, answer.headers, answer.content_type)


def _is_asterisk(parts: list[str]) -> bool:
    """``OPTIONS * HTTP/1.1`` (RFC 9110 9.3.7, about the server itself): no leading '/'."""
    return len(parts) < 2


def _asterisk(method: str) -> HTTPResponse:
    """``OPTIONS *``: 200 with the methods the server answers; any other method: 400."""
    if method == "OPTIONS":
        return runtime_answer(200, "OK", {"Allow": "GET, POST, PUT, DELETE, OPTIONS"})
    return runtime_answer(400, "Bad Request")


class ReservedPaths:
    """Answers the reserved paths; ``context`` serves the presigned file links."""

    def __init__(self, context: BuiltinContext) -> None:
        self.context = context

    async def answer(self, request: Request, live: LiveState, parts: list[str]) -> HTTPResponse:
        """Paths outside the stages: the OpenAPI documents, presigned files, else 404."""
        if _is_asterisk(parts):
            return _asterisk(request.method)
        if parts[1] == OPENAPI_PREFIX:
            return self._openapi(request, live, parts[2:])
        if parts[1] == FILES_SEGMENT:
            return await self._files(request)
        return runtime_answer(404, "Not Found")

    def _openapi(self, request: Request, live: LiveState, rest: list[str]) -> HTTPResponse:
        """``GET /_openapi/{stage}/{app}.json``: the document of what ``live`` serves."""
        stage = live.stages.get(rest[0]) if len(rest) == 2 else None
        app = rest[1].removesuffix(".json") if stage is not None else ""
        if stage is None or not rest[1].endswith(".json") or app not in stage.published:
            return runtime_answer(404, "Not Found")
        if request.method not in ("GET", "HEAD"):
            return runtime_answer(405, "Method Not Allowed", {"Allow": "GET, HEAD"})
        application, deployment_id, definitions = stage.published[app]
        base_url = f"{request.scheme}://{request.host}"
        document = build_document(application, stage.name, definitions, base_url, deployment_id)
        return RuntimeAnswer(json.dumps(document, indent=2), 200, dict(CORS), "application/json")

    async def _files(self, request: Request) -> HTTPResponse:
        """``/_files/{path}?...``: a presigned link (see file_links.py), answered off the
        event loop since it reads or writes a file."""
        args = request.args
        loop = asyncio.get_running_loop()
        answer: Answer = await loop.run_in_executor(
            None,
            answer_file_link,
            self.context,
            request.method,
            request.path,
            args.get("expires"),
            args.get("signature"),
            request.body,
            request.headers.get("content-type"),
        )
        return RuntimeAnswer(answer.body, answer.status, answer.headers, answer.content_type)
