"""``fn.sendMail``: one mail through the configured SMTP server.

``param`` keys (only ``to`` is required, and one of ``text``, ``html``, ``attachments``):

- ``to``, ``cc``, ``bcc``: an address or a list of them (``"ann@x.org"`` or
  ``"Ann Lee <ann@x.org>"``). Bcc addresses get the mail but appear in no header.
- ``from``: the sender; default the ``smtp_from`` setting. ``replyTo``: optional.
- ``subject``: text on one line.
- ``text`` and/or ``html``: the body; with both, a ``multipart/alternative`` mail.
- ``attachments``: a list of ``{"path": "reports/q1.pdf"}`` (a file in the execution
  environment's file storage; name and content type from it unless ``filename`` /
  ``contentType`` are given) or ``{"filename", "content", "contentType"}`` where
  ``content`` is bytes, text (sent as UTF-8) or, with ``"encoding": "base64"``, base64.

CR or LF in an address, the subject or a file name is refused (no header injection).
The connection follows the settings: ``smtp_ssl`` (TLS from the start, port 465),
``smtp_starttls`` (upgrade, port 587), login when ``smtp_user`` is set; certificates are
verified against the system's trust store (``SSL_CERT_FILE`` adds one).
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import smtplib
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import getaddresses, make_msgid
from typing import Any

from ..errors import BuiltinError
from .user_fields import check_email

__all__ = ["MAX_ATTACHMENT_BYTES", "SmtpConfig", "build_message", "send_mail"]

MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024
_TIMEOUT = 30.0

ReadFile = Callable[[str], tuple[bytes, str]]


@dataclass(frozen=True)
class SmtpConfig:
    """The SMTP settings in force (see settings.py)."""

    host: str | None
    port: int | None = None
    user: str | None = None
    password: str | None = None
    starttls: bool = False
    ssl: bool = False
    sender: str | None = None

    @classmethod
    def from_settings(cls, values: Mapping[str, Any]) -> SmtpConfig:
        return cls(
            values.get("smtp_host"),
            values.get("smtp_port"),
            values.get("smtp_user"),
            values.get("smtp_password"),
            bool(values.get("smtp_starttls")),
            bool(values.get("smtp_ssl")),
            values.get("smtp_from"),
        )

    @property
    def configured(self) -> bool:
        return bool(self.host)

    @property
    def effective_port(self) -> int:
        if self.port:
            return self.port
        return 465 if self.ssl else 587 if self.starttls else 25


def _one_line(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise BuiltinError(f"sendMail: {what} must be text, not {type(value).__name__}")
    if "\r" in value or "\n" in value:
        raise BuiltinError(f"sendMail: {what} must not contain CR or LF")
    return value


def _addresses(value: Any, what: str) -> list[Address]:
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise BuiltinError(f"sendMail: {what} must be an address or a list of addresses")
    found = []
    for item in items:
        text = _one_line(item, what)
        parsed = getaddresses([text])
        if len(parsed) != 1 or not parsed[0][1]:
            raise BuiltinError(f"sendMail: {what} {text!r} is not one email address")
        name, email = parsed[0]
        try:
            email = check_email(email)
        except BuiltinError:
            raise BuiltinError(f"sendMail: {what} {text!r} is not a valid address") from None
        local, _, domain = email.rpartition("@")
        found.append(Address(display_name=name, username=local, domain=domain))
    return found


def _attachment(item: Any, read_file: ReadFile | None) -> tuple[bytes, str, str]:
    if not isinstance(item, Mapping):
        raise BuiltinError("sendMail: each attachment must be a dict")
    if "path" in item:
        if read_file is None:
            raise BuiltinError("sendMail: this fn has no file storage for attachment paths")
        path = _one_line(item["path"], "attachment path")
        data, stored_type = read_file(path)
        filename = item.get("filename") or path.rsplit("/", 1)[-1]
        content_type = item.get("contentType") or stored_type
    else:
        filename = item.get("filename")
        if not filename:
            raise BuiltinError("sendMail: an attachment needs a 'path' or a 'filename'")
        content = item.get("content")
        if isinstance(content, (bytes, bytearray)):
            data = bytes(content)
        elif isinstance(content, str) and item.get("encoding") == "base64":
            try:
                data = base64.b64decode(content, validate=True)
            except (binascii.Error, ValueError):
                raise BuiltinError(f"sendMail: attachment {filename!r} is not base64") from None
        elif isinstance(content, str):
            data = content.encode()
        else:
            raise BuiltinError(f"sendMail: attachment {filename!r} needs content (bytes or text)")
        content_type = item.get("contentType") or (
            mimetypes.guess_type(filename)[0] or "application/octet-stream"
        )
    filename = _one_line(filename, "attachment filename")
    content_type = _one_line(content_type, "attachment contentType")
    if content_type.count("/") != 1:
        raise BuiltinError(f"sendMail: {content_type!r} is not a content type like text/plain")
    return data, filename, content_type


def build_message(
    param: Any, default_sender: str | None, read_file: ReadFile | None = None
) -> tuple[EmailMessage, list[str]]:
    """The message to send and every recipient's address (bcc included)."""
    if not isinstance(param, Mapping):
        raise BuiltinError(f"sendMail takes a dict of parameters, not {type(param).__name__}")
    to = _addresses(param.get("to"), "to")
    cc = _addresses(param.get("cc"), "cc")
    bcc = _addresses(param.get("bcc"), "bcc")
    if not to and not cc and not bcc:
        raise BuiltinError("sendMail: give at least one recipient in 'to', 'cc' or 'bcc'")
    senders = _addresses(param.get("from") or default_sender, "from")
    if len(senders) != 1:
        raise BuiltinError("sendMail: give 'from' or set the smtp_from setting")
    subject = _one_line(param.get("subject", ""), "subject")
    text, html = param.get("text"), param.get("html")
    for name, body in (("text", text), ("html", html)):
        if body is not None and not isinstance(body, str):
            raise BuiltinError(f"sendMail: {name} must be text")
    attachments = param.get("attachments") or []
    if not isinstance(attachments, list):
        raise BuiltinError("sendMail: attachments must be a list")
    if text is None and html is None and not attachments:
        raise BuiltinError("sendMail: give 'text', 'html' or attachments")

    message = EmailMessage()
    message["From"] = senders[0]
    if to:
        message["To"] = to
    if cc:
        message["Cc"] = cc
    reply_to = _addresses(param.get("replyTo"), "replyTo")
    if reply_to:
        message["Reply-To"] = reply_to
    message["Subject"] = subject
    message["Message-ID"] = make_msgid(domain=senders[0].domain)
    if text is not None:
        message.set_content(text)
    if html is not None:
        if text is None:
            message.set_content(html, subtype="html")
        else:
            message.add_alternative(html, subtype="html")
    total = 0
    for item in attachments:
        data, filename, content_type = _attachment(item, read_file)
        total += len(data)
        if total > MAX_ATTACHMENT_BYTES:
            raise BuiltinError(f"sendMail: attachments exceed {MAX_ATTACHMENT_BYTES} bytes")
        maintype, subtype = content_type.split("/")
        # Bytes go base64-encoded, unchanged; text is labelled UTF-8 so readers decode it.
        params = {"charset": "utf-8"} if maintype == "text" else None
        message.add_attachment(
            data, maintype=maintype, subtype=subtype, filename=filename, params=params
        )
    recipients = list(dict.fromkeys(a.addr_spec for a in (*to, *cc, *bcc)))
    return message, recipients


