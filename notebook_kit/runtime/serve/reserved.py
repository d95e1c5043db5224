"""Paths outside the stages: ``OPTIONS *``, the OpenAPI documents, presigned files.

The deployed-API path (``dispatch.Dispatcher.handle``) sends every request whose first
segment is not a stage here; what is not one of these is 404.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sanic.request import Request
from sanic.response import HTTPResponse

from ...builtins.presign import PREFIX as FILES_PREFIX
from ...builtins.services import Services
from ...domain import answers
from ...domain.openapi import OPENAPI_PREFIX, build_document, parse_document_name
from ..reload.live import LiveState
from .file_links import answer_file_link
from .request_body import HELD, read_held
from .responses import RuntimeAnswer, to_response

__all__ = ["FILES_SEGMENT", "ReservedPaths"]

FILES_SEGMENT = FILES_PREFIX.strip("/")  # presigned links; never a stage name


class ReservedPaths:
    """Answers the reserved paths; presigned file links need the trusted side's
    ``services`` (the signature), the workspace ``home`` and the ``settings``."""

    def __init__(
        self, services: Services, home: Path, settings: Callable[[], Mapping[str, Any]]
    ) -> None:
        self.services = services
        self.home = home
        self.settings = settings

    async def answer(self, request: Request, live: LiveState, parts: list[str]) -> HTTPResponse:
        """Paths outside the stages: the OpenAPI documents, presigned files, else 404."""
        if len(parts) < 2:  # ``OPTIONS * HTTP/1.1``: no leading '/'
            return to_response(answers.asterisk(request.method))
        if parts[1] == OPENAPI_PREFIX:
            return self._openapi(request, live, parts[2:])
        if parts[1] == FILES_SEGMENT:
            return await self._files(request)
        return to_response(answers.not_found())

    def _openapi(self, request: Request, live: LiveState, rest: list[str]) -> HTTPResponse:
        """``GET /_openapi/{stage}/{app}.json``: the document of what ``live`` serves
        (``{app}.3.0.json``: its OpenAPI 3.0 export)."""
        stage = live.stages.get(rest[0]) if len(rest) == 2 else None
        named = parse_document_name(rest[1]) if stage is not None else None
        if stage is None or named is None or named[0] not in stage.published:
            return to_response(answers.not_found())
        app, version = named
        if request.method not in ("GET", "HEAD"):
            return to_response(answers.method_not_allowed(("GET", "HEAD")))
        application, deployment_id, definitions = stage.published[app]
        base_url = f"{request.scheme}://{request.host}"
        document = build_document(
            application, stage.name, definitions, base_url, deployment_id, version
        )
        body = json.dumps(document, indent=2)
        return RuntimeAnswer(body, 200, dict(answers.CORS), "application/json")

    async def _files(self, request: Request) -> HTTPResponse:
        """``/_files/{path}?...``: a presigned link (see file_links.py), answered off the
        event loop since it asks the trusted side and reads or writes a file."""
        args = request.args
        body = await read_held(request) if request.body is HELD else request.body
        loop = asyncio.get_running_loop()
        answer = await loop.run_in_executor(
            None,
            answer_file_link,
            self.services,
            self.home,
            self.settings(),
            request.method,
            request.path,
            args.get("expires"),
            args.get("signature"),
            body,
            request.headers.get("content-type"),
        )
        return to_response(answer)
