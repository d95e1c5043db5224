"""``create_app``: a worker's ``Dispatcher`` wired into a Sanic application.

Every path goes to ``Dispatcher.handle``; the errors Sanic raises before the handler runs
(a body too large, a head too large, too slow or malformed) become the answers of
``domain.answers`` too. Sanic routes the methods of ``_ALL_METHODS``; a request with any
other method (``TRACE``, ``CONNECT /path``, any token) goes to the dispatcher from Sanic's
405, so it gets the path's 405 with ``Allow`` (or its 404) like any other. The app's
limits follow the live state (``apply_settings``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from sanic import Sanic
from sanic.exceptions import MethodNotAllowed, PayloadTooLarge, SanicException
from sanic.http import Http
from sanic.request import Request
from sanic.response import HTTPResponse

from ...builtins.presign import use_serving_request
from ...domain import answers
from ...domain.forwarded import parse_proxies
from .connections import apply_connection_settings
from .dispatch import Dispatcher
from .http_guard import GuardedRequest, oversized_head, timeout_status
from .request_body import hold
from .responses import to_response

__all__ = ["apply_settings", "create_app"]

log = logging.getLogger("notebook_kit.runtime")

GRACEFUL_STOP_SECONDS = 8.0  # a stopping worker drains its calls this long at most
_ALL_METHODS = ["GET", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "HEAD"]


def _serving_request() -> Request | None:
    """The request Sanic is answering in this context, if any."""
    try:
        return Request.get_current()
    except SanicException:
        return None


def apply_settings(app: Sanic, settings: Mapping[str, Any]) -> None:
    """The body limit, the timeouts and the connection cap of ``settings``."""
    app.config.REQUEST_MAX_SIZE = app.ctx.max_body_bytes = int(settings["max_body_bytes"])
    # Sanic caps the head at the body limit too (min of the three): a max_body_bytes of
    # 100 made every request's head "too large" (431). The head keeps its own limit.
    Http.set_header_max_size(
        app.config.REQUEST_MAX_HEADER_SIZE, app.config.REQUEST_BUFFER_SIZE - 4096
    )
    app.config.NK_TRUSTED_PROXIES = parse_proxies(settings["trusted_proxies"])
    apply_connection_settings(app.config, settings)


def create_app(dispatcher: Dispatcher, name: str = "notebook_kit") -> Sanic:
    """The Sanic application of one worker, answering with ``dispatcher``."""
    use_serving_request(_serving_request)  # fn.getPresignedUrl's link base, inline
    with contextlib.suppress(SanicException):
        Sanic.unregister_app(Sanic.get_app(name))
    app = Sanic(name, configure_logging=False, request_class=GuardedRequest)
    app.config.MOTD = False
    app.config.ACCESS_LOG = False
    app.config.TOUCHUP = True  # strips per-request signal dispatch (about 30 µs a request)
    app.config.GRACEFUL_SHUTDOWN_TIMEOUT = GRACEFUL_STOP_SECONDS
    apply_settings(app, dispatcher.live.settings)
    app.ctx.dispatcher = dispatcher
    app.add_route(dispatcher.handle, "/", methods=_ALL_METHODS, name="root")
    app.add_route(dispatcher.handle, "/<rest:path>", methods=_ALL_METHODS, name="everything")

    @app.exception(PayloadTooLarge)
    async def _too_large(request: Request, exc: Exception) -> HTTPResponse:
        head = oversized_head(request)  # 414 or 431: Sanic says 413 for a head too
        return to_response(head or answers.too_large(dispatcher.live.max_body_bytes))

    @app.exception(MethodNotAllowed)
    async def _other_method(request: Request, exc: Exception) -> HTTPResponse | None:
        stream: Any = request.stream
        if stream is not None and stream.request_body and stream.expecting_continue:
            hold(request)  # its answer needs no body: no 100 Continue
        return await dispatcher.handle(request)

    @app.exception(Exception)
    async def _unexpected(request: Request, exc: Exception) -> HTTPResponse:
        status: int = getattr(exc, "status_code", 500)
        if timeout_status(request, exc):
            return to_response(answers.request_timeout())
        if status >= 500:
            log.exception("unexpected error", exc_info=exc)
            return to_response(answers.server_error())
        if status == 408:
            return to_response(answers.request_timeout())
        return to_response(answers.bad_request(str(exc), status))

    return app
