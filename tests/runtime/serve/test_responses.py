"""The one adapter over Sanic's private response shape, and its tested fallback."""

from __future__ import annotations

import pytest
from multidict import CIMultiDict
from sanic.headers import format_http1_response
from sanic.response import HTTPResponse
from sanic.response.types import BaseHTTPResponse

from notebook_kit.runtime.serve.responses import (
    RESPONSE_SLOTS,
    ActionAnswer,
    RuntimeAnswer,
    UntypedActionAnswer,
    answer_classes,
)


def test_sanic_response_has_the_shape_the_fast_answer_sets() -> None:
    # Fails when Sanic's response changes shape: the fast answer is then not used.
    assert set(BaseHTTPResponse.__slots__) == RESPONSE_SLOTS
    assert ActionAnswer is not HTTPResponse


def _wire(answer: HTTPResponse) -> bytes:
    """The status line and header block as Sanic writes them."""
    return format_http1_response(answer.status, answer.processed_headers)


def test_fast_answer_matches_sanic_own_constructor() -> None:
    headers = CIMultiDict({"X-One": "1", "Set-Thing": "a\r\nInjected: yes"})
    fast = ActionAnswer(b"{}", 201, CIMultiDict(headers), "application/json")
    own = HTTPResponse(b"{}", 201, CIMultiDict(headers), "application/json")
    assert (fast.status, fast.body, fast.content_type) == (own.status, own.body, own.content_type)
    assert _wire(fast) == _wire(own)


def test_other_shape_falls_back_to_sanic_constructor() -> None:
    typed, untyped = answer_classes(RESPONSE_SLOTS | {"a_new_slot"})
    assert typed is RuntimeAnswer  # Sanic's constructor; only the empty alt-svc dropped
    assert typed.__init__ is HTTPResponse.__init__
    answer = untyped(b"hi", 200, CIMultiDict({"X-A": "b\nc"}), None)
    assert answer.body == b"hi" and answer.status == 200
    assert _wire(answer) == b"HTTP/1.1 200 OK\r\nX-A: bc\r\n\r\n"


def test_untyped_answer_sends_no_content_type() -> None:
    for untyped in (UntypedActionAnswer, answer_classes(set())[1]):
        answer = untyped(b"x", 200, CIMultiDict({"X-A": "1"}), None)
        assert b"content-type" not in _wire(answer).lower()


_HEADER_CASES = [
    {"Access-Control-Allow-Origin": "*"},
    {},
    {"X-Set": "a\r\nInjected: yes"},  # CR/LF in a value: stripped, as Sanic does
    {"X-Bare": "a\rb\nc"},
    {"X-Nul": "a\x00b"},
    {"X-Name\r\nInjected": "1"},
    {"X-Utf8": "caf\u00e9"},  # non-ASCII value: UTF-8 (surrogateescape), as Sanic does
    {"X-Num": 5, "X-Colon": "a: b"},
    {"a: b": "c"},
    {"X-Many": "1", "x-many": "2"},
]


@pytest.mark.parametrize("status", [200, 201, 204, 304, 404, 500])
@pytest.mark.parametrize("headers", _HEADER_CASES)
@pytest.mark.parametrize("content_type", ["application/json", "text/plain; charset=utf-8"])
def test_header_block_is_byte_for_byte_sanics(
    status: int, headers: dict[str, object], content_type: str
) -> None:
    # The one-pair block of wire_headers writes exactly what Sanic's own formatting does.
    given = CIMultiDict(headers)
    given["content-length"] = "2"
    given["connection"] = "keep-alive"
    fast = ActionAnswer(b"{}", status, CIMultiDict(given), content_type)
    own = HTTPResponse(b"{}", status, CIMultiDict(given), content_type)
    assert _wire(fast) == _wire(own)
    runtime = RuntimeAnswer(b"{}", status, CIMultiDict(given), content_type)
    assert _wire(runtime) == _wire(own)


def test_non_ascii_header_name_is_refused_as_sanic_refuses_it() -> None:
    for answer_class in (ActionAnswer, HTTPResponse):
        answer = answer_class(b"", 200, CIMultiDict({"X-Caf\u00e9": "1"}), "text/plain")
        with pytest.raises(UnicodeEncodeError):
            _wire(answer)


def test_empty_alt_svc_is_dropped() -> None:
    # Sanic sets it on every HTTP/1 answer; without TouchUp it would go out empty.
    answer = ActionAnswer(b"", 200, CIMultiDict({"alt-svc": "", "X-A": "1"}), "text/plain")
    assert _wire(answer) == (b"HTTP/1.1 200 OK\r\nX-A: 1\r\ncontent-type: text/plain\r\n\r\n")
