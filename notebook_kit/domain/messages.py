"""``req`` and ``res``: the request and the response an action sees, and ``res`` as HTTP parts.

The names follow the spec's contract (``httpMethod``, ``pathParameters``, ``statusCode``),
which users write their actions against. Rendering runs on every request, so the JSON
encoder is built once per thread rather than once per call.
"""

from __future__ import annotations

import json
import math
from datetime import date, datetime
from decimal import Decimal
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any
from urllib.parse import parse_qsl

from multidict import CIMultiDict

__all__ = ["ActionRequest", "ActionResponse", "render_response"]


class ActionRequest:
    """``req``: the request as the action sees it (names follow the spec's contract)."""

    __slots__ = (
        "_body",
        "_query",
        "_raw_body",
        "_raw_query",
        "headers",
        "httpMethod",
        "path",
        "pathParameters",
        "stage",
    )

    def __init__(
        self,
        httpMethod: str,
        path: str,
        stage: str,
        headers: Any,
        pathParameters: dict[str, str],
        query_string: str = "",
        body: bytes | str = b"",
    ) -> None:
        self.httpMethod = httpMethod
        self.path = path
        self.stage = stage
        self.headers = headers
        self.pathParameters = pathParameters
        self._raw_query = query_string
        self._raw_body = body
        self._query: dict[str, str] | None = None
        self._body: str | None = None

    @property
    def query_string(self) -> str:
        """The query string as it came (``a=1&b=2``)."""
        return self._raw_query

    @property
    def raw_body(self) -> bytes:
        """The body's bytes as they came."""
        raw = self._raw_body
        return raw.encode() if isinstance(raw, str) else raw

    @property
    def queryStringParameters(self) -> dict[str, str]:
        """The query string as a dict of str; a repeated name keeps its last value."""
        if self._query is None:
            self._query = dict(parse_qsl(self._raw_query, keep_blank_values=True))
        return self._query

    @property
    def body(self) -> str:
        """The raw request body decoded as UTF-8 (undecodable bytes become U+FFFD)."""
        if self._body is None:
            raw = self._raw_body
            self._body = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
        return self._body

    def __repr__(self) -> str:
        return f"<req {self.httpMethod} {self.path} pathParameters={self.pathParameters}>"


class ActionResponse:
    """``res``: what the action sets. ``headers`` is case-insensitive."""

    __slots__ = ("body", "headers", "statusCode")

    def __init__(self, content_type: str | None = None) -> None:
        self.statusCode: int = 200
        self.headers: CIMultiDict[str] = CIMultiDict()
        if content_type:
            self.headers["Content-Type"] = content_type
        self.body: Any = None

    def __repr__(self) -> str:
        return f"<res statusCode={self.statusCode} headers={dict(self.headers)}>"


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError("Out of range Decimal values are not JSON compliant")
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    raise TypeError(f"res.body holds a {type(value).__name__}, which JSON cannot carry")


# One encoder for every response: json.dumps with ``default=`` would build a new one per call.
# NaN and Infinity are refused (``allow_nan=False``): ``NaN`` is not JSON, and a JSON
# parser (``JSON.parse``) rejects the whole answer. The check is one C comparison per float.
_JSON = json.JSONEncoder(default=_json_default, allow_nan=False)
# Its C encoder, made once. ``JSONEncoder.encode`` builds one on every call: about half the
# cost of a small answer. Without the circular-reference check (``check_circular=False``:
# a dict of the containers being encoded, two updates each, 0.1 µs a row), so it holds no
# state and serves every thread; a body that holds itself fails with ``RecursionError``
# instead of ``ValueError``, a 500 either way.
_ENCODE = (
    None
    if c_make_encoder is None  # a Python without the C accelerator
    else c_make_encoder(
        None,  # no markers: no circular-reference check
        _json_default,
        encode_basestring_ascii,
        None,
        _JSON.key_separator,
        _JSON.item_separator,
        False,  # sort_keys
        False,  # skipkeys
        False,  # allow_nan
    )
)


def _json_bytes(body: Any) -> bytes:
    """``body`` as ``_JSON`` encodes it (the standard separators), through ``_ENCODE``.
    A NaN or an Infinity in it is a ``ValueError`` naming where, as a JSON pointer."""
    try:
        if _ENCODE is None:
            return _JSON.encode(body).encode()
        return "".join(_ENCODE(body, 0)).encode()
    except ValueError:
        found = _not_finite(body, "")
        if found is None:
            raise
        pointer, value = found
        raise ValueError(
            f"res.body at {pointer} is {_number_name(value)}, which is not JSON "
            "(JSON has no NaN or Infinity)"
        ) from None


def _not_finite(value: Any, pointer: str) -> tuple[str, Any] | None:
    """The JSON pointer (RFC 6901) and value of the first NaN or Infinity in ``value``,
    in the encoder's order; None if there is none. Walked only once encoding failed."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (pointer, value)
    if isinstance(value, Decimal):
        return None if value.is_finite() else (pointer, value)
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        here = f"{pointer}/{_key_text(key).replace('~', '~0').replace('/', '~1')}"
        if isinstance(key, float) and not math.isfinite(key):
            return here, key  # a key of NaN is refused too
        found = _not_finite(item, here)
        if found is not None:
            return found
    return None


def _key_text(key: Any) -> str:
    """A dict key or list index as the JSON document names it."""
    if key is True or key is False or key is None:
        return json.dumps(key)
    return key if isinstance(key, str) else str(key)


def _number_name(value: float | Decimal) -> str:
    if value.is_nan() if isinstance(value, Decimal) else math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def render_response(res: ActionResponse) -> tuple[int, CIMultiDict[Any], bytes, str | None]:
    """``res`` as wire parts: status, headers (without Content-Type), body, content type.

    str is sent as UTF-8, bytes as they are, dict and list as JSON (``application/json``
    unless the action chose a content type). Anything else is the action's mistake. This
    runs on every request, so the common cases are tested first and nothing is copied
    that need not be (``res`` is spent afterwards: its headers are handed over).
    """
    status = res.statusCode
    if status.__class__ is not int or not 100 <= status <= 599:  # bool is not int here
        raise TypeError(f"res.statusCode must be a whole number 100-599, not {status!r}")
    headers = res.headers
    if headers.__class__ is not CIMultiDict:  # the action assigned a mapping of its own
        try:
            headers = CIMultiDict(headers)
        except (TypeError, ValueError):
            raise TypeError(
                f"res.headers must be a mapping of names to values, not {type(headers).__name__}"
            ) from None
    chosen = headers.popall("Content-Type", None)
    content_type = None if chosen is None else str(chosen[-1])
    body = res.body
    kind = body.__class__
    if kind is dict:  # the usual answers first
        data = _json_bytes(body)
        content_type = content_type or "application/json"
    elif kind is str:
        data = body.encode()
    elif body is None:
        data = b""
    elif kind is bytes:
        data = body
    elif isinstance(body, (dict, list)):
        data = _json_bytes(body)
        content_type = content_type or "application/json"
    elif isinstance(body, str):
        data = body.encode()
    elif isinstance(body, (bytes, bytearray, memoryview)):
        data = bytes(body)
    else:
        raise TypeError(f"res.body must be str, bytes, dict or list, not {type(body).__name__}")
    return status, headers, data, content_type
