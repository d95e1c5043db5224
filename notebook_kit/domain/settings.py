"""Workspace settings, declared once.

``SETTINGS`` is the single list of what can be configured. Each value is looked up in
this order: the environment variable ``NOTEBOOK_KIT_<NAME>`` (for deployment), then the
value stored in the workspace (``notebook-kit settings set``), then the default.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from .forwarded import proxies_setting

__all__ = [
    "SETTINGS",
    "Setting",
    "default_home",
    "env_name",
    "find_setting",
    "for_actions",
    "mask",
    "parse_value",
]

HOME_ENV = "NOTEBOOK_KIT_HOME"


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError("must be a positive whole number")
    return value


def _optional_positive_int(text: str) -> int | None:
    return None if text.strip().lower() in ("", "none", "unset") else _positive_int(text)


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError("must be a positive number")
    return value


def _optional_positive_float(text: str) -> float | None:
    return None if text.strip().lower() in ("", "none", "unset") else _positive_float(text)


def _text(text: str) -> str:
    return text


def _optional_text(text: str) -> str | None:
    return text.strip() or None


def _optional_port(text: str) -> int | None:
    if not text.strip():
        return None
    value = int(text)
    if not 1 <= value <= 65535:
        raise ValueError("must be a port number 1-65535")
    return value


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("must be true or false")


@dataclass(frozen=True)
class Setting:
    """One configurable value: its name, default, help line and how text becomes a value."""

    name: str
    default: Any
    help: str
    parse: Callable[[str], Any] = _text
    secret: bool = False


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "max_body_bytes",
        1_048_576,
        "Largest request body the runtime accepts (413 past it).",
        _positive_int,
    ),
    Setting(
        "resource_quota",
        None,
        "Most resources one stage may use; unset means no limit.",
        _optional_positive_int,
    ),
    Setting(
        "reload_interval",
        0.25,
        "Seconds between a server's checks for new deployments.",
        _positive_float,
    ),
    Setting(
        "rate_limit_dev",
        None,
        "Requests per second per API key (or caller IP) on dev, per worker; unset: no limit.",
        _optional_positive_float,
    ),
    Setting(
        "rate_limit_prod",
        None,
        "Requests per second per API key (or caller IP) on prod, per worker; unset: no limit.",
        _optional_positive_float,
    ),
    Setting(
        "rate_limit_burst",
        None,
        "Requests a caller may make at once under a rate limit; unset is twice the rate.",
        _optional_positive_int,
    ),
    Setting(
        "trusted_proxies",
        None,
        "Addresses or networks (CIDR, comma-separated) of the proxies in front of the "
        "server; behind them the caller's address is the rightmost X-Forwarded-For entry "
        "that is not one of them (keyless rate limits, canary shares). Unset: the "
        "connection's address, X-Forwarded-For ignored.",
        proxies_setting,
    ),
    Setting(
        "request_timeout",
        60.0,
        "Seconds a caller has to send a request's whole head, and then its whole body "
        "(408 past it), however slowly the bytes come.",
        _positive_float,
    ),
    Setting(
        "keep_alive_timeout",
        5.0,
        "Seconds an idle keep-alive connection stays open.",
        _positive_float,
    ),
    Setting(
        "send_timeout",
        60.0,
        "Seconds an answer waits for a caller that reads none of it; past it the "
        "connection is closed and the cut logged (a slow reader that keeps reading gets "
        "the whole answer, however long it takes).",
        _positive_float,
    ),
    Setting(
        "descriptor_reserve",
        256,
        "File descriptors each worker keeps free of client connections (past the rest, a "
        "new connection closes the slowest idle or unfinished one).",
        _positive_int,
    ),
    Setting("request_log_size", 10_000, "How many requests the request log keeps.", _positive_int),
    Setting(
        "metrics_max_series",
        1000,
        "Label sets the admin /metrics keeps per node for requests; calls past it are "
        "counted under the label value other.",
        _positive_int,
    ),
    Setting(
        "server_timing",
        False,
        "Add a Server-Timing header to every answer: routing, action and total, in ms.",
        _boolean,
    ),
    Setting(
        "tracing",
        False,
        "Export an OpenTelemetry span per call and per outbound http/db call over OTLP "
        "(the OTEL_* environment variables configure it; needs notebook-kit[tracing]).",
        _boolean,
    ),
    Setting(
        "record_requests_dev",
        False,
        "Keep each dev request's headers and body in the request log (for replay).",
        _boolean,
    ),
    Setting(
        "record_requests_prod",
        False,
        "Keep each prod request's headers and body in the request log (for replay).",
        _boolean,
    ),
    Setting(
        "record_max_bytes",
        16_384,
        "Most bytes of a recorded request's body kept in the request log.",
        _positive_int,
    ),
    Setting(
        "canary_min_calls",
        20,
        "Calls a canary must have answered before its 5xx share can roll it back.",
        _positive_int,
    ),
    Setting(
        "deployments_kept",
        50,
        "Deployments kept per application and stage (the live one always); older are pruned.",
        _positive_int,
    ),
    Setting(
        "action_timeout",
        29.0,
        "Seconds an action may run before its caller gets a 504 (a definition may set its own).",
        _positive_float,
    ),
    Setting(
        "max_concurrent_actions",
        64,
        "Calls one worker sends to action processes at once; past it a call waits up to "
        "1 s, then 503.",
        _positive_int,
    ),
    Setting(
        "action_memory_limit",
        1024,
        "MiB one action call may allocate in its process; past it the call ends with a 500 "
        "naming the limit.",
        _positive_int,
    ),
    # -- built-ins: mail, OAuth2, the environment database, outside HTTP calls --------
    Setting(
        "smtp_host", None, "SMTP server that fn.sendMail uses; unset disables mail.", _optional_text
    ),
    Setting(
        "smtp_port",
        None,
        "SMTP port; unset means 465 with smtp_ssl, 587 with smtp_starttls, else 25.",
        _optional_port,
    ),
    Setting("smtp_user", None, "SMTP login name; unset sends without logging in.", _optional_text),
    Setting("smtp_password", None, "SMTP login password.", _optional_text, secret=True),
    Setting("smtp_starttls", False, "Upgrade the SMTP connection with STARTTLS.", _boolean),
    Setting("smtp_ssl", False, "Connect to the SMTP server over TLS from the start.", _boolean),
    Setting("smtp_from", None, "Default sender address of fn.sendMail.", _optional_text),
    Setting(
        "oauth2_token_url",
        None,
        "OAuth2 token endpoint (client-credentials grant).",
        _optional_text,
    ),
    Setting("oauth2_revoke_url", None, "OAuth2 revocation endpoint (RFC 7009).", _optional_text),
    Setting("oauth2_client_id", None, "OAuth2 client ID.", _optional_text),
    Setting("oauth2_client_secret", None, "OAuth2 client secret.", _optional_text, secret=True),
    Setting(
        "oauth2_scope",
        None,
        "Space-separated scopes asked for; unset asks for none.",
        _optional_text,
    ),
    Setting(
        "database_url",
        None,
        "The actions' db: unset is environment/environment.sqlite3 in "
        "the workspace; else a SQLAlchemy URL (postgresql://...).",
        _optional_text,
        secret=True,
    ),
    Setting("http_timeout", 10.0, "Seconds an action's http call may take.", _positive_float),
    # -- built-ins: files, presigned links, artifacts ----------------------------------
    Setting(
        "files_root",
        None,
        "Folder of the actions' file storage; unset is <home>/files, relative is under home.",
        _optional_text,
    ),
    Setting(
        "max_file_bytes",
        16_777_216,
        "Largest file fn.putFile, a presigned upload or an artifact may write.",
        _positive_int,
    ),
    Setting(
        "public_base_url",
        None,
        "Base URL of presigned links; unset uses the scheme and Host of the request.",
        _optional_text,
    ),
    Setting(
        "presign_secret",
        None,
        "Key that signs presigned links; generated on first use. Changing it voids all links.",
        _optional_text,
        secret=True,
    ),
    Setting(
        "presign_max_expires",
        604_800,
        "Longest lifetime in seconds of a presigned link (longer asks are capped).",
        _positive_int,
    ),
)


# Secret settings that actions need all the same: they reach the action processes.
_FOR_ACTIONS = frozenset(("database_url",))


def for_actions(values: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a process that runs action code is handed: every one but the secrets
    (the SMTP password, the OAuth2 client secret, the presign key), which stay with the
    trusted side; ``database_url`` is the actions' own database and goes along."""
    secret = {s.name for s in SETTINGS if s.secret and s.name not in _FOR_ACTIONS}
    return {name: value for name, value in values.items() if name not in secret}


