"""Presigned links: signing, tampering with each part, expiry, the base URL rule, the secret."""

from __future__ import annotations

import contextvars
from types import SimpleNamespace
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from notebook_kit.builtins import presign
from notebook_kit.errors import ValidationError
from notebook_kit.workspace.workspace import Workspace

SECRET = b"k" * 32
NOW = 1_700_000_000


def _parts(url: str) -> tuple[str, str, str]:
    split = urlsplit(url)
    query = parse_qs(split.query)
    path = unquote(split.path.removeprefix(presign.PREFIX))
    return path, query["expires"][0], query["signature"][0]


def _link(method: str = "GET", path: str = "docs/a b.txt", expires_in: int = 60) -> str:
    return presign.presigned_url("http://h:1", SECRET, method, path, expires_in, now=NOW)


def test_presigned_url_shape_and_valid_signature() -> None:
    url = _link()
    assert url.startswith("http://h:1/_files/docs/a%20b.txt?expires=1700000060&signature=")
    path, expires, signature = _parts(url)
    assert presign.check_signature(SECRET, "GET", path, expires, signature, now=NOW) is None


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("method", "PUT", "signature"),
        ("path", "docs/other.txt", "signature"),
        ("expires", "1700009999", "signature"),
        ("signature", "0" * 64, "signature"),
        ("signature", "", "incomplete"),
        ("expires", "", "incomplete"),
        ("expires", "12x", "incomplete"),
        ("expires", "\u00b2", "incomplete"),
        ("secret", b"other", "signature"),
    ],
)
def test_check_signature_refuses_tampered_links(field: str, value: object, reason: str) -> None:
    path, expires, signature = _parts(_link())
    given: dict[str, object] = {
        "secret": SECRET,
        "method": "GET",
        "path": path,
        "expires": expires,
        "signature": signature,
    }
    given[field] = value
    outcome = presign.check_signature(**given, now=NOW)  # type: ignore[arg-type]
    assert outcome is not None and reason in outcome


@pytest.mark.parametrize(("offset", "valid"), [(59, True), (60, True), (61, False)])
def test_check_signature_expiry(offset: int, valid: bool) -> None:
    path, expires, signature = _parts(_link(expires_in=60))
    outcome = presign.check_signature(SECRET, "GET", path, expires, signature, now=NOW + offset)
    assert (outcome is None) is valid
    if not valid:
        assert outcome == "the link has expired"


def test_presigned_url_refuses_other_methods() -> None:
    with pytest.raises(ValidationError, match="GET or PUT"):
        _link(method="DELETE")


def test_base_url_prefers_setting_then_request() -> None:
    def in_a_request() -> None:  # a context of its own, as each runtime request has
        assert presign.base_url("https://api.example.com/") == "https://api.example.com"
        presign.set_current_request(SimpleNamespace(scheme="http", host="127.0.0.1:8123"))
        assert presign.base_url(None) == "http://127.0.0.1:8123"
        assert presign.base_url("https://public") == "https://public"

    contextvars.Context().run(in_a_request)


def test_base_url_without_request_or_setting_is_refused() -> None:
    def fresh() -> str:
        return presign.base_url(None)

    with pytest.raises(ValidationError, match="public_base_url"):
        contextvars.Context().run(fresh)


def test_workspace_secret_is_generated_once_and_kept(workspace: Workspace) -> None:
    first = presign.workspace_secret(workspace.store, None)
    assert len(first) == 64
    assert presign.workspace_secret(workspace.store, None) == first
    assert Workspace(workspace.home).store.stored_settings()["presign_secret"] == first.decode()
    assert presign.workspace_secret(workspace.store, "from-env") == b"from-env"
