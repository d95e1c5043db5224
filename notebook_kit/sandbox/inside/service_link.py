"""``Services`` as seen from inside a sandbox: each built-in that needs the trusted side is
one request over the process's service channel, answered by ``builtins.services.answer``
(or, for ``code``, with the source of a definition this process may run).

The channel is a blocking socket shared by whatever thread of the process asks (an
async action's ``asyncio.to_thread``, a file link checked off the event loop): a lock
keeps one request and its reply together.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

from ...errors import BuiltinError
from ..protocol import decode_value, encode_value, receive, send

__all__ = ["ServiceLink"]


class ServiceLink:
    """The trusted side's services over ``sock`` (see the module docstring)."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(True)
        self._sock = sock
        self._lock = threading.Lock()

    def request(self, header: dict[str, Any]) -> dict[str, Any]:
        """One request and its reply's header."""
        with self._lock:
            send(self._sock, header)
            return receive(self._sock).header

    def _call(self, op: str, *args: Any) -> Any:
        reply = self.request({"op": op, "args": encode_value(list(args))})
        if "error" in reply:
            raise BuiltinError(str(reply["error"]))
        return decode_value(reply.get("ok"))

    def code_and_secrets(self, key: str) -> tuple[dict[str, Any], dict[str, str]]:
        """The definition ``key`` names, and the values of the secrets handed with it
        (its application's, of the stage it runs for; empty when it has none)."""
        reply = self.request({"op": "code", "key": key})
        if "error" in reply:
            raise BuiltinError(str(reply["error"]))
        definition = reply.get("definition")
        if not isinstance(definition, dict):
            raise BuiltinError(f"no code for {key!r}")
        held = reply.get("secrets")
        values = {str(k): str(v) for k, v in held.items()} if isinstance(held, dict) else {}
        return definition, values

    def users(self, name: str, args: list[Any]) -> Any:
        return self._call("users", name, args)

    def send_mail(self, param: dict[str, Any]) -> dict[str, Any]:
        return dict(self._call("send_mail", param))

    def presign(self, method: str, path: str, expires_in: int, base: str | None) -> str:
        return str(self._call("presign", method, path, expires_in, base))

    def check_link(
        self, method: str, path: str, expires: str | None, signature: str | None
    ) -> str | None:
        reason = self._call("check_link", method, path, expires, signature)
        return None if reason is None else str(reason)

    def actions_status(self) -> dict[str, list[dict[str, Any]]]:
        return dict(self._call("actions_status"))

    def oauth2(self, name: str) -> Any:
        return self._call("oauth2", name)
