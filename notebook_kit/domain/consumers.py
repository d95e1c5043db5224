"""Consumers: named callers with their own keys, the applications and stages they may call,
a rate limit and a quota (docs/consumers.md).

The rules here are pure: names, limits as people write them (``100/s``, ``5000/day``),
expiry (``30d``, ``2027-01-31``), keys (made, shown once, kept as SHA-256 digests), the
UTC calendar of quota periods, the rate limit's ticks, and the IETF ``RateLimit-Policy`` /
``RateLimit`` header values.

How a rate limit of N per period P is kept exact across nodes: time is cut into ticks of
P/10; a call may be admitted in tick i only while the calls admitted in ticks i-10..i (a
span longer than P) are fewer than N, and those of tick i fewer than the burst. Any window
of length P lies inside eleven consecutive ticks, so no window ever holds more than N.
"""

from __future__ import annotations

import calendar
import hashlib
import math
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ..errors import ValidationError
from .models import Stage

__all__ = [
    "KEY_PREFIX_LENGTH",
    "STAGE_CONSUMER",
    "TICKS_PER_WINDOW",
    "Consumer",
    "ConsumerKey",
    "Quota",
    "Rate",
    "check_consumer_name",
    "key_digest",
    "new_consumer_key",
    "parse_expiry",
    "parse_quota",
    "parse_rate",
    "period_bounds",
    "stage_consumer",
]

TICKS_PER_WINDOW = 10
KEY_PREFIX_LENGTH = 8  # "nk_" and five characters: what lists show of a key
STAGE_CONSUMER = "stage:"  # the built-in consumer of a stage: "stage:dev", "stage:prod"

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_RATE = re.compile(r"\s*(\d+)\s*/\s*(s|sec|second|min|minute)\s*")
_QUOTA = re.compile(r"\s*(\d+)\s*/\s*(day|week|month)\s*")
_DURATION = re.compile(r"\s*(\d+)\s*(s|m|h|d|w)\s*")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_MAX_COUNT = 10**12


def stage_consumer(stage: Stage | str) -> str:
    """The name the request log and usage give the calls made with a stage's own key."""
    return f"{STAGE_CONSUMER}{stage}"


