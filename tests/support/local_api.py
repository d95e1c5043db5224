"""A small real HTTP API on loopback (stdlib ``http.server`` in a thread) for the outside
calls actions make: an OAuth2 token and revocation endpoint, JSON echo, errors, a slow route.
Every request is recorded, so tests can count them."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

__all__ = ["CLIENT_ID", "CLIENT_SECRET", "LocalApi", "local_api"]

CLIENT_ID, CLIENT_SECRET = "kit-client", "kit-secret:with/odd chars"


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    peer: int = 0  # the client's port: one per connection


@dataclass
class LocalApi:
    url: str
    seen: list[Seen] = field(default_factory=list)
    expires_in: Any = 3600
    issued: int = 0
    revoked: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, path: str) -> int:
        return sum(1 for s in self.seen if s.path == path)


def _handler(api: LocalApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _reply(self, status: int, body: Any, content_type: str = "application/json") -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _client_ok(self) -> bool:
            expected = base64.b64encode(b"kit-client:kit-secret%3Awith%2Fodd%20chars").decode()
            return self.headers.get("Authorization") == f"Basic {expected}"

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            path = urlsplit(self.path).path
            with api.lock:
                api.seen.append(
                    Seen(self.command, path, dict(self.headers), body, self.client_address[1])
                )
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            if path == "/token":
                if not self._client_ok():
                    self._reply(401, {"error": "invalid_client"})
                    return
                if form.get("grant_type") != "client_credentials":
                    self._reply(400, {"error": "unsupported_grant_type"})
                    return
                with api.lock:
                    api.issued += 1
                    token = f"token-{api.issued}"
                answer = {"access_token": token, "token_type": "Bearer"}
                if api.expires_in is not None:
                    answer["expires_in"] = api.expires_in
                if "scope" in form:
                    answer["scope"] = form["scope"]
                time.sleep(0.05)  # a fetch takes a moment, so concurrent callers overlap
                self._reply(200, answer)
            elif path == "/revoke":
                if not self._client_ok():
                    self._reply(401, {"error": "invalid_client"})
                    return
                api.revoked.append(form.get("token", ""))
                self._reply(200, b"", "text/plain")
            elif path == "/echo":
                self._reply(
                    200,
                    {
                        "method": self.command,
                        "query": urlsplit(self.path).query,
                        "json": json.loads(body)
                        if body and self.headers.get("Content-Type") == "application/json"
                        else None,
                        "auth": self.headers.get("Authorization"),
                    },
                )
            elif path == "/teapot":
                self._reply(418, {"error": "I am a teapot"})
            elif path == "/html":
                self._reply(200, b"<p>not json</p>", "text/html")
            elif path == "/slow":
                time.sleep(1.0)
                self._reply(200, {"slow": True})
            else:
                self._reply(404, {"error": "not found"})

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

    return Handler


@pytest.fixture
def local_api() -> Iterator[LocalApi]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(LocalApi("")))
    api = LocalApi(f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = _handler(api)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