def find_setting(name: str) -> Setting:
    for setting in SETTINGS:
        if setting.name == name:
            return setting
    known = ", ".join(s.name for s in SETTINGS)
    raise ValidationError(f"unknown setting {name!r}; known settings: {known}", field="name")


def env_name(setting: Setting) -> str:
    return f"NOTEBOOK_KIT_{setting.name.upper()}"


def parse_value(setting: Setting, text: str) -> Any:
    """Turn ``text`` into the setting's value, or raise a ValidationError saying why not."""
    try:
        return setting.parse(text)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            f"setting {setting.name}: {text!r} is not valid ({exc})", field=setting.name
        ) from None


def resolve(
    setting: Setting, stored: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> Any:
    """The value in force: environment, then stored, then default."""
    environ = os.environ if environ is None else environ
    text = environ.get(env_name(setting))
    if text is None:
        text = stored.get(setting.name)
    return setting.default if text is None else parse_value(setting, text)


def default_home(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    return Path(environ.get(HOME_ENV) or Path.home() / ".notebook_kit").expanduser()


def mask(setting: Setting, value: Any) -> Any:
    """What a listing shows: secrets hidden, keeping the last 4 characters of long ones."""
    if not setting.secret or value is None:
        return value
    text = str(value)
    return "****" + text[-4:] if len(text) >= 16 else "********"
