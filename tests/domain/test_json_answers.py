"""An action's dict or list answer is the standard library's JSON, byte for byte."""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notebook_kit.domain.messages import ActionResponse, _json_bytes, _json_default, render_response

_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _standard(body: Any) -> bytes:
    return json.dumps(body, default=_json_default, allow_nan=False).encode()


@given(_JSON_VALUES)
def test_bytes_are_json_dumps_bytes(body: Any) -> None:
    try:
        expected = _standard(body)
    except ValueError:  # a NaN or an Infinity: not JSON
        with pytest.raises(ValueError, match="which is not JSON"):
            _json_bytes(body)
    else:
        assert _json_bytes(body) == expected


@pytest.mark.parametrize(
    "body",
    [
        {"id": "E003", "name": "Chloé Dubois", "age": 28},
        [{"price": Decimal("0.10")}, {"count": Decimal("3")}],
        {"when": datetime(2026, 11, 25, 12, 0), "day": date(2026, 11, 25)},
        {"big": 2**70, "tiny": 5e-324, 1: "int key", None: "null key"},
        [[[["deep"]]]],
    ],
)
def test_usual_and_odd_bodies(body: Any) -> None:
    assert _json_bytes(body) == _standard(body)


@pytest.mark.parametrize("make", [lambda: [], lambda: {}])
def test_a_body_that_holds_itself_fails(make: Any) -> None:
    body = make()
    if isinstance(body, list):
        body.append(body)
    else:
        body["self"] = body
    res = ActionResponse("application/json")
    res.body = body
    with pytest.raises(RecursionError):  # the runtime answers it with a 500
        render_response(res)
    res.body = {"fine": [1, 2]}  # and the next answer is right
    assert render_response(res)[2] == b'{"fine": [1, 2]}'


def test_an_unknown_type_names_itself() -> None:
    with pytest.raises(TypeError, match=r"res\.body holds a set"):
        _json_bytes({"s": {1, 2}})


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"x": float("nan")}, "/x is NaN"),
        ({"a": [1, {"b/c~": float("inf")}]}, "/a/1/b~1c~0 is Infinity"),
        ([0.5, Decimal("-Infinity")], "/1 is -Infinity"),
        ({1: [2, float("-inf")], None: Decimal("NaN")}, "/1/1 is -Infinity"),
        ({None: Decimal("NaN")}, "/null is NaN"),
    ],
)
def test_nan_or_infinity_is_refused_naming_its_json_pointer(body: Any, where: str) -> None:
    """NaN is not JSON (``JSON.parse`` rejects it): the answer is a 500 whose error says
    where it is, never ``NaN`` on the wire."""
    res = ActionResponse()
    res.body = body
    with pytest.raises(ValueError) as raised:
        render_response(res)
    assert str(raised.value) == (
        f"res.body at {where}, which is not JSON (JSON has no NaN or Infinity)"
    )
