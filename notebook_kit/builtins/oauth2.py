"""``fn.notebook_kit.oauth2``: an OAuth2 client-credentials token for outside APIs.

``token()`` asks the configured token endpoint (``oauth2_token_url``) for an access token
with the client-credentials grant (RFC 6749 section 4.4), authenticating the client with
HTTP Basic (``client_secret_basic``, section 2.3.1). It runs on the trusted side (the client
secret never reaches action code): the token is cached in the process that holds the
workspace (a server's supervisor, a notebook's kernel), keyed by token URL and client ID,
and shared by every action and request it serves until ``_MARGIN`` seconds before it expires
(a token without ``expires_in`` is kept ``_DEFAULT_LIFETIME`` seconds). ``revoke()`` sends
the cached token to the revocation endpoint (``oauth2_revoke_url``, RFC 7009) and drops it
from the cache.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from ..errors import BuiltinError
from .http import shared_client

__all__ = ["OAuth2Client", "clear_cache"]

_MARGIN = 30.0
_DEFAULT_LIFETIME = 60.0


@dataclass(frozen=True)
class _Cached:
    access_token: str
    expires_at: float


_cache: dict[tuple[str, str], _Cached] = {}
_locks: dict[tuple[str, str], threading.Lock] = {}
_cache_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every cached token of this process."""
    with _cache_lock:
        _cache.clear()


def _lock_for(key: tuple[str, str]) -> threading.Lock:
    with _cache_lock:
        return _locks.setdefault(key, threading.Lock())


def _basic_auth(client_id: str, secret: str) -> tuple[str, str]:
    # RFC 6749 2.3.1: id and secret are form-urlencoded before Basic encoding.
    return quote(client_id, safe=""), quote(secret, safe="")


class OAuth2Client:
    """``fn.notebook_kit.oauth2``. ``settings`` gives the workspace settings in force."""

    def __init__(self, settings: Callable[[], Mapping[str, Any]], timeout: float = 10.0) -> None:
        self._settings = settings
        self._timeout = timeout

    def _config(self, *needed: str) -> dict[str, Any]:
        values = self._settings()
        config = {
            name: values.get(f"oauth2_{name}")
            for name in ("token_url", "revoke_url", "client_id", "client_secret", "scope")
        }
        missing = [f"oauth2_{name}" for name in needed if not config[name]]
        if missing:
            raise BuiltinError(
                f"oauth2 is not configured: set {', '.join(missing)} "
                "(notebook-kit settings set NAME VALUE)"
            )
        return config

    def token(self) -> str:
        """The access token for the configured client, fetched only when the cached one
        is missing or about to expire. Raises BuiltinError if the endpoint refuses."""
        config = self._config("token_url", "client_id", "client_secret")
        key = (config["token_url"], config["client_id"])
        cached = _cache.get(key)
        if cached is not None and cached.expires_at > time.monotonic():
            return cached.access_token
        with _lock_for(key):  # one fetch per worker, however many requests wait for it
            cached = _cache.get(key)
            if cached is not None and cached.expires_at > time.monotonic():
                return cached.access_token
            fetched = self._fetch(config)
            with _cache_lock:
                _cache[key] = fetched
            return fetched.access_token

    async def atoken(self) -> str:
        """``token()`` for actions that use ``await``: a fetch does not block the loop."""
        return await asyncio.to_thread(self.token)

    def _fetch(self, config: Mapping[str, Any]) -> _Cached:
        form = {"grant_type": "client_credentials"}
        if config["scope"]:
            form["scope"] = config["scope"]
        url = config["token_url"]
        started = time.monotonic()
        data = self._post(url, form, config)
        access_token = data.get("access_token") if isinstance(data, dict) else None
        if not isinstance(access_token, str) or not access_token:
            raise BuiltinError(f"oauth2 token endpoint {url} answered without an access_token")
        lifetime = data.get("expires_in", _DEFAULT_LIFETIME)
        try:
            lifetime = float(lifetime)
        except (TypeError, ValueError):
            raise BuiltinError(
                f"oauth2 token endpoint {url} sent expires_in={lifetime!r}"
            ) from None
        # Renew _MARGIN seconds early; a very short-lived token is kept for half its life.
        keep = lifetime - _MARGIN if lifetime > 2 * _MARGIN else lifetime / 2
        return _Cached(access_token, started + keep)

    def _post(self, url: str, form: dict[str, str], config: Mapping[str, Any]) -> Any:
        try:
            response = shared_client().post(
                url,
                data=form,
                auth=_basic_auth(config["client_id"], config["client_secret"]),
                headers={"Accept": "application/json"},
                timeout=self._timeout,
            )
        except httpx.HTTPError as exc:
            raise BuiltinError(f"oauth2: cannot reach {url}: {type(exc).__name__}: {exc}") from exc
        if response.is_error:
            detail = response.text[:200]
            try:
                body = response.json()
                detail = body.get("error_description") or body.get("error") or detail
            except ValueError:
                pass
            raise BuiltinError(f"oauth2: {url} answered {response.status_code}: {detail}")
        if not response.content:
            return {}
        try:
            return response.json()
        except ValueError:
            raise BuiltinError(f"oauth2: {url} did not answer JSON") from None

    def revoke(self) -> bool:
        """Revoke the cached token at the revocation endpoint and forget it. Returns whether
        there was a token to revoke (without one, nothing is sent)."""
        config = self._config("revoke_url", "token_url", "client_id", "client_secret")
        key = (config["token_url"], config["client_id"])
        with _lock_for(key), _cache_lock:
            cached = _cache.pop(key, None)
        if cached is None:
            return False
        form = {"token": cached.access_token, "token_type_hint": "access_token"}
        self._post(config["revoke_url"], form, config)
        return True

    async def arevoke(self) -> bool:
        """``revoke()`` for actions that use ``await``."""
        return await asyncio.to_thread(self.revoke)

    def __repr__(self) -> str:
        return "<fn.notebook_kit.oauth2: token(), revoke()>"
