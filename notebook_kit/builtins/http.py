"""``http``: the HTTP client actions use to call other REST APIs.

One ``httpx.Client`` per worker process, created on first use and shared by every action
and every request of that worker, so connections to the same host are pooled and reused.
Every call has a timeout (the ``http_timeout`` setting, read when the call is made;
``timeout=`` overrides it for one call).

The plain methods (``get``, ``post``, ``put``, ``patch``, ``delete``, ``request``) return
the ``httpx.Response`` whatever its status; ``get_json`` and ``post_json`` return the
decoded JSON and raise ``BuiltinError`` on a 4xx/5xx answer or a body that is not JSON.
A failure to connect, a timeout or a bad URL always raises ``BuiltinError``.

Each method has an awaitable twin with an ``a`` prefix (``await http.aget_json(url)``)
for actions that use ``await``: it runs the same pooled call on a worker thread, so the
server's event loop keeps serving other requests meanwhile. (A thread rather than an
``httpx.AsyncClient``, because an async client is bound to one event loop, and the
studio's Test button runs each async action on a loop of its own.)
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..errors import BuiltinError
from . import outbound

__all__ = ["HttpClient", "shared_client"]

_lock = threading.Lock()
_client: httpx.Client | None = None
_client_pid: int | None = None


def shared_client() -> httpx.Client:
    """This process's pooled client (a forked worker gets its own)."""
    global _client, _client_pid
    with _lock:
        if _client is None or _client_pid != os.getpid():
            _client = httpx.Client(
                follow_redirects=True,
                limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
                headers={"User-Agent": "notebook-kit"},
            )
            _client_pid = os.getpid()
            atexit.register(_client.close)  # no pooled socket left open at exit
        return _client


def _describe(exc: httpx.HTTPError, method: str, url: str) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"http {method} {url} timed out ({type(exc).__name__})"
    return f"http {method} {url} failed: {type(exc).__name__}: {exc}"


class HttpClient:
    """``http`` in actions. ``timeout`` is a callable giving the default timeout in
    seconds, asked on every call (so a changed setting applies at once)."""

    def __init__(self, timeout: Callable[[], float] | float = 10.0) -> None:
        self._timeout = timeout if callable(timeout) else (lambda: float(timeout))

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """Send a request and return the ``httpx.Response`` whatever its status.

        Keyword arguments are httpx's: ``params``, ``headers``, ``json``, ``data``,
        ``content``, ``files``, ``auth``, ``timeout``. Network failures raise BuiltinError.
        """
        kwargs.setdefault("timeout", self._timeout())
        method = method.upper()
        if outbound.is_recording():
            return self._noted(method, url, **kwargs)
        try:
            return shared_client().request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise BuiltinError(_describe(exc, method, str(url))) from exc
        except (TypeError, ValueError) as exc:  # e.g. a URL without a scheme
            raise BuiltinError(f"http {method} {url}: {exc}") from exc

    def _noted(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """``request``, noted for tracing (``outbound``): method, URL, status."""
        host = urlsplit(str(url)).hostname or ""
        attributes = {"http.request.method": method, "url.full": str(url).split("?", 1)[0]}
        with outbound.timed("http", f"{method} {host}".strip(), attributes) as noted:
            try:
                answer = shared_client().request(method, url, **kwargs)
            except httpx.HTTPError as exc:
                raise BuiltinError(_describe(exc, method, str(url))) from exc
            except (TypeError, ValueError) as exc:
                raise BuiltinError(f"http {method} {url}: {exc}") from exc
            noted["http.response.status_code"] = answer.status_code
            return answer

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        """GET ``url``; returns the response whatever its status."""
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        """POST to ``url``; returns the response whatever its status."""
        return self.request("POST", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> httpx.Response:
        """PUT to ``url``; returns the response whatever its status."""
        return self.request("PUT", url, **kwargs)

    def patch(self, url: str, **kwargs: Any) -> httpx.Response:
        """PATCH ``url``; returns the response whatever its status."""
        return self.request("PATCH", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> httpx.Response:
        """DELETE ``url``; returns the response whatever its status."""
        return self.request("DELETE", url, **kwargs)

    def get_json(self, url: str, **kwargs: Any) -> Any:
        """GET ``url`` and return its JSON body; a 4xx/5xx or non-JSON answer raises."""
        return _json_of(self.request("GET", url, **kwargs))

    def post_json(self, url: str, data: Any = None, **kwargs: Any) -> Any:
        """POST ``data`` as JSON to ``url`` and return the JSON answer (``None`` if empty);
        a 4xx/5xx or non-JSON answer raises."""
        return _json_of(self.request("POST", url, json=data, **kwargs), allow_empty=True)

    # -- awaitable twins ---------------------------------------------------------------

    async def arequest(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """``request`` without blocking the event loop."""
        return await asyncio.to_thread(self.request, method, url, **kwargs)

    async def aget(self, url: str, **kwargs: Any) -> httpx.Response:
        """``get`` without blocking the event loop."""
        return await asyncio.to_thread(self.request, "GET", url, **kwargs)

    async def apost(self, url: str, **kwargs: Any) -> httpx.Response:
        """``post`` without blocking the event loop."""
        return await asyncio.to_thread(self.request, "POST", url, **kwargs)

    async def aput(self, url: str, **kwargs: Any) -> httpx.Response:
        """``put`` without blocking the event loop."""
        return await asyncio.to_thread(self.request, "PUT", url, **kwargs)

    async def adelete(self, url: str, **kwargs: Any) -> httpx.Response:
        """``delete`` without blocking the event loop."""
        return await asyncio.to_thread(self.request, "DELETE", url, **kwargs)

    async def aget_json(self, url: str, **kwargs: Any) -> Any:
        """``get_json`` without blocking the event loop."""
        return await asyncio.to_thread(self.get_json, url, **kwargs)

    async def apost_json(self, url: str, data: Any = None, **kwargs: Any) -> Any:
        """``post_json`` without blocking the event loop."""
        return await asyncio.to_thread(self.post_json, url, data, **kwargs)

    def __repr__(self) -> str:
        return f"<http client, timeout {self._timeout()} s>"


def _json_of(response: httpx.Response, allow_empty: bool = False) -> Any:
    where = f"{response.request.method} {response.request.url}"
    if response.is_error:
        snippet = response.text[:200]
        raise BuiltinError(f"http {where} answered {response.status_code}: {snippet}")
    if allow_empty and not response.content:
        return None
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BuiltinError(f"http {where} did not answer JSON: {exc}") from None
