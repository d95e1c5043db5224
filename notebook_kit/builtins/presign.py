"""Presigned URLs: a link that lets whoever holds it GET (or PUT) one file until it expires.

A link is ``{base}/_files/{path}?expires={unix seconds}&signature={hex}`` where the
signature is HMAC-SHA256, keyed by the workspace secret, over ``METHOD\\npath\\nexpires``.
``/_files/`` cannot collide with a deployed API: those always start with a stage
(``/dev/`` or ``/prod/``). The server recomputes the signature and compares it in constant
time; a changed path, method, expiry or signature fails, and so does a link past its expiry.

The base URL rule: the ``public_base_url`` setting when set (the address callers use,
e.g. behind a proxy), else the scheme and ``Host`` of the request the action is answering
(one set with ``set_current_request``, else the one the server registered with
``use_serving_request`` finds in this context: the runtime adds nothing per request).
Outside a request (the studio's Test panel) without ``public_base_url`` there is no base
URL and signing refuses.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol
from urllib.parse import quote

from ..errors import ValidationError

if TYPE_CHECKING:  # the store's code stays out of sandboxed processes, which import this
    from ..store.store import Store

__all__ = [
    "DEFAULT_EXPIRES_IN",
    "PREFIX",
    "base_url",
    "check_signature",
    "current_origin",
    "presigned_url",
    "set_current_request",
    "sign",
    "use_serving_request",
    "workspace_secret",
]

PREFIX = "/_files/"
DEFAULT_EXPIRES_IN = 3600
METHODS = ("GET", "PUT")
SECRET_SETTING = "presign_secret"


class _Origin(Protocol):
    """What the runtime's request offers (Sanic's ``Request`` has both)."""

    @property
    def scheme(self) -> str: ...

    @property
    def host(self) -> str: ...


_current_request: ContextVar[_Origin | None] = ContextVar("notebook_kit_request", default=None)
# Where to find the request being served when none was set here. The runtime registers its
# server's own lookup once (``use_serving_request``), so nothing is set per request and
# this module needs no web framework.
_serving_lookup: list[Callable[[], _Origin | None]] = []

# For a caller that answers requests itself (and for tests): links point at it.
set_current_request = _current_request.set


def use_serving_request(lookup: Callable[[], _Origin | None]) -> None:
    """Register how to find the request a server is answering in the current context."""
    _serving_lookup[:] = [lookup]


def _serving_request() -> _Origin | None:
    """The request the caller is answering: the one set here, else the server's."""
    request = _current_request.get()
    if request is None and _serving_lookup:
        request = _serving_lookup[0]()
    return request


def current_origin() -> str | None:
    """``scheme://host`` of the request being answered here, if any."""
    request = _serving_request()
    if request is None or not request.host:
        return None
    return f"{request.scheme}://{request.host}"


def base_url(public_base_url: str | None) -> str:
    """The base of presigned links, by the rule in the module docstring."""
    if public_base_url:
        return public_base_url.rstrip("/")
    origin = current_origin()
    if origin is None:
        raise ValidationError(
            "no base URL for the link: set the public_base_url setting, or call this from "
            "an action the runtime is serving",
            field="public_base_url",
        )
    return origin


def workspace_secret(store: Store, configured: str | None) -> bytes:
    """The signing key: ``configured`` (the ``presign_secret`` setting, e.g. from the
    environment), else one generated with ``secrets`` on first use and kept in the store."""
    if configured:
        return configured.encode()
    stored = store.stored_settings().get(SECRET_SETTING)
    if stored:
        return stored.encode()
    with store.transaction():  # BEGIN IMMEDIATE: two workers cannot both create one
        stored = store.stored_settings().get(SECRET_SETTING)
        if not stored:
            stored = secrets.token_hex(32)
            store.set_setting(SECRET_SETTING, stored)
    return stored.encode()


def sign(secret: bytes, method: str, path: str, expires: int) -> str:
    message = f"{method.upper()}\n{path}\n{expires}".encode("utf-8", "surrogatepass")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def presigned_url(
    base: str, secret: bytes, method: str, path: str, expires_in: int, now: float | None = None
) -> str:
    """A link for ``method`` on ``path`` (already checked) valid ``expires_in`` seconds."""
    method = method.upper()
    if method not in METHODS:
        raise ValidationError(f"a presigned link is for GET or PUT, not {method!r}", field="method")
    expires = int(now if now is not None else time.time()) + expires_in
    signature = sign(secret, method, path, expires)
    return f"{base}{PREFIX}{quote(path, safe='/')}?expires={expires}&signature={signature}"


def check_signature(
    secret: bytes,
    method: str,
    path: str,
    expires: str | None,
    signature: str | None,
    now: float | None = None,
) -> str | None:
    """``None`` when the link is valid for ``method`` on ``path`` now, else why it is not."""
    if not expires or not signature or not (expires.isascii() and expires.isdigit()):
        return "the link is incomplete"
    expected = sign(secret, method, path, int(expires))
    if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "surrogateescape")):
        return "the link's signature does not match"
    if int(expires) < (now if now is not None else time.time()):
        return "the link has expired"
    return None