def check_consumer_name(name: str) -> str:
    """``name`` if it may name a consumer (letters, digits, ``_ . -``; up to 64)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValidationError(
            f"consumer name {name!r} is not valid: use up to 64 letters, digits, '_', '.' "
            "or '-', starting with a letter or digit"
        )
    return name


def _count(text: str, what: str) -> int:
    n = int(text)
    if not 1 <= n <= _MAX_COUNT:
        raise ValidationError(f"{what} must be between 1 and {_MAX_COUNT}")
    return n


@dataclass(frozen=True, slots=True)
class Rate:
    """At most ``count`` calls in any window of ``seconds`` (1 or 60), at most ``burst``
    of them in one tenth of it."""

    count: int
    seconds: int
    burst: int

    @property
    def tick_seconds(self) -> float:
        return self.seconds / TICKS_PER_WINDOW

    def text(self) -> str:
        return f"{self.count}/{'s' if self.seconds == 1 else 'min'}"

    def policy(self) -> str:
        return f'"rate";q={self.count};w={self.seconds}'


@dataclass(frozen=True, slots=True)
class Quota:
    """At most ``count`` calls in each UTC ``period`` (day, week from Monday, month)."""

    count: int
    period: str

    def text(self) -> str:
        return f"{self.count}/{self.period}"

    def key(self, at: float) -> str:
        """The period ``at`` (epoch seconds) falls in, as stored: 2026-11-27, 2026-W48,
        2026-11."""
        day = datetime.fromtimestamp(math.floor(at), UTC)  # floor: never rounded up to midnight
        if self.period == "day":
            return day.strftime("%Y-%m-%d")
        if self.period == "week":
            year, week, _ = day.isocalendar()
            return f"{year}-W{week:02d}"
        return day.strftime("%Y-%m")

    def policy(self, at: float) -> str:
        start, end = period_bounds(self.period, at)
        return f'"quota";q={self.count};w={int(end - start)}'


def period_bounds(period: str, at: float) -> tuple[float, float]:
    """The start and end (epoch seconds) of the UTC ``period`` that holds ``at``."""
    day = datetime.fromtimestamp(math.floor(at), UTC).replace(hour=0, minute=0, second=0)
    if period == "day":
        start = day
        end = start + timedelta(days=1)
    elif period == "week":
        start = day - timedelta(days=day.weekday())
        end = start + timedelta(days=7)
    else:
        start = day.replace(day=1)
        end = start + timedelta(days=calendar.monthrange(start.year, start.month)[1])
    return start.timestamp(), end.timestamp()


def parse_rate(text: str | None, burst: int | str | None = None) -> Rate | None:
    """``"100/s"`` or ``"600/min"`` (None: no rate limit). The burst (a number, or its
    text as typed: blank means none) defaults to the count and may not exceed it (the
    window already caps a second at the count)."""
    if isinstance(burst, str):
        burst = burst.strip() or None
    if text is None or text == "":
        if burst is not None:
            raise ValidationError("a burst needs a rate (--rate N/s or N/min)")
        return None
    found = _RATE.fullmatch(str(text))
    if found is None:
        raise ValidationError(f"rate {text!r} is not valid: write N/s or N/min (e.g. 100/s)")
    count = _count(found.group(1), "a rate's count")
    seconds = 1 if found.group(2).startswith("s") else 60
    if burst is None:
        burst = count
    elif isinstance(burst, str):
        try:
            burst = int(burst)
        except ValueError:
            raise ValidationError(
                f"burst {burst!r} is not valid: a whole number from 1 to {count}"
            ) from None
    if not isinstance(burst, int) or not 1 <= burst <= count:
        raise ValidationError(f"burst {burst!r} is not valid: a whole number from 1 to {count}")
    return Rate(count, seconds, burst)


def parse_quota(text: str | None) -> Quota | None:
    """``"5000/day"``, ``"/week"`` or ``"/month"`` (None: no quota)."""
    if text is None or text == "":
        return None
    found = _QUOTA.fullmatch(str(text))
    if found is None:
        raise ValidationError(
            f"quota {text!r} is not valid: write N/day, N/week or N/month (e.g. 1000/day)"
        )
    return Quota(_count(found.group(1), "a quota's count"), found.group(2))


def parse_expiry(text: str | None, at: float) -> float | None:
    """When a key made at ``at`` expires (epoch seconds): a duration (``90d``, ``12h``,
    ``2w``, ``30m``, ``45s``) or a UTC date or time (``2027-01-31``,
    ``2027-01-31T12:00:00Z``); None: never. A moment already past is refused."""
    if text is None or text == "":
        return None
    found = _DURATION.fullmatch(str(text))
    if found is not None:
        amount = int(found.group(1))
        if amount <= 0:
            raise ValidationError(f"expiry {text!r} is not valid: the duration must be positive")
        return at + amount * _UNIT_SECONDS[found.group(2)]
    try:
        moment = datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(
            f"expiry {text!r} is not valid: write a duration (90d, 12h, 2w) or a UTC date "
            "(2027-01-31)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    when = moment.timestamp()
    if when <= at:
        raise ValidationError(f"expiry {text!r} is in the past")
    return when


def new_consumer_key() -> str:
    """A new key: ``nk_`` and 40 URL-safe characters (240 random bits)."""
    return "nk_" + secrets.token_urlsafe(30)


def key_digest(key: str) -> str:
    """What is stored of a key: its SHA-256 (hex). A key has 240 random bits, so a fast
    hash is as safe as a slow one (nothing to guess from a digest)."""
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass(frozen=True, slots=True)
class ConsumerKey:
    """One key as stored and listed: never the key itself."""

    prefix: str
    created_at: str
    expires_at: float | None = None
    last_used_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        expires = (
            None
            if self.expires_at is None
            else datetime.fromtimestamp(self.expires_at, UTC)
            .isoformat(timespec="seconds")
            .replace("+00:00", "Z")
        )
        return {
            "prefix": self.prefix,
            "created_at": self.created_at,
            "expires_at": expires,
            "last_used_at": self.last_used_at,
        }

    def is_expired(self, at: float) -> bool:
        return self.expires_at is not None and self.expires_at <= at


@dataclass(frozen=True, slots=True)
class Consumer:
    """A named caller: the applications (empty: all) and stages (empty: both) it may
    call, its limits, its keys (``builtin``: a stage's own key, see ``stage_consumer``)."""

    name: str
    apps: tuple[str, ...] = ()
    stages: tuple[str, ...] = ()
    rate: Rate | None = None
    quota: Quota | None = None
    keys: tuple[ConsumerKey, ...] = field(default=())
    created_at: str = ""
    builtin: bool = False

    def may_call(self, app: str, stage: str) -> bool:
        return (not self.apps or app in self.apps) and (not self.stages or stage in self.stages)

    @property
    def limited(self) -> bool:
        return self.rate is not None or self.quota is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "apps": list(self.apps),
            "stages": list(self.stages),
            "rate": None if self.rate is None else self.rate.text(),
            "burst": None if self.rate is None else self.rate.burst,
            "quota": None if self.quota is None else self.quota.text(),
            "keys": [k.to_dict() for k in self.keys],
            "created_at": self.created_at,
            "builtin": self.builtin,
        }


def check_scope(apps: list[str] | tuple[str, ...], stages: list[str] | tuple[str, ...]) -> None:
    """The stages are stage names (the applications are checked against the store)."""
    for stage in stages:
        Stage.parse(stage)
    if len(set(apps)) != len(apps) or len(set(stages)) != len(stages):
        raise ValidationError("an application or stage is named twice")
