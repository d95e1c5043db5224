"""The one adapter over Sanic's private response shape, and its tested fallback."""

from __future__ import annotations

from multidict import CIMultiDict
from sanic.response import HTTPResponse
from sanic.response.types import BaseHTTPResponse

from notebook_kit.runtime.responses import (
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


def _wire(answer: HTTPResponse) -> list[tuple[bytes, bytes]]:
    return list(answer.processed_headers)


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
    assert _wire(answer) == [(b"x-a", b"bc")] or _wire(answer) == [(b"X-A", b"bc")]


def test_untyped_answer_sends_no_content_type() -> None:
    for untyped in (UntypedActionAnswer, answer_classes(set())[1]):
        answer = untyped(b"x", 200, CIMultiDict({"X-A": "1"}), None)
        assert all(name.lower() != b"content-type" for name, _ in _wire(answer))
