"""Ready-made ``curl`` lines: the Deploy tab's per-definition line and the Test tab's copy of
one call (its method, URL, headers and body), the API key masked unless revealed."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from urllib.parse import quote

from ...domain.models import Definition
from .server_panel import mask_key

__all__ = ["curl_line", "fill_resource", "request_curl"]


def fill_resource(definition: Definition, values: Mapping[str, str]) -> str:
    """The resource with the path parameters given filled in (the others left as {name})."""
    return "/".join(
        quote(values[s[1:-1]], safe="") if s.startswith("{") and values.get(s[1:-1]) else s
        for s in definition.segments
    )


def curl_line(definition: Definition, url: str, key: str | None, reveal: bool = False) -> str:
    """A shell command calling ``url`` as ``definition`` expects (key header when needed;
    the key masked unless ``reveal``)."""
    parts = ["curl"]
    if "{" in url:
        parts.append("--globoff")  # an unfilled {param} is not a curl glob
    if definition.method != "GET":
        parts += ["-X", definition.method]
    parts.append(url)
    if definition.requires_auth and key:
        parts += ["-H", f"x-api-key: {key if reveal else mask_key(key)}"]
    if definition.method in ("POST", "PUT"):
        parts += ["-H", "Content-Type: application/json", "-d", "{}"]
    return " ".join(shlex.quote(p) for p in parts)


def request_curl(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: str,
    key: str | None,
    reveal: bool = False,
) -> str:
    """The curl command of one call: ``key`` (or an ``x-api-key`` in ``headers``) is shown
    only if ``reveal`` (masked, the line is for reading; revealed, it runs as is)."""
    given = [value for name, value in headers.items() if name.lower() == "x-api-key"]
    key = given[-1] if given else key  # a key typed in the headers is the one sent
    parts = ["curl"]
    if "{" in url or "[" in url:
        parts.append("--globoff")
    if method != "GET":
        parts += ["-X", method]
    parts.append(url)
    if key:
        parts += ["-H", f"x-api-key: {key if reveal else mask_key(key)}"]
    for name, value in headers.items():
        if name.lower() != "x-api-key":
            parts += ["-H", f"{name}: {value}"]
    if body:
        parts += ["--data-raw", body]
    return " ".join(shlex.quote(p) for p in parts)
