"""``fn.sendMail`` against a real aiosmtpd server on loopback."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest
from support.smtp import PASSWORD, USER, SmtpServer, smtp_server  # noqa: F401  (fixture)

from notebook_kit.builtins.functions import Functions
from notebook_kit.errors import BuiltinError
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace


@pytest.fixture
def mailer(workspace: Workspace, smtp_server: SmtpServer) -> tuple[Functions, SmtpServer]:  # noqa: F811
    smtp_server.settings(workspace)
    return workspace.action_env()["fn"], smtp_server


def test_send_mail_delivers_headers_bodies_and_envelope(
    mailer: tuple[Functions, SmtpServer],
) -> None:
    fn, server = mailer
    result = fn.sendMail(
        {
            "to": ["Ann Lee <ann@x.org>", "bob@x.org"],
            "cc": "carl@x.org",
            "bcc": ["secret@x.org"],
            "subject": "Quarterly report \u2013 ready",
            "text": "Plain body",
            "html": "<p>HTML <b>body</b></p>",
        }
    )
    [mail] = server.received
    message = mail.message
    assert mail.mail_from == "kit@example.org"
    assert sorted(mail.rcpt_tos) == ["ann@x.org", "bob@x.org", "carl@x.org", "secret@x.org"]
    assert message["To"] == "Ann Lee <ann@x.org>, bob@x.org"
    assert message["Cc"] == "carl@x.org"
    assert message["Subject"] == "Quarterly report \u2013 ready"
    assert message["From"] == "Notebook Kit <kit@example.org>"
    assert "secret@x.org" not in message.as_string()
    assert message.get_content_type() == "multipart/alternative"
    assert message.get_body(("plain",)).get_content().strip() == "Plain body"
    assert message.get_body(("html",)).get_content().strip() == "<p>HTML <b>body</b></p>"
    assert result["messageId"] == message["Message-ID"]
    assert sorted(result["recipients"]) == sorted(mail.rcpt_tos) and result["refused"] == {}


def test_send_mail_attaches_bytes_text_base64_and_stored_files(
    mailer: tuple[Functions, SmtpServer],
) -> None:
    fn, server = mailer
    pdf = b"%PDF-1.4 binary \x00\xff"
    fn.putFile("reports/q1.csv", {"content": "a,b\n1,2\n", "contentType": "text/csv"})
    fn.sendMail(
        {
            "to": "ann@x.org",
            "subject": "files",
            "text": "see attached",
            "attachments": [
                {"filename": "doc.pdf", "content": pdf},
                {"filename": "note.txt", "content": "héllo", "contentType": "text/plain"},
                {
                    "filename": "b.bin",
                    "content": base64.b64encode(b"\x01\x02").decode(),
                    "encoding": "base64",
                },
                {"path": "reports/q1.csv"},
            ],
        }
    )
    parts = {p.get_filename(): p for p in server.received[0].message.iter_attachments()}
    assert parts["doc.pdf"].get_content_type() == "application/pdf"
    assert parts["doc.pdf"].get_content() == pdf
    assert parts["note.txt"].get_content() == "héllo"
    assert parts["b.bin"].get_content() == b"\x01\x02"
    assert parts["q1.csv"].get_content_type() == "text/csv"
    assert parts["q1.csv"].get_content() == "a,b\n1,2\n"


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ({"to": "ann@x.org\r\nBcc: evil@x.org", "text": "x"}, "CR or LF"),
        ({"to": "ann@x.org", "subject": "hi\nBcc: evil@x.org", "text": "x"}, "CR or LF"),
        ({"to": "ann@x.org", "from": "me@x.org\rX: y", "text": "x"}, "CR or LF"),
        (
            {
                "to": "ann@x.org",
                "text": "x",
                "attachments": [{"filename": "a\n.txt", "content": "x"}],
            },
            "CR or LF",
        ),
        ({"to": "not an address", "text": "x"}, "not"),
        ({"to": [], "text": "x"}, "at least one recipient"),
        ({"to": "ann@x.org"}, "text"),
        ({"to": "ann@x.org", "text": 5}, "text must be text"),
        ({"to": "ann@x.org", "text": "x", "attachments": [{"content": "x"}]}, "filename"),
        ({"to": "ann@x.org", "text": "x", "attachments": [{"path": "missing.txt"}]}, "missing"),
        (
            {
                "to": "ann@x.org",
                "text": "x",
                "attachments": [{"filename": "a", "content": "!!", "encoding": "base64"}],
            },
            "base64",
        ),
        ("ann@x.org", "dict"),
    ],
)
def test_send_mail_refuses_bad_input_and_sends_nothing(
    mailer: tuple[Functions, SmtpServer], param: Any, message: str
) -> None:
    fn, server = mailer
    with pytest.raises(BuiltinError, match=message):
        fn.sendMail(param)
    assert server.received == []


def test_send_mail_logs_in_when_user_is_set(
    workspace: Workspace,
    smtp_server: SmtpServer,  # noqa: F811
) -> None:
    smtp_server.settings(workspace, smtp_user=USER, smtp_password=PASSWORD)
    workspace.action_env()["fn"].sendMail({"to": "ann@x.org", "text": "x"})
    assert smtp_server.logins == [USER] and len(smtp_server.received) == 1


def test_send_mail_with_wrong_password_raises(
    workspace: Workspace,
    smtp_server: SmtpServer,  # noqa: F811
) -> None:
    smtp_server.settings(workspace, smtp_user=USER, smtp_password="wrong")
    with pytest.raises(BuiltinError, match="refused the login"):
        workspace.action_env()["fn"].sendMail({"to": "ann@x.org", "text": "x"})
    assert smtp_server.received == []


def test_send_mail_without_smtp_settings_or_server_raises(workspace: Workspace) -> None:
    fn = workspace.action_env()["fn"]
    with pytest.raises(BuiltinError, match="no SMTP server configured"):
        fn.sendMail({"to": "ann@x.org", "text": "x"})
    workspace.set_setting("smtp_host", "127.0.0.1")
    workspace.set_setting("smtp_port", "1")
    workspace.set_setting("smtp_from", "kit@example.org")
    with pytest.raises(BuiltinError, match=r"cannot send through 127\.0\.0\.1:1"):
        fn.sendMail({"to": "ann@x.org", "text": "x"})


def test_deployed_action_sends_mail_over_http(
    workspace: Workspace,
    smtp_server: SmtpServer,  # noqa: F811
) -> None:
    smtp_server.settings(workspace)
    workspace.create(
        "notify",
        "send",
        label="send",
        method="POST",
        resource="mail",
        requires_auth=False,
        action="res.body = fn.sendMail({'to': req.body, 'subject': 'Hi', 'text': 'Hello'})",
    )
    workspace.deploy("notify", "dev")
    with BackgroundServer(workspace) as server:
        ok = httpx.post(server.url + "/dev/notify/mail", content="ann@x.org", timeout=10)
        bad = httpx.post(server.url + "/dev/notify/mail", content="x@y.org\r\nBcc: e@v.il")
    assert ok.status_code == 200 and ok.json()["recipients"] == ["ann@x.org"]
    assert bad.status_code == 500 and "CR or LF" in bad.json()["error"]
    assert [m.rcpt_tos for m in smtp_server.received] == [["ann@x.org"]]