def send_mail(param: Any, config: SmtpConfig, read_file: ReadFile | None = None) -> dict[str, Any]:
    """Send one mail; returns ``{"messageId", "from", "recipients", "refused"}``.

    ``refused`` maps addresses the server turned down to its answer; if it turns down
    all of them, or the server cannot be reached, BuiltinError is raised.
    """
    host = config.host
    if not config.configured or host is None:
        raise BuiltinError("sendMail: no SMTP server configured (set the smtp_host setting)")
    message, recipients = build_message(param, config.sender, read_file)
    sender = message["From"].addresses[0].addr_spec
    context = ssl.create_default_context()
    where = f"{config.host}:{config.effective_port}"
    try:
        smtp: smtplib.SMTP
        if config.ssl:
            smtp = smtplib.SMTP_SSL(host, config.effective_port, timeout=_TIMEOUT, context=context)
        else:
            smtp = smtplib.SMTP(host, config.effective_port, timeout=_TIMEOUT)
        with smtp:
            if config.starttls and not config.ssl:
                smtp.starttls(context=context)
            if config.user:
                smtp.login(config.user, config.password or "")
            refused = smtp.send_message(message, from_addr=sender, to_addrs=recipients)
    except smtplib.SMTPRecipientsRefused as exc:
        raise BuiltinError(f"sendMail: {where} refused every recipient") from exc
    except smtplib.SMTPAuthenticationError as exc:
        raise BuiltinError(f"sendMail: {where} refused the login of {config.user!r}") from exc
    except (smtplib.SMTPException, OSError) as exc:
        raise BuiltinError(f"sendMail: cannot send through {where}: {exc}") from exc
    return {
        "messageId": message["Message-ID"],
        "from": sender,
        "recipients": [r for r in recipients if r not in refused],
        "refused": {
            addr: f"{code} {reply.decode(errors='replace')}"
            for addr, (code, reply) in refused.items()
        },
    }
