"""``create_app``: a worker's ``Dispatcher`` wired into a Sanic application.

Every path goes to ``Dispatcher.handle``; the errors Sanic raises before the handler runs
(a body too large, a head too slow or malformed) become the answers of
``domain.answers`` too. The app's limits follow the live state (``apply_settings``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from sanic import Sanic
from sanic.exceptions import PayloadTooLarge, SanicException
from sanic.request import Request
from sanic.response import HTTPResponse

from ...builtins.presign import use_serving_request
from ...domain import answers
from .connections import apply_connection_settings
from .dispatch import Dispatcher
from .http_guard import GuardedRequest, timeout_status
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
    app.config.REQUEST_MAX_SIZE = settings["max_body_bytes"]
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
        return to_response(answers.too_large(dispatcher.live.max_body_bytes))

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
