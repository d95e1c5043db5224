"""A real SMTP server (aiosmtpd) on loopback that keeps what it receives."""

from __future__ import annotations

import email
import email.policy
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

__all__ = ["Received", "SmtpServer", "smtp_server"]

USER, PASSWORD = "mailer", "s3cret-pass"


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage


@dataclass
class SmtpServer:
    host: str
    port: int
    received: list[Received] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)

    def settings(self, workspace: Any, **extra: str) -> None:
        """Point ``workspace``'s SMTP settings at this server."""
        workspace.set_setting("smtp_host", self.host)
        workspace.set_setting("smtp_port", str(self.port))
        workspace.set_setting("smtp_from", "Notebook Kit <kit@example.org>")
        for name, value in extra.items():
            workspace.set_setting(name, value)


class _Handler:
    def __init__(self, server: SmtpServer) -> None:
        self.server = server

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.server.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), message))
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def smtp_server() -> Iterator[SmtpServer]:
    """aiosmtpd on a free loopback port; AUTH LOGIN/PLAIN accepts USER/PASSWORD."""
    server = SmtpServer("127.0.0.1", _free_port())

    def authenticate(smtp: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> Any:
        ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
            USER.encode(),
            PASSWORD.encode(),
        )
        if ok:
            server.logins.append(USER)
        return AuthResult(success=ok, handled=False)

    controller = Controller(
        _Handler(server),
        hostname=server.host,
        port=server.port,
        authenticator=authenticate,
        auth_require_tls=False,
    )
    controller.start()
    try:
        yield server
    finally:
        controller.stop()
