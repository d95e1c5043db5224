"""The CORS preflight a browser needs before calling a JSON API from another origin.

A browser sends ``OPTIONS`` first (without the key) before any call that is not a "simple
request": one carrying ``x-api-key``, or a body typed ``application/json``. The preflight's
answer must allow both headers, or the browser refuses the call before it leaves. The
sample's own preflights allow ``origin,x-api-key`` only (the product spec's value, kept to
the byte); the preflight made here for a definition allows ``content-type`` too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import ValidationError
from .models import Definition, param_name

__all__ = ["ALLOWED_HEADERS", "check_origin", "preflight_action", "preflight_for", "same_resource"]

ALLOWED_HEADERS = "content-type,x-api-key"
_MAX_AGE = 600  # seconds a browser may keep the answer before asking again
_ORIGIN = re.compile(r"\*|https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?")


def check_origin(origin: str) -> str:
    """``*`` or one origin (``https://example.org``, ``http://127.0.0.1:8888``)."""
    origin = origin.strip().rstrip("/")
    if not _ORIGIN.fullmatch(origin):
        raise ValidationError(
            f"origin {origin!r} is not '*' nor one origin like 'https://example.org'",
            field="origin",
        )
    return origin


def _shape(definition: Definition) -> tuple[str, ...]:
    return tuple("{}" if param_name(s) else s for s in definition.segments)


def same_resource(a: Definition, b: Definition) -> bool:
    """Whether two definitions answer on one resource (parameter names aside)."""
    return _shape(a) == _shape(b)


def preflight_action(methods: Iterable[str], origin: str = "*") -> str:
    """The action of a preflight allowing ``methods`` (OPTIONS added) from ``origin``."""
    origin = check_origin(origin)
    allowed = ", ".join(sorted({*methods, "OPTIONS"}))
    return (
        "# CORS preflight: a browser sends OPTIONS (without the key) before a call that is\n"
        '# not a "simple request": one with x-api-key or a JSON body (content-type).\n'
        "res.statusCode = 200\n"
        f"res.headers['Access-Control-Allow-Origin'] = {origin!r}\n"
        f"res.headers['Access-Control-Allow-Methods'] = {allowed!r}\n"
        f"res.headers['Access-Control-Allow-Headers'] = {ALLOWED_HEADERS!r}\n"
        f"res.headers['Access-Control-Max-Age'] = '{_MAX_AGE}'\n"
    )


def preflight_for(
    definition: Definition, siblings: Iterable[Definition], origin: str = "*"
) -> Definition:
    """The OPTIONS definition (no key) for ``definition``'s resource, allowing the methods
    of every definition of ``siblings`` on that resource. Its ID is the definition's with
    ``-preflight`` (shortened to fit), as the sample names its own."""
    methods = {d.method for d in siblings if same_resource(d, definition)} | {definition.method}
    return Definition(
        definition.app,
        f"{definition.id[: 64 - len('-preflight')]}-preflight",
        f"{definition.label}: CORS preflight",
        "OPTIONS",
        definition.resource,
        action=preflight_action(methods, origin),
        requires_auth=False,
    )
